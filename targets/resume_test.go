package targets_test

import (
	"bufio"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"os/user"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/replaycheck/replaycheck/internal/targettest"
)

// resumeTarget is a shipped target file whose agent the harness kills and
// resumes (scenarios/resume): an agent CLI with its own resume, or an agent
// on a durable engine, and what each resume scenario shows on it.
type resumeTarget struct {
	file  string   // target file in targets/
	needs []string // files under targets/ the run needs (installed by npm ci)
	// postgres marks a target whose engine keeps its store in PostgreSQL
	// (PGHOST): the test starts a server for it (engines/postgres.sh).
	postgres bool
	// store reads, from a kept run directory and the run's stderr, how many
	// commit_write calls the agent's own store (its session file, the
	// engine's journal) records as done: the count beside the ledger's.
	store func(t *testing.T, runDir, stderr string) int
	// want is each scenario's summary (see resumeSummary); alt, the other
	// summaries a scenario may show where the agent races its own timer.
	want map[string]string
	alt  map[string][]string
}

var resumeTargets = []resumeTarget{
	{
		file:  "claude-code-resume.yaml",
		needs: []string{"clients/node_modules/.bin/claude"},
		store: claudeSessionCalls,
		want: map[string]string{
			// Its transcript is written every 100 ms: killed sooner after the call
			// (as at each SIGKILL point here, mostly), the resumed session has only
			// the prompt, and the model, asked again, runs the call again. On
			// SIGTERM it saves the call with an error result first and the resume
			// sends that.
			"client resume kill after execute":    `fail lives=2 exit=0 writes=2 store=1 initial=2 follow_ups=1 told=result said="done"`,
			"client resume SIGTERM after execute": `pass lives=2 exit=0 writes=1 store=1 initial=1 follow_ups=1 told=error=true "MCP server \"ledger\" connection closed before the tool" said="done"`,
			"client resume kill at follow-up":     `fail lives=2 exit=0 writes=2 store=1 initial=2 follow_ups=2 told=result said="done"`,
		},
		// Killed once a flush saved the call (a slow machine lets 100 ms pass
		// between the call and the kill), the resumed session answers it as
		// interrupted, of unknown outcome, and does not run it again; once a
		// flush saved its result too (four busy loops beside make test), it
		// sends the result.
		alt: map[string][]string{
			"client resume kill after execute": {interrupted(1)},
			"client resume kill at follow-up":  {interrupted(2), resultSent},
		},
	},
	{
		file:  "codex-resume.yaml",
		needs: []string{"clients/node_modules/.bin/codex"},
		store: codexSessionCalls,
		want: map[string]string{
			// The call is in its rollout before it is sent; the resume answers it
			// "aborted" (no error flag), even when its result had arrived, and
			// does not run it again.
			"client resume kill after execute":    `pass lives=2 exit=0 writes=1 store=1 initial=1 follow_ups=1 told=error=false "aborted" said="done"`,
			"client resume SIGTERM after execute": `pass lives=2 exit=0 writes=1 store=1 initial=1 follow_ups=1 told=error=false "aborted" said="done"`,
			"client resume kill at follow-up":     `pass lives=2 exit=0 writes=1 store=1 initial=1 follow_ups=2 told=result said="done"`,
		},
	},
	{
		file:  "gemini-cli-resume.yaml",
		needs: []string{"clients/node_modules/.bin/gemini"},
		store: geminiSessionCalls,
		want: map[string]string{
			// It saves a model turn with its tool calls once they ran and
			// answered: killed before, the resumed session has only the prompt
			// and the model, asked again, runs the call again (SIGTERM too).
			// Killed at the follow-up, the resumed request carries the result
			// twice.
			"client resume kill after execute":    `fail lives=2 exit=0 writes=2 store=1 initial=2 follow_ups=1 told=result said="done"`,
			"client resume SIGTERM after execute": `fail lives=2 exit=0 writes=2 store=1 initial=2 follow_ups=1 told=result said="done"`,
			"client resume kill at follow-up":     `pass lives=2 exit=0 writes=1 store=1 initial=1 follow_ups=2 told=result said="done"`,
		},
	},
	{
		file:     "dbos.yaml",
		needs:    []string{"engines/dbos-agent.mjs", "engines/node_modules/.bin/node", "engines/node_modules/@dbos-inc/dbos-sdk/package.json"},
		postgres: true,
		store:    engineSteps("dbos steps:"),
		want:     engineWant,
	},
	{
		file:  "restate.yaml",
		needs: []string{"engines/restate-agent.mjs", "engines/node_modules/.bin/node", "engines/node_modules/.bin/restate-server"},
		store: engineSteps("restate journal:"),
		want:  engineWant,
	},
}

