// Package targets_test runs the shipped target files from the repository
// root, as the README does: the built-in gateway as a separate process (proxy
// kind, rendered config) in both modes and interrupted with SIGINT,
// examples/agent as a client target with and without its naive retry, and
// the LiteLLM target, rendered and run with a stand-in litellm command.
package targets_test

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/replaycheck/replaycheck/internal/gobuild"
	"github.com/replaycheck/replaycheck/internal/harness/targetfile"
	"github.com/replaycheck/replaycheck/internal/syncbuf"
	"github.com/replaycheck/replaycheck/internal/targettest"
)

// Binaries built once for the package by TestMain.
var (
	replaycheckBin string
	agentBin       string
)

func TestMain(m *testing.M) {
	dir, err := os.MkdirTemp("", "replaycheck-targets-test-")
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(3)
	}
	replaycheckBin = filepath.Join(dir, "replaycheck")
	agentBin = filepath.Join(dir, "agent")
	// Built as a release builds them, as cmd/replaycheck's tests build
	// replaycheck: the two builds share their compiled packages.
	for _, b := range []struct{ out, dir string }{{replaycheckBin, "../cmd/replaycheck"}, {agentBin, "../examples/agent"}} {
		if err := gobuild.Release(b.dir, b.out); err != nil {
			fmt.Fprintln(os.Stderr, err)
			os.RemoveAll(dir)
			os.Exit(3)
		}
	}
	code := m.Run()
	os.RemoveAll(dir)
	os.Exit(code)
}

// replaycheck runs the built binary with args and extra environment from
// the repository root, as the README's commands are run (so a path the
// harness hands a target relative to its own directory breaks), and returns
// its exit code and output.
func replaycheck(t *testing.T, env []string, args ...string) (int, string) {
	t.Helper()
	cmd := exec.Command(replaycheckBin, args...)
	cmd.Dir = ".."
	cmd.Env = append(os.Environ(), env...)
	var out bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &out
	err := cmd.Run()
	code := 0
	if ee, ok := err.(*exec.ExitError); ok {
		code = ee.ExitCode()
	} else if err != nil {
		t.Fatalf("running replaycheck: %v", err)
	}
	return code, out.String()
}

// gatewayProcesses lists running `replaycheck gateway` processes of the
// built binary.
func gatewayProcesses(t *testing.T) []string {
	t.Helper()
	entries, err := os.ReadDir("/proc")
	if err != nil {
		t.Skip("no /proc to check for processes left behind")
	}
	var out []string
	for _, e := range entries {
		b, err := os.ReadFile("/proc/" + e.Name() + "/cmdline")
		if err != nil {
			continue
		}
		args := strings.Split(string(b), "\x00")
		if len(args) > 1 && args[0] == replaycheckBin && args[1] == "gateway" {
			stat, _ := os.ReadFile("/proc/" + e.Name() + "/stat")
			if i := bytes.LastIndexByte(stat, ')'); i >= 0 && bytes.HasPrefix(bytes.TrimSpace(stat[i+1:]), []byte("Z")) {
				continue // a zombie is gone for our purposes
			}
			out = append(out, e.Name()+": "+strings.Join(args, " "))
		}
	}
	return out
}

