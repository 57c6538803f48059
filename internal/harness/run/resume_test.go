package run

import (
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/replaycheck/replaycheck/internal/harness/history"
	"github.com/replaycheck/replaycheck/internal/harness/rules"
	"github.com/replaycheck/replaycheck/internal/harness/scenario"
	"github.com/replaycheck/replaycheck/internal/harness/target"
	"github.com/replaycheck/replaycheck/internal/runtoken"
)

// killAfterExecute kills the target once the ledger ran commit_write, and
// resumes it, times times.
func killAfterExecute(times string) string {
	return `
name: kill after execute
request: {endpoint: chat}
faults:
  target: [{kill: {after: execute, tool: commit_write}, times: ` + times + `}]
expect:
  writes: 1
  rules: [no-replay-after-dispatch, no-lost-call]
`
}

// TestResumeOnTheGateway kills the built-in gateway, run as a process of its
// own, once commit_write ran and resumes it from its checkpoint: guarded
// checkpointed the call before it sent it and does not send it again (one
// write across the lives); checkpoint-at-turn-end replays the turn's call on
// each resume. The killed processes are gone.
func TestResumeOnTheGateway(t *testing.T) {
	tests := []struct {
		name, target, times string
		writes, kills       int
		verdict             rules.Status
		replayedBy          bool
	}{
		{name: "guarded once", target: "builtin:guarded", times: "once", writes: 1, kills: 1, verdict: rules.Pass},
		{name: "guarded twice", target: "builtin:guarded", times: "2", writes: 1, kills: 1, verdict: rules.Pass},
		{name: "switch once", target: "builtin:checkpoint-at-turn-end", times: "once", writes: 2, kills: 1, verdict: rules.Fail, replayedBy: true},
		{name: "switch twice", target: "builtin:checkpoint-at-turn-end", times: "2", writes: 3, kills: 2, verdict: rules.Fail, replayedBy: true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			h := runSource(t, killAfterExecute(tt.times), tt.target, 1)[0]
			r := rules.Evaluate(h)
			if r.Counts.Writes != tt.writes || len(h.Kills()) != tt.kills || r.Verdict != tt.verdict {
				t.Fatalf("writes %d, kills %d, verdict %s; want %d, %d, %s\n%+v\n%+v", r.Counts.Writes, len(h.Kills()), r.Verdict, tt.writes, tt.kills, tt.verdict, r.Verdicts, h.TargetEvents)
			}
			var pids []int
			for _, e := range h.Kills() {
				if e.Point != history.KillAfterExecute || e.Tool != "commit_write" || e.Signal != history.SIGKILL || e.PID <= 0 {
					t.Errorf("kill event %+v; want after execute of commit_write, SIGKILL, a pid", e)
				}
				pids = append(pids, e.PID)
			}
			assertGone(t, pids)
			if h.Lives() != tt.kills+1 {
				t.Errorf("lives = %d, want %d", h.Lives(), tt.kills+1)
			}
			for _, v := range r.Verdicts {
				if v.Check == "no-replay-after-dispatch" && strings.Contains(v.Observed, "replayed by the resumed run") != tt.replayedBy {
					t.Errorf("no-replay-after-dispatch says %q; want it to name the resumed run: %v", v.Observed, tt.replayedBy)
				}
			}
		})
	}
}

// TestResumeLostCall kills a client while it reads the model's streamed
// answer asking for commit_write; its resume runs nothing and reports
// success (exit 0): a lost call, no-lost-call fails. A resume that reports
// failure told the user: no lost call. A target without resume skips the
// scenario.
func TestResumeLostCall(t *testing.T) {
	src, err := os.ReadFile(filepath.Join("testdata", "resume", "agent.py"))
	if err != nil {
		t.Fatal(err)
	}
	const scen = `
name: client killed in the stream
faults:
  target: [{kill: {after: stream}}]
expect:
  client: {}
  rules: [no-lost-call]
`
	ss, errs := scenario.Parse("scenario.yaml", []byte(scen))
	if len(errs) > 0 {
		t.Fatal(errs)
	}
	tests := []struct {
		name, resume string
		verdict      rules.Status
		observed     string
	}{
		{name: "resume drops the call and reports success", resume: "drop", verdict: rules.Fail, observed: "lost call: commit_write ×1 never ran while the resumed run (life 2) reported success"},
		{name: "resume reports the call failed", resume: "fail", verdict: rules.Pass, observed: "reported failure (exit 1)"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			tg, _ := writeTarget(t, `kind: client
command: [python3, agent.py]
resume: {command: [python3, agent.py, --resume], env: {RESUME: `+tt.resume+`}}
`, map[string]string{"agent.py": string(src)})
			hs, err := Run(ctxFor(t), ss, Options{Targets: []target.Target{tg}, Parallel: 1})
			if err != nil {
				t.Fatal(err)
			}
			h := hs[0]
			r := rules.Evaluate(h)
			var got rules.Verdict
			for _, v := range r.Verdicts {
				if v.Check == "no-lost-call" {
					got = v
				}
			}
			if got.Status != tt.verdict || !strings.Contains(got.Observed, tt.observed) {
				t.Fatalf("no-lost-call %s: %s; want %s containing %q\nerror %q, events %+v", got.Status, got.Observed, tt.verdict, tt.observed, h.Error, h.TargetEvents)
			}
			assertGone(t, pidsIn(h.Requests[0].Client.Stdout))
		})
	}
	t.Run("a target without resume skips it", func(t *testing.T) {
		tg, _ := writeTarget(t, "kind: client\ncommand: [python3, agent.py]\n", map[string]string{"agent.py": string(src)})
		if Applies(ss[0], tg) {
			t.Fatal("a scenario that kills the target applies to a target without resume")
		}
	})
}