// interrupted is Claude Code's resume after a flush saved the call but not
// its result, after follow-ups follow-up model requests: it tells the
// model the call was interrupted and does not run it again.
func interrupted(followUps int) string {
	return fmt.Sprintf(`pass lives=2 exit=0 writes=1 store=1 initial=1 follow_ups=%d told=error=true "[Tool call interrupted: the session ended before this" said="done"`, followUps)
}

// resultSent is Claude Code's resume after a flush saved the call and its
// result: it sends the result.
const resultSent = `pass lives=2 exit=0 writes=1 store=1 initial=1 follow_ups=2 told=result said="done"`

// engineWant is what the resume scenarios show on both durable engines'
// agents (DBOS, Restate).
var engineWant = map[string]string{
	// A step whose output was not checkpointed runs again on recovery: the
	// call writes twice, and the engine's store records one step.
	"client resume kill after execute":    `fail lives=2 exit=0 writes=2 store=1 initial=1 follow_ups=1 told=result said="done"`,
	"client resume SIGTERM after execute": `fail lives=2 exit=0 writes=2 store=1 initial=1 follow_ups=1 told=result said="done"`,
	"client resume kill at follow-up":     `pass lives=2 exit=0 writes=1 store=1 initial=1 follow_ups=2 told=result said="done"`,
}

// TestResume runs scenarios/resume on each shipped target that resumes a
// killed agent (Claude Code's --continue, Codex's exec resume --last, Gemini
// CLI's --resume latest, a
// DBOS Transact workflow and a Restate workflow), unmodified, inside a
// loopback-only network namespace, keeping the runs' directories, and
// holds per scenario the verdict, the lives, the writes the ledger
// executed, what the resumed run told the model about the call whose
// result was never saved, what it told the user, and the count of the
// agent's own store (session file, engine journal) beside the ledger's,
// and the exit code (1 where a rule failed). Where an agent races a timer of
// its own (Claude Code's transcript flush) a scenario may show alt instead. A
// target that is not installed (make clients, make engines) or a machine
// without unprivileged user namespaces skips.
func TestResume(t *testing.T) {
	if testing.Short() {
		t.Skip("killing and resuming real agents takes about a minute; not in -short")
	}
	if err := targettest.LoopbackNamespace(); err != nil {
		t.Skipf("no loopback-only network namespace: %v", err)
	}
	for _, c := range resumeTargets {
		t.Run(c.file, func(t *testing.T) {
			env := prepareResumeTarget(t, c)
			t.Parallel()
			js, ledgerFile := filepath.Join(t.TempDir(), "run.json"), filepath.Join(t.TempDir(), "ledger.txt")
			code, out := inNamespaceEnv(t, 10*time.Minute, env, "run", "scenarios/resume", "--target", "targets/"+c.file,
				"--json", js, "--ledger", ledgerFile, "--keep-run-dirs", "--parallel", "2")
			b, err := os.ReadFile(js)
			if err != nil {
				t.Fatalf("exit %d, no JSON report: %v\n%s", code, err, out)
			}
			var saved savedRun
			if err := json.Unmarshal(b, &saved); err != nil {
				t.Fatal(err)
			}
			lines := readLines(t, ledgerFile)
			got, wantCode := map[string]string{}, 0
			for _, r := range saved.Results {
				// The independent count: the ledger file's lines of this run
				// (its entry, alpha-TOKEN, carries the token), across its lives.
				if n := countContaining(lines, r.History.Token); n != r.Counts.Writes {
					t.Errorf("%s: the ledger file has %d lines of run %s, the report %d writes", r.History.Scenario, n, r.History.Token, r.Counts.Writes)
				}
				if r.Verdict == "fail" {
					wantCode = 1 // a replay rule is broken
				}
				got[r.History.Scenario] = resumeSummary(t, c, r)
				if slices.Contains(c.alt[r.History.Scenario], got[r.History.Scenario]) {
					t.Logf("%s: %s (an alternative)", r.History.Scenario, got[r.History.Scenario])
					got[r.History.Scenario] = c.want[r.History.Scenario]
				}
				// A SIGTERM whose grace ran out (the agent had not finished
				// what it does on SIGTERM, the grace stretched by the time it
				// waited for a CPU) ended in SIGKILL: the agent may show what
				// it shows when killed so.
				if twin, ok := sigkillTwin[r.History.Scenario]; ok && killedAfterGrace(r) &&
					(got[r.History.Scenario] == c.want[twin] || slices.Contains(c.alt[twin], got[r.History.Scenario])) {
					t.Logf("%s: %s (its SIGTERM ran out of grace: as killed with SIGKILL)", r.History.Scenario, got[r.History.Scenario])
					got[r.History.Scenario] = c.want[r.History.Scenario]
				}
				if len(r.History.Requests) == 1 && r.History.Requests[0].Client != nil {
					if d := r.History.Requests[0].Client.RunDir; d != "" {
						t.Cleanup(func() { _ = os.RemoveAll(d) })
					}
				}
			}
			if diff := cmp.Diff(c.want, got); diff != "" {
				t.Errorf("results (-want +got):\n%s\n%s", diff, out)
			}
			if code != wantCode {
				t.Errorf("exit %d, want %d\n%s", code, wantCode, out)
			}
		})
	}
}