// TestGatewayProcess runs `replaycheck gateway` started as its own process
// per run (and per isolated scenario, with the scenario's knobs as flags):
// the shipped suite through targets/gateway-process.yaml (guarded passes
// everything; naive fails the seed with its Before counts), and the resume
// scenarios through targets/gateway-process-resume.yaml (`gateway
// --checkpoint`, its process group killed at each kill point and `--resume`
// started on the same port with the same run directory: guarded finishes
// each pending turn without running the call again; with
// checkpoint-at-turn-end the resumed gateway runs the call again on each
// resume, 3 writes for two kills, as builtin:checkpoint-at-turn-end does).
// No gateway process is left.
func TestGatewayProcess(t *testing.T) {
	tests := []struct {
		name     string
		env      string
		args     []string
		wantCode int
		want     []string
		// every, when set, is the summary whose scenarios must all pass.
		every string
		// writes, when set, maps scenarios to their verdict and writes in
		// the summary table (the README's "Kill and resume" cells).
		writes map[string]string
	}{
		{
			name: "guarded passes the whole suite", env: "REPLAYCHECK_GATEWAY_MODE=guarded",
			args: []string{"scenarios", "--target", "targets/gateway-process.yaml", "--parallel", "4"}, wantCode: 0,
			want:  []string{"on gateway-process-guarded: ", " pass, 0 fail, 0 unknown", "scenario runs: scenarios with expect.client run on client targets only"},
			every: "gateway-process-guarded",
		},
		{
			name: "naive shows the seed's Before counts", env: "REPLAYCHECK_GATEWAY_MODE=naive",
			args: []string{"scenarios/seed", "--target", "targets/gateway-process.yaml", "--parallel", "4"}, wantCode: 1,
			want: []string{
				"10 scenarios on gateway-process-naive: 6 pass, 4 fail",
				"FAIL seed chat fault_on on gateway-process-naive",
				"FAIL writes: expected 1 write, observed 3",
				"3 /v1/chat/completions follow_up injected_500",
				"FAIL seed chat stream drop with fallback on gateway-process-naive",
				"FAIL writes: expected 1 write, observed 2",
			},
		},
		{
			// -vv shows the timelines of passing runs too.
			name: "resumed, guarded passes", env: "REPLAYCHECK_GATEWAY_BUG=",
			args:     []string{"--tag", "resume", "--target", "targets/gateway-process-resume.yaml", "--parallel", "2", "-vv"},
			wantCode: 0, want: []string{
				"resumed (life 2): finished the pending turn (a proxy",
				`follow-up with the result of call_`, `: "MCP tool call ledger-commit_write: outcome unknown. The gateway was stopped`,
				`: "recorded alpha-`,
			},
			every: "gateway-process-resume-guarded",
			writes: map[string]string{
				"resume kill after execute": "pass 1", "resume kill after execute twice": "pass 1", "resume SIGTERM after execute": "pass 1",
				"resume kill at follow-up": "pass 1", "resume kill in stream": "pass 1",
			},
		},
		{
			name: "resumed, checkpoint-at-turn-end replays the call", env: "REPLAYCHECK_GATEWAY_BUG=checkpoint-at-turn-end",
			args: []string{"--tag", "resume", "--target", "targets/gateway-process-resume.yaml", "--parallel", "2", "-vv"}, wantCode: 1,
			want: []string{
				" scenarios on gateway-process-resume-checkpoint-at-turn-end: 1 pass, 4 fail, 0 unknown",
				"FAIL resume kill after execute twice on gateway-process-resume-checkpoint-at-turn-end",
				"FAIL writes: expected 1 write, observed 3",
				"replayed by the resumed run: 2 executions after the target was killed (SIGKILL) after tools/call commit_write ran",
				"resumed (life 3): finished the pending turn (a proxy: it carries on with its own pending work; the harness does not send the app request again)",
			},
			writes: map[string]string{
				"resume kill after execute": "fail 2", "resume kill after execute twice": "fail 3", "resume SIGTERM after execute": "fail 2",
				"resume kill at follow-up": "fail 2", "resume kill in stream": "pass 1",
			},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			code, out := replaycheck(t, []string{tt.env}, append([]string{"run"}, tt.args...)...)
			if code != tt.wantCode {
				t.Fatalf("exit %d, want %d\n%s", code, tt.wantCode, out)
			}
			for _, w := range tt.want {
				if !strings.Contains(out, w) {
					t.Errorf("output lacks %q:\n%s", w, out)
				}
			}
			if tt.every != "" {
				// Every scenario selected ran and passed, however many there are.
				m := regexp.MustCompile(`(\d+) scenarios on ` + regexp.QuoteMeta(tt.every) + `: (\d+) pass, 0 fail, 0 unknown`).FindStringSubmatch(out)
				if m == nil || m[1] != m[2] || m[1] == "0" {
					t.Errorf("not every scenario ran and passed (%q):\n%s", m, out)
				}
			}
			for name, want := range tt.writes {
				// A summary table row: scenario, target, verdict, status, writes.
				m := regexp.MustCompile(`│ ` + regexp.QuoteMeta(name) + ` +│ [^│]+│ (\w+) +│ [^│]+│ (\d+) +│`).FindStringSubmatch(out)
				if m == nil || m[1]+" "+m[2] != want {
					t.Errorf("%s: verdict and writes %q, want %q:\n%s", name, m, want, out)
				}
			}
			if left := gatewayProcesses(t); len(left) > 0 {
				t.Errorf("gateway processes left running:\n%s", strings.Join(left, "\n"))
			}
		})
	}
}