// TestResumeAfterDelay kills the built-in gateway, run as a process of its
// own, a fixed time after its life started, while the model holds its
// first answer back, and resumes it: one run spans both lives, the resume
// runs the turn to its end, and the call is written once. Without the
// delay point the held answer comes after 30s, in the one life.
func TestResumeAfterDelay(t *testing.T) {
	const src = `
name: kill after a delay
request: {endpoint: chat}
faults:
  upstream: [{on: initial, delay: 30s, times: once}]
  target: [{kill: {after: delay, delay: 1s}}]
expect:
  writes: 1
  rules: [no-replay-after-dispatch, no-lost-call]
`
	h := runSource(t, src, "builtin:guarded", 1)[0]
	r := rules.Evaluate(h)
	kills := h.Kills()
	if len(kills) != 1 || kills[0].Point != history.KillAfterDelay || kills[0].PID <= 0 || h.Lives() != 2 {
		t.Fatalf("kills %+v, lives %d; want one kill after the delay and two lives\n%+v", kills, h.Lives(), h.TargetEvents)
	}
	assertGone(t, []int{kills[0].PID})
	if r.Counts.Writes != 1 || r.Counts.Initial < 1 || r.Verdict != rules.Pass {
		t.Errorf("writes %d, initial requests %d, verdict %s; want 1 write across the lives, a pass\n%+v", r.Counts.Writes, r.Counts.Initial, r.Verdict, r.Verdicts)
	}
}

// TestResumeOnAProxy kills a proxy the harness started (the test binary's
// proxy helper: the built-in gateway with its checkpoint in {{run_dir}})
// once commit_write ran, and starts its resume on the same port with the
// same run directory: guarded finishes the pending turn from its checkpoint
// without running the call again (one write across the lives);
// checkpoint-at-turn-end runs it again on each resume. The app request is
// sent once, broken by the kill; each resumed life is a proxy's that
// finished the pending turn, its output captured after a line of its own;
// the killed processes are gone.
func TestResumeOnAProxy(t *testing.T) {
	tests := []struct {
		name, bugs, times, resume string
		writes, kills             int
		verdict                   rules.Status
	}{
		{name: "guarded once", times: "once", writes: 1, kills: 1, verdict: rules.Pass},
		{name: "guarded twice", times: "2", writes: 1, kills: 1, verdict: rules.Pass},
		{name: "switch once", bugs: `"checkpoint-at-turn-end"`, times: "once", writes: 2, kills: 1, verdict: rules.Fail},
		{name: "switch twice", bugs: `"checkpoint-at-turn-end"`, times: "2", writes: 3, kills: 2, verdict: rules.Fail},
		// The resumed life reaches its kill point before it is ready: it is
		// killed there, not held until its readiness times out.
		{name: "switch twice, resumed before it listens", bugs: `"checkpoint-at-turn-end"`, times: "2", resume: "--resume-first", writes: 3, kills: 2, verdict: rules.Fail},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			tg := resumableProxy(t, tt.bugs, tt.resume)
			ss, errs := scenario.Parse("scenario.yaml", []byte(killAfterExecute(tt.times)))
			if len(errs) > 0 {
				t.Fatal(errs)
			}
			if !Applies(ss[0], tg) {
				t.Fatal("a scenario that kills the target does not apply to a proxy with resume")
			}
			hs, err := Run(ctxFor(t), ss, Options{Targets: []target.Target{tg}, Parallel: 1})
			if err != nil {
				t.Fatal(err)
			}
			h := hs[0]
			r := rules.Evaluate(h)
			if h.Error != "" || r.Counts.Writes != tt.writes || len(h.Kills()) != tt.kills || h.Lives() != tt.kills+1 || r.Verdict != tt.verdict {
				t.Fatalf("error %q, writes %d, kills %d, lives %d, verdict %s; want no error, %d, %d, %d, %s\n%+v\n%+v\n%s",
					h.Error, r.Counts.Writes, len(h.Kills()), h.Lives(), r.Verdict, tt.writes, tt.kills, tt.kills+1, tt.verdict, r.Verdicts, h.TargetEvents, strings.Join(h.TargetOutput, "\n"))
			}
			if len(h.Requests) != 1 || h.Requests[0].CleanEnd || !strings.Contains(h.Requests[0].TransportError, "during the run") {
				t.Errorf("app requests %+v; want the one, broken by the kill, not sent again", h.Requests)
			}
			for i, e := range h.TargetEvents {
				if e.Kind != history.TargetResumed {
					continue
				}
				if !e.Proxy {
					t.Errorf("resumed life %d is not marked a proxy's", e.Life)
				}
				if last := i == len(h.TargetEvents)-1; last && (e.Exit == nil || *e.Exit != -1 || !e.Success) {
					t.Errorf("last resumed life %+v; want one that finished the pending turn (exit -1, success)", e)
				}
			}
			out := strings.Join(h.TargetOutput, "\n")
			if !strings.Contains(out, "replaycheck: life 2 of resumable: its resume starts") {
				t.Errorf("the proxy's output does not mark its resumed life:\n%s", out)
			}
			pids := pidsIn(out)
			if len(pids) != tt.kills+1 {
				t.Errorf("the output shows pids %v; want one per life, %d", pids, tt.kills+1)
			}
			for _, e := range h.Kills() {
				if !slices.Contains(pids, e.PID) {
					t.Errorf("killed pid %d is no life's in the output %v", e.PID, pids)
				}
			}
			assertGone(t, pids) // the killed lives, and the last, which Run stopped
		})
	}
}