// sigkillTwin names, for a SIGTERM scenario of scenarios/resume, the SIGKILL
// one at the same point.
var sigkillTwin = map[string]string{"client resume SIGTERM after execute": "client resume kill after execute"}

// killedAfterGrace reports whether a kill of r's run ran out of its grace
// after SIGTERM and ended in SIGKILL.
func killedAfterGrace(r savedResult) bool {
	return slices.ContainsFunc(r.History.TargetEvents, func(e savedTargetEvent) bool { return e.KilledAfterGrace })
}

// readLines returns the lines of the file at path.
func readLines(t *testing.T, path string) []string {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	return strings.Split(strings.TrimSuffix(string(b), "\n"), "\n")
}

// countContaining counts the lines that contain s.
func countContaining(lines []string, s string) int {
	n := 0
	for _, l := range lines {
		if strings.Contains(l, s) {
			n++
		}
	}
	return n
}

// resumeSummary is one resume scenario's result on c as
// "VERDICT lives=N exit=E writes=W store=S initial=I follow_ups=F told=T
// said=U": the lives the run had and the exit of the last, the ledger's
// writes beside the count of the agent's own store, the model requests of
// all lives, what the resumed run's first follow-up told the model about
// the call (told: "result", or its error flag and first words, or "(no
// follow-up)") and the start of what the agent printed.
func resumeSummary(t *testing.T, c resumeTarget, r savedResult) string {
	t.Helper()
	lives, exit := 1, 0
	resumedAt := time.Duration(-1)
	for _, e := range r.History.TargetEvents {
		if e.Kind == "target_resumed" {
			lives = e.Life
			if e.Exit != nil {
				exit = *e.Exit
			}
			if resumedAt < 0 {
				resumedAt = parseAt(t, e.At)
			}
		}
	}
	told := "(no follow-up)"
	for _, u := range r.History.Upstream {
		if u.Kind == "follow_up" && len(u.Results) > 0 && parseAt(t, u.At) >= resumedAt {
			told = toldText(u.Results[0].Error, u.Results[0].Text)
			break
		}
	}
	store, said := -1, ""
	if len(r.History.Requests) == 1 && r.History.Requests[0].Client != nil {
		cl := r.History.Requests[0].Client
		if lives == 1 {
			exit = cl.Exit
		}
		said = firstWords(cl.Stdout, 6)
		if cl.RunDir != "" {
			store = c.store(t, cl.RunDir, cl.Stderr)
		}
	}
	return fmt.Sprintf("%s lives=%d exit=%d writes=%d store=%d initial=%d follow_ups=%d told=%s said=%q",
		r.Verdict, lives, exit, r.Counts.Writes, store, r.Counts.Initial, r.Counts.FollowUp, told, said)
}