// TestAgentTargets runs the default suite, as a user's first run does,
// through targets/agent.yaml, through a user's own copy of it that does not
// declare its dialects, and through targets/agent-naive.yaml: the correct
// agent is green (exit 0), its copy too, with the Gemini scenarios it cannot
// meet skipped as not applicable; with every follow-up failing (500 with a
// retry hint) the SDK's own retries give one write, the naive wrapper three,
// and it breaks replay rules only.
func TestAgentTargets(t *testing.T) {
	src, err := os.ReadFile("agent.yaml")
	if err != nil {
		t.Fatal(err)
	}
	root, err := filepath.Abs("..")
	if err != nil {
		t.Fatal(err)
	}
	own := strings.NewReplacer("name: agent\n", "name: own-agent\n", "dir: ..\n", "dir: "+root+"\n", "dialects: [chat]\n", "").Replace(string(src))
	if own == string(src) || strings.Contains(own, "dialects:") {
		t.Fatalf("targets/agent.yaml changed shape; the copy is:\n%s", own)
	}
	ownFile := filepath.Join(t.TempDir(), "own-agent.yaml")
	if err := os.WriteFile(ownFile, []byte(own), 0o644); err != nil {
		t.Fatal(err)
	}
	got := map[string]string{}
	for _, run := range []struct {
		targets  []string
		wantCode int
	}{
		{[]string{"targets/agent.yaml", ownFile}, 0},
		{[]string{"targets/agent-naive.yaml"}, 1},
	} {
		js := filepath.Join(t.TempDir(), "run.json")
		args := []string{"run", "--json", js, "--parallel", "4"}
		for _, target := range run.targets {
			args = append(args, "--target", target)
		}
		code, out := replaycheck(t, []string{"REPLAYCHECK_AGENT=" + agentBin}, args...)
		if code != run.wantCode {
			t.Fatalf("%v: exit %d, want %d\n%s", run.targets, code, run.wantCode, out)
		}
		if !strings.Contains(out, "retry_after_hint 1ms") {
			t.Errorf("the report does not note the retry hint:\n%s", out)
		}
		b, err := os.ReadFile(js)
		if err != nil {
			t.Fatal(err)
		}
		var saved struct {
			Results []struct {
				History struct {
					Scenario, Target string
					Requests         []struct {
						Client *struct{ Exit int }
					}
				}
				Verdict  string
				Verdicts []struct{ Kind, Status string }
				Counts   struct {
					Writes   int
					FollowUp int `json:"follow_up"`
				}
			}
		}
		if err := json.Unmarshal(b, &saved); err != nil {
			t.Fatal(err)
		}
		for _, r := range saved.Results {
			exit := "none"
			if len(r.History.Requests) > 0 && r.History.Requests[0].Client != nil {
				exit = fmt.Sprint(r.History.Requests[0].Client.Exit)
			}
			rule := false
			for _, v := range r.Verdicts {
				rule = rule || v.Kind == "rule" && v.Status == "fail"
			}
			if r.Verdict == "fail" && !rule {
				t.Errorf("%s on %s fails, but no replay rule broke", r.History.Scenario, r.History.Target)
			}
			got[r.History.Scenario+" on "+r.History.Target] = fmt.Sprintf("%s writes=%d follow_ups=%d exit=%s", r.Verdict, r.Counts.Writes, r.Counts.FollowUp, exit)
		}
	}
	want := map[string]string{}
	for _, target := range []string{"agent", "own-agent", "agent-naive"} {
		for scenario, result := range map[string]string{
			"client no fault":           "pass writes=1 follow_ups=1 exit=0",
			"client follow-up 500 once": "pass writes=1 follow_ups=2 exit=0",
			// The SDK reports the lost session and the refused call.
			"client follow-up 500 always":                   "pass writes=1 follow_ups=3 exit=1",
			"client mcp session expired after the call ran": "pass writes=1 follow_ups=0 exit=1",
			"client mcp tools/call refused 401":             "pass writes=0 follow_ups=0 exit=1",
			// MCP 2026-07-28 and 2025-11-25 (scenarios/clients/mcp2026-*):
			// a keyed call lost before it ran is re-issued with its key
			// (one write); a call whose answer was lost after it ran is
			// reported, not sent again.
			"client mcp 2026-07-28 keyed call refused before execute":     "pass writes=1 follow_ups=1 exit=0",
			"client mcp 2026-07-28 keyed call reset before execute":       "pass writes=1 follow_ups=1 exit=0",
			"client mcp 2026-07-28 response stream cut after its headers": "pass writes=1 follow_ups=0 exit=1",
			"client mcp 2026-07-28 stream broken after execute":           "pass writes=1 follow_ups=0 exit=1",
			"client mcp 2025-11-25 stream broken after execute":           "pass writes=1 follow_ups=0 exit=1",
		} {
			want[scenario+" on "+target] = result
		}
	}
	// Declared in its file, the Gemini scenarios do not run on agent; on
	// the copy they run and are skipped: the agent called chat only.
	want["gemini follow-up stream cut on own-agent"] = "skipped writes=1 follow_ups=1 exit=0"
	want["gemini stream error on the follow-up on own-agent"] = "skipped writes=1 follow_ups=1 exit=0"
	// The naive wrapper runs the whole tool loop again: three writes, and
	// two after the lost session. The refused call never ran: the
	// wrapper's one retry is allowed.
	want["client follow-up 500 always on agent-naive"] = "fail writes=3 follow_ups=9 exit=1"
	want["client mcp session expired after the call ran on agent-naive"] = "fail writes=2 follow_ups=1 exit=0"
	want["client mcp tools/call refused 401 on agent-naive"] = "pass writes=1 follow_ups=1 exit=0"
	for _, scenario := range []string{"client mcp 2026-07-28 response stream cut after its headers", "client mcp 2026-07-28 stream broken after execute", "client mcp 2025-11-25 stream broken after execute"} {
		want[scenario+" on agent-naive"] = "fail writes=2 follow_ups=1 exit=0"
	}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("results (-want +got):\n%s", diff)
	}
}