// resumableProxy is a proxy target started as the test binary's proxy
// helper (the built-in gateway, guarded with bugs switched on, its
// checkpoint in {{run_dir}}), resumed on the same port with the flag
// resume ("" is --resume).
func resumableProxy(t *testing.T, bugs, resume string) target.Target {
	if resume == "" {
		resume = "--resume"
	}
	tg, _ := writeTarget(t, fmt.Sprintf(`kind: proxy
name: resumable
url: http://127.0.0.1:{{port}}
headers: {Authorization: "Bearer ${TEST_KEY}"}
start:
  command: [%[1]q, --config, "{{config}}", --port, "{{port}}", --checkpoint, "{{run_dir}}/checkpoint.jsonl"]
  config: proxy.json.tmpl
  env: {%[2]s: proxy}
  ready: {timeout: 20s}
resume:
  command: [%[1]q, --config, "{{config}}", --port, "{{port}}", --checkpoint, "{{run_dir}}/checkpoint.jsonl", %[3]s]
`, self(t), helperEnv, resume), map[string]string{"proxy.json.tmpl": `{"Upstream": "{{upstream_url}}", "MCP": "{{mcp_url}}", "Mode": "guarded", "Bugs": [` + bugs + `], "Key": "` + testKey + `"}`})
	return tg
}

// TestResumeOnAProxyWithARecordedModel kills, twice, a proxy whose model
// answers are replayed from a session recorded through the relay from a
// provider (model: {cassette}: the only model a run has besides the
// script; a run never relays, and a relayed answer's tool calls are not
// counted). A resumed proxy's life is finished only by the run's final
// answer: the replayed answers that ask for commit_write count their tool
// calls, so each resumed life runs on to its kill point — with
// checkpoint-at-turn-end three lives, two kills, three writes, every model
// request answered from the cassette.
func TestResumeOnAProxyWithARecordedModel(t *testing.T) {
	dir := t.TempDir()
	clean := loadYAML(t, dir, "clean.yaml", "- name: clean\n  request: {endpoint: chat}\n  expect: {writes: 1}\n")
	recordThroughRelay(t, dir, runtoken.Derive("recording"), clean)
	ss := loadYAML(t, dir, "kill.yaml", killAfterExecute("2")+"model: {cassette: session.jsonl}\n")
	hs, err := Run(ctxFor(t), ss, Options{Targets: []target.Target{resumableProxy(t, `"checkpoint-at-turn-end"`, "")}, Parallel: 1})
	if err != nil {
		t.Fatal(err)
	}
	h := hs[0]
	r := rules.Evaluate(h)
	if h.Error != "" || r.Counts.Writes != 3 || len(h.Kills()) != 2 || h.Lives() != 3 {
		t.Fatalf("error %q, writes %d, kills %d, lives %d; want no error, 3, 2, 3\n%+v\n%s", h.Error, r.Counts.Writes, len(h.Kills()), h.Lives(), h.TargetEvents, strings.Join(h.TargetOutput, "\n"))
	}
	for _, u := range h.Upstream {
		if u.Replayed == "" {
			t.Errorf("model request not answered from the cassette: %+v", u)
		}
	}
}