// parseAt parses a history time (a Go duration since the run began).
func parseAt(t *testing.T, at string) time.Duration {
	t.Helper()
	d, err := time.ParseDuration(at)
	if err != nil {
		t.Errorf("history time %q: %v", at, err)
	}
	return d
}

// toldText is what a follow-up told the model about a call: "result" when
// it carried the ledger's answer (as JSON or text, which Codex prefixes
// with the call's wall time), else its error flag and first words.
func toldText(isError bool, text string) string {
	if ledgerAnswer.MatchString(text) {
		return "result"
	}
	return fmt.Sprintf("error=%t %q", isError, firstWords(text, 8))
}

// ledgerAnswer matches the ledger's answer to commit_write, as JSON
// ({"recorded":"alpha-…") or text (recorded alpha-…).
var ledgerAnswer = regexp.MustCompile(`recorded"?:? ?"?alpha`)

// firstWords returns the first n words of s, joined by single spaces.
func firstWords(s string, n int) string {
	w := strings.Fields(s)
	return strings.Join(w[:min(n, len(w))], " ")
}

// startPostgres starts a PostgreSQL server for a DBOS run with
// engines/postgres.sh in a directory of its own (stopped and removed at
// the end) and returns the environment that points the agent at it;
// it skips when PostgreSQL is not installed or cannot run here.
func startPostgres(t *testing.T) []string {
	t.Helper()
	if _, err := exec.LookPath("pg_ctlcluster"); err != nil {
		if _, err := exec.LookPath("pg_ctl"); err != nil {
			t.Skip("PostgreSQL is not installed (make engines installs Debian's postgresql)")
		}
	}
	if os.Geteuid() == 0 {
		if _, err := user.Lookup("postgres"); err != nil {
			t.Skipf("running as root and no postgres user to run PostgreSQL as: %v", err)
		}
	}
	dir, err := os.MkdirTemp("", "replaycheck-pg-")
	if err != nil {
		t.Fatal(err)
	}
	// The server runs as the postgres user when the test runs as root.
	if err := os.Chmod(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	out, err := exec.Command("engines/postgres.sh", "start", dir).CombinedOutput()
	if err != nil {
		_ = os.RemoveAll(dir)
		t.Fatalf("engines/postgres.sh start: %v\n%s", err, out)
	}
	t.Cleanup(func() {
		if out, err := exec.Command("engines/postgres.sh", "stop", dir).CombinedOutput(); err != nil {
			t.Errorf("engines/postgres.sh stop: %v\n%s", err, out)
		}
		_ = os.RemoveAll(dir)
	})
	return []string{"PGHOST=" + strings.TrimSpace(string(out)), "PGUSER=postgres"}
}

// engineSteps returns a store reader for an engine agent that prints the
// steps its engine recorded on stderr as "PREFIX NAME=N …" (the last such
// line counts): the commit_write steps.
func engineSteps(prefix string) func(t *testing.T, runDir, stderr string) int {
	re := regexp.MustCompile(`(?m)^` + regexp.QuoteMeta(prefix) + `.*\bcommit_write=(\d+)`)
	return func(t *testing.T, _, stderr string) int {
		m := re.FindAllStringSubmatch(stderr, -1)
		if m == nil {
			return 0
		}
		var n int
		fmt.Sscan(m[len(m)-1][1], &n)
		return n
	}
}

// claudeSessionCalls counts the ledger's commit_write calls recorded in
// Claude Code's session files (CLAUDE_CONFIG_DIR/projects/*/*.jsonl) of a
// run: tool_use blocks of assistant messages.
func claudeSessionCalls(t *testing.T, runDir, _ string) int {
	files, _ := filepath.Glob(filepath.Join(runDir, ".claude", "projects", "*", "*.jsonl"))
	n := 0
	for _, f := range files {
		eachJSONLine(t, f, func(line []byte) {
			var e struct {
				Message struct {
					Role    string
					Content json.RawMessage
				}
			}
			if json.Unmarshal(line, &e) != nil || e.Message.Role != "assistant" {
				return
			}
			var blocks []struct{ Type, Name string }
			if json.Unmarshal(e.Message.Content, &blocks) != nil {
				return
			}
			for _, b := range blocks {
				if b.Type == "tool_use" && b.Name == "mcp__ledger__commit_write" {
					n++
				}
			}
		})
	}
	return n
}

// codexSessionCalls counts the ledger's commit_write calls recorded in
// Codex's session rollouts (CODEX_HOME/sessions/**/rollout-*.jsonl) of a
// run: function_call items.
func codexSessionCalls(t *testing.T, runDir, _ string) int {
	n := 0
	_ = filepath.WalkDir(filepath.Join(runDir, "sessions"), func(path string, d os.DirEntry, err error) error {
		if err != nil || d.IsDir() || !strings.HasSuffix(path, ".jsonl") {
			return nil
		}
		eachJSONLine(t, path, func(line []byte) {
			var e struct {
				Type    string
				Payload struct{ Type, Name string }
			}
			if json.Unmarshal(line, &e) == nil && e.Type == "response_item" && e.Payload.Type == "function_call" && e.Payload.Name == "commit_write" {
				n++
			}
		})
		return nil
	})
	return n
}

// geminiSessionCalls counts the ledger's commit_write calls recorded in
// Gemini CLI's session files (HOME/.gemini/tmp/*/chats/*.jsonl) of a run:
// the distinct ids of the model turns' tool calls.
func geminiSessionCalls(t *testing.T, runDir, _ string) int {
	files, _ := filepath.Glob(filepath.Join(runDir, ".gemini", "tmp", "*", "chats", "*.jsonl"))
	ids := map[string]bool{}
	for _, f := range files {
		eachJSONLine(t, f, func(line []byte) {
			var e struct {
				Type      string
				ToolCalls []struct{ ID, Name string } `json:"toolCalls"`
			}
			if json.Unmarshal(line, &e) != nil || e.Type != "gemini" {
				return
			}
			for _, c := range e.ToolCalls {
				if c.Name == "mcp_ledger_commit_write" {
					ids[c.ID] = true
				}
			}
		})
	}
	return len(ids)
}

// eachJSONLine calls fn with each line of the file at path.
func eachJSONLine(t *testing.T, path string, fn func([]byte)) {
	t.Helper()
	f, err := os.Open(path)
	if err != nil {
		t.Errorf("reading %s: %v", path, err)
		return
	}
	defer f.Close()
	sc := bufio.NewScanner(f)
	sc.Buffer(make([]byte, 0, 1<<20), 16<<20)
	for sc.Scan() {
		fn(sc.Bytes())
	}
	if err := sc.Err(); err != nil {
		t.Errorf("reading %s: %v", path, err)
	}
}

// prepareResumeTarget skips t when c's agent is not installed (make
// clients, make engines) and returns the environment its runs need: the
// address of a PostgreSQL of its own for an engine that stores in one.
func prepareResumeTarget(t *testing.T, c resumeTarget) []string {
	t.Helper()
	for _, n := range c.needs {
		if _, err := os.Stat(n); err != nil {
			t.Skipf("%s is not installed (make clients, make engines): %v", n, err)
		}
	}
	if c.postgres {
		return startPostgres(t)
	}
	return nil
}