// TestShippedTargetsLoad loads every shipped target file.
func TestShippedTargetsLoad(t *testing.T) {
	loadShipped(t, "*.yaml")
}

// TestShippedTargetsIgnoreLeftovers copies the target files to a directory
// with a rendered gateway config an interrupted run left there: the shipped
// files are found and load without it.
func TestShippedTargetsIgnoreLeftovers(t *testing.T) {
	dir := t.TempDir()
	files, err := filepath.Glob("*")
	if err != nil {
		t.Fatal(err)
	}
	for _, f := range files {
		if fi, err := os.Stat(f); err != nil || fi.IsDir() {
			continue
		}
		b, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(dir, f), b, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	const leftover = ".replaycheck-4711-gateway-config.yaml"
	if err := os.WriteFile(filepath.Join(dir, leftover), []byte("upstream: http://127.0.0.1:1/v1\nmcp: http://127.0.0.1:2/mcp\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	if all, _ := filepath.Glob(filepath.Join(dir, "*.yaml")); !slices.Contains(all, filepath.Join(dir, leftover)) {
		t.Fatalf("*.yaml does not match %s: the test proves nothing", leftover)
	}
	got := loadShipped(t, filepath.Join(dir, "*.yaml"))
	if slices.Contains(got, filepath.Join(dir, leftover)) {
		t.Errorf("the shipped files include the leftover %s", leftover)
	}
	if want := targettest.Shipped(t, "*.yaml"); len(got) != len(want) {
		t.Errorf("%d files in the copy, %d shipped", len(got), len(want))
	}
}

// loadShipped loads every shipped target file glob matches (see
// targettest.Shipped) and returns their paths.
func loadShipped(t *testing.T, glob string) []string {
	files := targettest.Shipped(t, glob)
	if len(files) < 4 {
		t.Fatalf("target files: %v", files)
	}
	// The variables shipped files require: LiteLLM's key, and the
	// directory of server-memory's files (gateway-memory.yaml, …).
	getenv := func(k string) string {
		return map[string]string{"LITELLM_MASTER_KEY": "sk-test", "MEMORY_DIR": "/tmp"}[k]
	}
	names := map[string]string{}
	for _, f := range files {
		tg, err := targetfile.Load(f, targetfile.Options{Getenv: getenv})
		if err != nil {
			t.Errorf("%s: %v", f, err)
			continue
		}
		if prev, dup := names[tg.Name()]; dup {
			t.Errorf("%s and %s are both named %q", prev, f, tg.Name())
		}
		names[tg.Name()] = f
	}
	return files
}

// TestInterruptStopsGatewayProcess sends SIGINT (Ctrl-C) to a real
// `replaycheck run` on targets/gateway-process.yaml while a scenario waits on
// a slow model: the run ends with exit 3 saying it was interrupted, and no
// gateway process is left.
func TestInterruptStopsGatewayProcess(t *testing.T) {
	suite := filepath.Join(t.TempDir(), "slow.yaml")
	if err := os.WriteFile(suite, []byte(`
- name: quick
  request: {endpoint: chat}
  expect: {writes: 1}
- name: slow
  request: {endpoint: chat}
  faults: {upstream: [{on: follow_up, delay: 5m}]}
  expect: {writes: 1}
`), 0o644); err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, replaycheckBin, "run", suite, "--target", "gateway-process.yaml", "--parallel", "2", "--timeout", "10m")
	cmd.Env = append(os.Environ(), "REPLAYCHECK_GATEWAY_MODE=guarded")
	// Progress goes to stderr; the table and the failures to stdout.
	progress, err := cmd.StderrPipe()
	if err != nil {
		t.Fatal(err)
	}
	var out syncbuf.Buffer
	cmd.Stdout = &out
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { killGateways(t) })
	// The quick scenario's progress line: the gateway is up and the slow
	// scenario is in flight through it.
	var stderr bytes.Buffer
	sc := bufio.NewScanner(progress)
	for sc.Scan() {
		stderr.WriteString(sc.Text() + "\n")
		if strings.Contains(sc.Text(), "quick on gateway-process-guarded") {
			break
		}
	}
	running := gatewayProcesses(t)
	if len(running) == 0 {
		t.Fatalf("no gateway process while the slow scenario runs\n%s%s", out.String(), stderr.String())
	}
	if err := cmd.Process.Signal(os.Interrupt); err != nil {
		t.Fatal(err)
	}
	rest, _ := io.ReadAll(progress)
	stderr.Write(rest)
	err = cmd.Wait()
	var ee *exec.ExitError
	if !errors.As(err, &ee) || ee.ExitCode() != 130 {
		t.Errorf("exit: %v, want code 130 (interrupted)\n%s%s", err, out.String(), stderr.String())
	}
	if !strings.Contains(stderr.String(), "interrupted") {
		t.Errorf("stderr does not say the run was interrupted:\n%s", stderr.String())
	}
	if left := gatewayProcesses(t); len(left) > 0 {
		t.Errorf("gateway processes left running after Ctrl-C (were %v):\n%s", running, strings.Join(left, "\n"))
	}
}

// killGateways kills gateway processes a failed test left behind.
func killGateways(t *testing.T) {
	for _, p := range gatewayProcesses(t) {
		pid, _, _ := strings.Cut(p, ":")
		if n, err := strconv.Atoi(pid); err == nil {
			_ = syscall.Kill(n, syscall.SIGKILL)
		}
	}
}

// fakeLiteLLM stands in for the `litellm` command: it checks what
// targets/litellm.yaml hands LiteLLM (the rendered config next to
// custom_guardrail.py, the dummy OpenAI key, the master key) and serves the
// config's model API, MCP server, num_retries and fallbacks with the
// replaycheck binary (%[1]q) as `replaycheck gateway` in a mode (%[2]q).
// They are written into the script: the harness passes a proxy no
// variable of its environment the target file does not name.
const fakeLiteLLM = `#!/bin/sh
set -e
while [ $# -gt 0 ]; do
  case "$1" in
    --config) config=$2; shift 2 ;;
    --port) port=$2; shift 2 ;;
    --host) shift 2 ;;
    *) echo "fake litellm: unexpected argument $1" >&2; exit 2 ;;
  esac
done
[ -f "$(dirname "$config")/custom_guardrail.py" ] || { echo "fake litellm: no custom_guardrail.py next to $config" >&2; exit 1; }
[ "$OPENAI_API_KEY" = sk-replaycheck-dummy ] || { echo "fake litellm: OPENAI_API_KEY is not the dummy key" >&2; exit 1; }
[ -n "$LITELLM_MASTER_KEY" ] || { echo "fake litellm: no LITELLM_MASTER_KEY" >&2; exit 1; }
upstream=$(awk '/api_base:/ {print $2; exit}' "$config")
mcp=$(awk '/^mcp_servers:/ {f=1} f && /url:/ {print $2; exit}' "$config")
retries=$(awk '/num_retries:/ {print $2; exit}' "$config")
fallbacks=$(sed -n 's/.*{"\([^"]*\)": \["\([^"]*\)"\]}.*/--fallback=\1=\2/p' "$config")
echo "fake litellm on port $port: upstream $upstream, mcp $mcp, num_retries $retries, fallbacks [$fallbacks]"
REPLAYCHECK_MASTER_KEY=$LITELLM_MASTER_KEY exec %[1]q gateway --addr "127.0.0.1:$port" \
  --upstream "$upstream" --mcp "$mcp" --num-retries "$retries" --mode %[2]q $fallbacks
`

// TestLiteLLMTargetWiring runs the README's LiteLLM command (the seed suite
// on targets/litellm.yaml) with a stand-in `litellm` on PATH that serves the
// rendered config with the built-in gateway: the command line, the rendered
// config and where it is written, the environment, the readiness URL and the
// fallback variant are what LiteLLM would get. Guarded passes the seed, naive
// shows its Before counts; the master key appears nowhere and no rendered
// config is left next to the template.
func TestLiteLLMTargetWiring(t *testing.T) {
	const key = "sk-litellm-wiring-secret-5150"
	tests := []struct {
		mode     string
		wantCode int
		want     []string
	}{
		{mode: "guarded", wantCode: 0, want: []string{"10 scenarios on litellm: 10 pass, 0 fail"}},
		{mode: "naive", wantCode: 1, want: []string{
			"10 scenarios on litellm: 6 pass, 4 fail",
			"FAIL writes: expected 1 write, observed 3",
			"3 /v1/chat/completions follow_up injected_500",
			"FAIL seed chat stream drop with fallback on litellm",
			// Spliced chunks: the fallback variant was rendered for this
			// scenario. (The chunk count itself is checked on builtin targets
			// only: it is the built-in gateway's chunking.)
			"FAIL no-splice: ",
			"14 data chunks in the client stream",
		}},
	}
	for _, tt := range tests {
		t.Run(tt.mode, func(t *testing.T) {
			bin := t.TempDir()
			if err := os.WriteFile(filepath.Join(bin, "litellm"), []byte(fmt.Sprintf(fakeLiteLLM, replaycheckBin, tt.mode)), 0o755); err != nil {
				t.Fatal(err)
			}
			// Left by an interrupted run before this test: not this run's.
			before, _ := filepath.Glob(".replaycheck-*")
			code, out := replaycheck(t, []string{
				"PATH=" + bin + string(os.PathListSeparator) + os.Getenv("PATH"), "LITELLM_MASTER_KEY=" + key,
			}, "run", "scenarios/seed", "--target", "targets/litellm.yaml", "--timeout", "120s", "--parallel", "4")
			if code != tt.wantCode {
				t.Fatalf("exit %d, want %d\n%s", code, tt.wantCode, out)
			}
			for _, w := range tt.want {
				if !strings.Contains(out, w) {
					t.Errorf("output lacks %q:\n%s", w, out)
				}
			}
			if strings.Contains(out, key) {
				t.Errorf("the master key appears in the output")
			}
			if left, _ := filepath.Glob(".replaycheck-*"); len(left) > len(before) {
				t.Errorf("rendered configs left next to the template: %v (%v before the run)", left, before)
			}
			if left := gatewayProcesses(t); len(left) > 0 {
				t.Errorf("processes left running:\n%s", strings.Join(left, "\n"))
			}
		})
	}
}

// TestClientGetsNoCredentials runs a client target that prints its whole
// environment (and a key of its own) with credentials in replaycheck's
// environment: none reaches the client, none appears in the JSON report;
// the variable the file's pass_env names does reach it, and a secret one it
// names reaches it but is masked in the report, as is the key it printed.
func TestClientGetsNoCredentials(t *testing.T) {
	creds := map[string]string{
		"GEMINI_API_KEY":        "AIzaSyDgemini0123456789abcdefghijklmnop",
		"GOOGLE_API_KEY":        "AIzaSyDgoogle0123456789abcdefghijklmnop",
		"ANTHROPIC_AUTH_TOKEN":  "anthropic-auth-token-4711-secret",
		"AWS_SECRET_ACCESS_KEY": "wJalrXUtnFEMI/K7MDENG/bPxRfiCYEXAMPLEKEY",
		"GITHUB_TOKEN":          "ghp_abcdefghijklmnopqrstuvwxyz0123456789",
	}
	const (
		passed      = "passed-through-value"
		passedToken = "service-token-0815-secret"
		ownKey      = "sk-proj-Zx81Kq03Lm55Tt77Pp99"
	)
	dir := t.TempDir()
	file := filepath.Join(dir, "env.yaml")
	if err := os.WriteFile(file, []byte(`kind: client
command: [sh, -c, 'env; [ -n "$MY_SERVICE_TOKEN" ] && echo has-service-token; echo own key `+ownKey+`; cat "$HOME/.netrc"; echo netrc read']
pass_env: [REPLAYCHECK_TEST_PASSED, MY_SERVICE_TOKEN]
`), 0o644); err != nil {
		t.Fatal(err)
	}
	// The user's home holds credential files a client must not read: its
	// HOME is the run's scratch directory.
	home := t.TempDir()
	const netrcPassword = "netrc-password-4711"
	if err := os.WriteFile(filepath.Join(home, ".netrc"), []byte("machine api.example.com login u password "+netrcPassword+"\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	env := []string{"REPLAYCHECK_TEST_PASSED=" + passed, "MY_SERVICE_TOKEN=" + passedToken, "HOME=" + home}
	for k, v := range creds {
		env = append(env, k+"="+v)
	}
	js := filepath.Join(dir, "run.json")
	_, out := replaycheck(t, env, "run", "scenarios/clients", "--filter", "^client no fault$", "--target", file, "--json", js)
	b, err := os.ReadFile(js)
	if err != nil {
		t.Fatalf("no JSON report: %v\n%s", err, out)
	}
	var saved struct {
		Results []struct {
			History struct {
				Requests []struct {
					Client *struct{ Stdout, Stderr string } `json:"client"`
				} `json:"requests"`
			} `json:"history"`
		} `json:"results"`
	}
	if err := json.Unmarshal(b, &saved); err != nil {
		t.Fatal(err)
	}
	if len(saved.Results) != 1 || len(saved.Results[0].History.Requests) != 1 || saved.Results[0].History.Requests[0].Client == nil {
		t.Fatalf("want one client run in the report:\n%s", b)
	}
	stdout := saved.Results[0].History.Requests[0].Client.Stdout
	for k, v := range creds {
		if strings.Contains(stdout, k+"=") {
			t.Errorf("the client got %s", k)
		}
		if strings.Contains(string(b), v) || strings.Contains(out, v) {
			t.Errorf("the value of %s is in the report or the output", k)
		}
	}
	for _, want := range []string{"REPLAYCHECK_TEST_PASSED=" + passed, "MY_SERVICE_TOKEN=***", "has-service-token", "own key ***"} {
		if !strings.Contains(stdout, want) {
			t.Errorf("the client's output lacks %q:\n%s", want, stdout)
		}
	}
	if !strings.Contains(stdout, "netrc read") || strings.Contains(stdout, "HOME="+home+"\n") {
		t.Errorf("the client's HOME is the user's, want the run's scratch directory:\n%s", stdout)
	}
	for _, secret := range []string{passedToken, ownKey, netrcPassword} {
		if strings.Contains(string(b), secret) || strings.Contains(out, secret) {
			t.Errorf("%q is in the report or the output", secret)
		}
	}
}

// TestClientThatCannotStart runs client targets whose command cannot run:
// one not found in PATH, and Claude Code's and the AI SDK agent's targets
// without `make clients` (Claude Code's shell does not find
// node_modules/.bin/claude and exits 127; node does not find the agent's
// packages). Each ends with exit 3, naming the command and how to install
// it; no rule is said to be broken.
func TestClientThatCannotStart(t *testing.T) {
	read := func(name string) string {
		b, err := os.ReadFile(name)
		if err != nil {
			t.Fatal(err)
		}
		return string(b)
	}
	tests := []struct {
		name  string
		file  string
		src   string
		mkdir string            // a directory the file needs, relative to it
		extra map[string]string // files copied there, by name
		node  bool              // needs node on PATH
		want  []string
	}{
		{
			name: "not in PATH",
			file: "missing.yaml",
			src:  "kind: client\ncommand: [no-such-agent-4711, --flag]\ninstall: go install example.com/no-such-agent-4711@latest\n",
			want: []string{`command "no-such-agent-4711" not found in PATH`, "install it with: go install example.com/no-such-agent-4711@latest"},
		},
		{
			name:  "claude-code without make clients",
			file:  "claude-code.yaml",
			src:   read("claude-code.yaml"),
			mkdir: "clients",
			want:  []string{"client claude-code could not run: its command sh exited with code 127:", "node_modules/.bin/claude", "not found", "install it with: make clients"},
		},
		{
			name:  "ai-sdk without make clients",
			file:  "ai-sdk.yaml",
			src:   read("ai-sdk.yaml"),
			mkdir: "clients",
			extra: map[string]string{"ai-sdk.mjs": read("clients/ai-sdk.mjs")},
			node:  true,
			want:  []string{"client ai-sdk could not run: its command node exited with code 1:", "ERR_MODULE_NOT_FOUND", "install it with: make clients"},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if _, err := exec.LookPath("node"); tt.node && err != nil {
				t.Skip("node is not on PATH")
			}
			dir := t.TempDir()
			if tt.mkdir != "" {
				if err := os.Mkdir(filepath.Join(dir, tt.mkdir), 0o755); err != nil {
					t.Fatal(err)
				}
			}
			for name, body := range tt.extra {
				if err := os.WriteFile(filepath.Join(dir, tt.mkdir, name), []byte(body), 0o644); err != nil {
					t.Fatal(err)
				}
			}
			file := filepath.Join(dir, tt.file)
			if err := os.WriteFile(file, []byte(tt.src), 0o644); err != nil {
				t.Fatal(err)
			}
			code, out := replaycheck(t, nil, "run", "scenarios/clients", "--target", file, "--parallel", "2")
			if code != 3 {
				t.Errorf("exit %d, want 3 (the target could not run)\n%s", code, out)
			}
			for _, w := range tt.want {
				if !strings.Contains(out, w) {
					t.Errorf("output lacks %q:\n%s", w, out)
				}
			}
			for _, bad := range []string{"a replay rule was broken", "FAIL "} {
				if strings.Contains(out, bad) {
					t.Errorf("output says %q:\n%s", bad, out)
				}
			}
		})
	}
}
