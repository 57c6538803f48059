package main

import (
	"bytes"
	"context"
	"encoding/json"
	"encoding/xml"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"
	"unicode/utf8"

	"github.com/replaycheck/replaycheck/internal/harness/baseline"
	"github.com/replaycheck/replaycheck/internal/harness/history"
	"github.com/replaycheck/replaycheck/internal/harness/rules"
	"github.com/replaycheck/replaycheck/internal/harness/run"
	"github.com/replaycheck/replaycheck/report"
)

// TestVerboseIsNotVersion: -v is --verbose wherever a command takes it and a
// usage error (exit 2) elsewhere, never the version; "replaycheck -v run"
// is refused, not a version printed with exit 0.
func TestVerboseIsNotVersion(t *testing.T) {
	tests := []struct {
		name     string
		args     []string
		wantCode int
		want     string
	}{
		{"before the command", []string{"-v", "run", "../../scenarios/seed/no-fault-chat.yaml"}, exitBadUsage, "-v is --verbose, given after the command name"},
		{"alone", []string{"-v"}, exitBadUsage, "the version is --version or 'replaycheck version'"},
		{"on a command without it", []string{"list", "-v"}, exitBadUsage, "replaycheck list does not take it"},
		{"-vv before the command", []string{"-vv", "run", "../../scenarios/seed/no-fault-chat.yaml"}, exitBadUsage, "unknown shorthand flag: 'v' in -vv"},
		{"-vq before the command", []string{"-vq", "run", "../../scenarios/seed/no-fault-chat.yaml"}, exitBadUsage, "unknown shorthand flag: 'v' in -vq"},
		{"another shorthand before the command", []string{"-xv", "run", "../../scenarios/seed/no-fault-chat.yaml"}, exitBadUsage, "unknown shorthand flag: 'x'"},
		{"--version before a command", []string{"--version", "run", "../../scenarios/seed/no-fault-chat.yaml"}, exitBadUsage, "--version takes no command"},
		{"run -v", []string{"run", "../../scenarios/seed/no-fault-chat.yaml", "-v"}, exitOK, "PASS seed"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			code, out, errOut := execute(t, tt.args...)
			if code != tt.wantCode || !strings.Contains(out+errOut, tt.want) || strings.Contains(out, "replaycheck "+versionString()+" ") {
				t.Errorf("exit %d, want %d and %q, no version line\nstdout:\n%s\nstderr:\n%s", code, tt.wantCode, tt.want, out, errOut)
			}
		})
	}
}

// TestVersionFlag: --version prints what the version command prints.
func TestVersionFlag(t *testing.T) {
	code, flag, errOut := execute(t, "--version")
	if code != exitOK {
		t.Fatalf("--version: exit %d\n%s", code, errOut)
	}
	_, cmd, _ := execute(t, "version")
	if flag != cmd || !strings.HasPrefix(flag, "replaycheck ") {
		t.Errorf("--version printed %q, version printed %q", flag, cmd)
	}
}

// TestRunOutputModes covers what run prints where: -q, -v, -vv, a report
// on stdout (the table then on stderr) and an empty shard.
func TestRunOutputModes(t *testing.T) {
	dir := t.TempDir()
	js := filepath.Join(dir, "run.json")
	tests := []struct {
		name     string
		args     []string
		wantCode int
		// stdout and stderr must hold want*, and not notWant*.
		wantOut, notWantOut, wantErr, notWantErr []string
		// stdoutIs parses stdout as a report format: json, junit, markdown.
		stdoutIs string
	}{
		{
			name: "quiet", args: []string{"run", "../../scenarios/seed", "--target", "builtin:naive", "-q"}, wantCode: exitRuleBroken,
			wantOut:    []string{"10 scenarios on builtin:naive: 6 pass, 4 fail", "FAIL seed chat fault_on on builtin:naive", "FAIL writes: expected 1 write, observed 3"},
			notWantOut: []string{"┌", "SCENARIO", "timeline:", "PASS "}, notWantErr: []string{"[1/10]", "[10/10]"},
		},
		{
			name: "quiet and verbose", args: []string{"run", "../../scenarios/seed", "-q", "-v"}, wantCode: exitBadUsage,
			wantErr: []string{"quiet", "verbose"},
		},
		{
			name: "verbose: passes on one line", args: []string{"run", "../../scenarios/seed/fault-on-chat.yaml", "-v"}, wantCode: exitOK,
			wantOut: []string{"PASS seed chat fault_on on builtin:guarded: ", "checks held; writes 1, upstream 2, MCP calls 1 in "}, notWantOut: []string{"timeline:"},
		},
		{
			name: "-vv: every timeline", args: []string{"run", "../../scenarios/seed/fault-on-chat.yaml", "-vv"}, wantCode: exitOK,
			wantOut: []string{"PASS seed chat fault_on on builtin:guarded (", "timeline:"},
		},
		{
			name: "json on stdout", args: []string{"run", "../../scenarios/seed/fault-on-chat.yaml", "--json", "-"}, wantCode: exitOK, stdoutIs: "json",
			wantErr: []string{"┌", "1 scenario on builtin:guarded: 1 pass"},
		},
		{
			name: "junit on stdout", args: []string{"run", "../../scenarios/seed/fault-on-chat.yaml", "--junit", "-", "--json", js}, wantCode: exitOK, stdoutIs: "junit",
			wantErr: []string{"1 scenario on builtin:guarded: 1 pass"},
		},
		{
			name: "markdown on stdout", args: []string{"run", "../../scenarios/seed/fault-on-chat.yaml", "--markdown", "-"}, wantCode: exitOK, stdoutIs: "markdown",
			wantErr: []string{"1 scenario on builtin:guarded: 1 pass"},
		},
		{
			name: "two reports on stdout", args: []string{"run", "../../scenarios/seed/fault-on-chat.yaml", "--markdown", "-", "--json", "-"}, wantCode: exitBadUsage,
			wantErr: []string{"--json - and --markdown -: only one report can be written to stdout"},
		},
		{
			name: "empty shard", args: []string{"run", "../../scenarios/seed", "--shard", "50/100", "--json", js}, wantCode: exitOK,
			wantOut: []string{"0 scenarios: 0 pass, 0 fail, 0 unknown"},
			wantErr: []string{"shard 50/100 selects no scenario (10 in the selection run on the targets): nothing to run"},
		},
		{
			// The README's CI command: the skip notice of the client
			// scenario goes to stderr, stdout is the JSON report alone.
			name: "quiet json on stdout with a skipped scenario", args: []string{"run", "../../scenarios/seed/fault-on-chat.yaml", "../../scenarios/clients/no-fault.yaml", "-q", "--json", "-"},
			wantCode: exitOK, stdoutIs: "json", wantErr: []string{"skipping 1 scenario run:"},
		},
		{
			name: "empty shard's json on stdout", args: []string{"run", "../../scenarios/seed", "--shard", "50/100", "--json", "-"}, wantCode: exitOK, stdoutIs: "empty json",
			wantErr: []string{"shard 50/100 selects no scenario"},
		},
		{
			name: "empty shard of an empty selection", args: []string{"run", "../../scenarios/seed", "--shard", "50/100", "--filter", "no such scenario"}, wantCode: exitBadUsage,
			wantErr: []string{"no scenario matches the selection"},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			os.Remove(js)
			code, out, errOut := execute(t, tt.args...)
			if code != tt.wantCode {
				t.Fatalf("exit %d, want %d\nstdout:\n%s\nstderr:\n%s", code, tt.wantCode, out, errOut)
			}
			check := func(where, text string, want, notWant []string) {
				for _, w := range want {
					if !strings.Contains(text, w) {
						t.Errorf("%s lacks %q:\n%s", where, w, text)
					}
				}
				for _, w := range notWant {
					if strings.Contains(text, w) {
						t.Errorf("%s holds %q:\n%s", where, w, text)
					}
				}
			}
			check("stdout", out, tt.wantOut, tt.notWantOut)
			check("stderr", errOut, tt.wantErr, tt.notWantErr)
			switch tt.stdoutIs {
			case "json", "empty json":
				want := 1
				if tt.stdoutIs == "empty json" {
					want = 0
				}
				if s, err := report.ReadJSON(strings.NewReader(out)); err != nil || !json.Valid([]byte(out)) || len(s.Results) != want {
					t.Errorf("stdout is not the JSON report of %d results (%v):\n%s", want, err, out)
				}
			case "junit":
				var v struct {
					Tests int `xml:"tests,attr"`
				}
				if err := xml.Unmarshal([]byte(out), &v); err != nil || v.Tests != 1 {
					t.Errorf("stdout is not the JUnit report (%v):\n%s", err, out)
				}
			case "markdown":
				if !strings.HasPrefix(out, "## ✅ replaycheck\n") {
					t.Errorf("stdout is not the Markdown summary:\n%s", out)
				}
			}
			if _, err := os.Stat("-"); err == nil {
				os.Remove("-")
				t.Errorf("a file named - was written")
			}
			if tt.name == "empty shard" {
				b, err := os.ReadFile(js)
				var s report.Suite
				if err == nil {
					err = json.Unmarshal(b, &s)
				}
				if err != nil || len(s.Results) != 0 || s.Run == nil || s.Run.Shard != "50/100" {
					t.Errorf("empty shard's JSON report (%v):\n%s", err, b)
				}
			}
		})
	}
}

// TestRunTableFitsWidth: the table is cut to the width given (the naive
// seed's table is 160 columns wide uncut, 109 at the narrowest).
func TestRunTableFitsWidth(t *testing.T) {
	var out, errOut bytes.Buffer
	err := runRun(t.Context(), &runOptions{
		Paths: []string{"../../scenarios/seed"}, Targets: []string{"builtin:naive"}, Timeout: time.Minute, Seed: "t",
		Out: &out, ErrOut: &errOut, Width: 120,
	})
	if exitCode(err) != exitRuleBroken {
		t.Fatalf("runRun: %v\n%s", err, errOut.String())
	}
	for _, l := range strings.Split(out.String(), "\n") {
		if strings.HasPrefix(l, "│") && utf8.RuneCountInString(l) > 120 {
			t.Errorf("table line of %d columns, want at most 120:\n%s", utf8.RuneCountInString(l), l)
		}
	}
	if !strings.Contains(out.String(), "│ writes, ups… │") {
		t.Errorf("the failed checks are not cut:\n%s", out.String())
	}
}

// TestIsolatedTargetStartFails: an isolated scenario whose proxy does not
// start fails alone (exit 1, its error and the proxy's output in the
// reports, the other results kept); a shared proxy that does not start ends
// the run with exit 3.
func TestIsolatedTargetStartFails(t *testing.T) {
	dir := t.TempDir()
	broken := filepath.Join(dir, "broken.yaml")
	if err := os.WriteFile(broken, []byte(`kind: proxy
name: broken
url: http://127.0.0.1:{{port}}
start: {command: [sh, -c, "echo fatal: cannot parse the config >&2; exit 3"]}
`), 0o644); err != nil {
		t.Fatal(err)
	}
	js := filepath.Join(dir, "run.json")
	tests := []struct {
		name     string
		paths    []string
		wantCode int
		// want maps "scenario on target" to its verdict in the JSON report.
		want map[string]rules.Status
	}{
		{
			name:     "isolated scenarios",
			paths:    []string{"../../scenarios/mcp/cancel.yaml", "../../scenarios/seed/stream-drop-fallback.yaml"},
			wantCode: exitRuleBroken,
			want: map[string]rules.Status{
				"mcp tool timeout cancels the call on builtin:guarded":   rules.Pass,
				"seed chat stream drop with fallback on builtin:guarded": rules.Pass,
				"mcp tool timeout cancels the call on broken":            rules.Fail,
				"seed chat stream drop with fallback on broken":          rules.Fail,
			},
		},
		{
			name:     "a shared scenario",
			paths:    []string{"../../scenarios/seed/fault-on-chat.yaml"},
			wantCode: exitCannotRun,
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			args := append([]string{"run", "--target", "builtin:guarded", "--target", broken, "--json", js}, tt.paths...)
			code, out, errOut := execute(t, args...)
			if code != tt.wantCode {
				t.Fatalf("exit %d, want %d\n%s%s", code, tt.wantCode, out, errOut)
			}
			if tt.want == nil {
				return
			}
			s, err := readReport(js)
			if err != nil {
				t.Fatal(err)
			}
			got := map[string]rules.Status{}
			for _, r := range s.Results {
				got[r.History.Scenario+" on "+r.History.Target] = r.Verdict
				if r.History.Target == "broken" && !strings.Contains(r.History.Error, "fatal: cannot parse the config") {
					t.Errorf("%s: error lacks the proxy's output:\n%s", r.History.Scenario, r.History.Error)
				}
			}
			if len(got) != len(tt.want) {
				t.Errorf("results %v, want %v", got, tt.want)
			}
			for k, v := range tt.want {
				if got[k] != v {
					t.Errorf("%s: %s, want %s", k, got[k], v)
				}
			}
			if !strings.Contains(out, "exited during start") {
				t.Errorf("the table does not show the start error:\n%s", out)
			}
		})
	}
}

// TestProgressHeartbeat drives the progress display with a fake clock: a
// slow target start is announced and its end reported, a fast one is not,
// slow runs get one heartbeat line at most every beatEvery, quiet mode
// prints no line per scenario, and names are escaped.
func TestProgressHeartbeat(t *testing.T) {
	t0 := time.Date(2025, 1, 1, 0, 0, 0, 0, time.UTC)
	at := func(d time.Duration) time.Time { return t0.Add(d) }
	type step struct {
		clock time.Duration
		event *run.Event
		beat  bool
		done  string // a scenario run that ends
	}
	tests := []struct {
		name  string
		quiet bool
		steps []step
		want  []string
	}{
		{
			name: "slow proxy start",
			steps: []step{
				{event: &run.Event{Kind: run.EventTargetStarting, Target: "litellm", At: at(0)}},
				{clock: time.Second, beat: true},
				{clock: 3 * time.Second, beat: true},
				{clock: 5 * time.Second, beat: true},
				{clock: 14 * time.Second, beat: true},
				{event: &run.Event{Kind: run.EventTargetReady, Target: "litellm", At: at(15 * time.Second), Elapsed: 15300 * time.Millisecond}},
			},
			want: []string{"waiting for target litellm to be ready… 3s", "waiting for target litellm to be ready… 14s", "target litellm ready in 15.3s"},
		},
		{
			name: "fast start, slow runs",
			steps: []step{
				{event: &run.Event{Kind: run.EventTargetStarting, Target: "builtin:guarded", At: at(0)}},
				{event: &run.Event{Kind: run.EventTargetReady, Target: "builtin:guarded", At: at(0), Elapsed: time.Millisecond}},
				{event: &run.Event{Kind: run.EventRunStarted, Target: "builtin:guarded", Scenario: "slow\x1b[2J", At: at(0)}},
				{event: &run.Event{Kind: run.EventRunStarted, Target: "builtin:guarded", Scenario: "slower", At: at(-time.Second)}},
				{clock: 4 * time.Second, beat: true},
				{clock: 7 * time.Second, beat: true},
				{clock: 12 * time.Second, beat: true},
				{done: "slower"},
				{clock: 17 * time.Second, beat: true},
			},
			want: []string{
				"still running: 2 runs for more than 5s, the longest slower on builtin:guarded… 8s",
				`[1/2] pass    slower on builtin:guarded`,
				`still running: slow\x1b[2J on builtin:guarded… 17s`,
			},
		},
		{
			name:  "quiet",
			quiet: true,
			steps: []step{
				{event: &run.Event{Kind: run.EventRunStarted, Target: "t", Scenario: "a", At: at(0)}},
				{done: "a"},
			},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var out bytes.Buffer
			clock := t0
			term := false
			p := newProgress(&runOptions{ErrOut: &out, Now: func() time.Time { return clock }, Terminal: &term, Quiet: tt.quiet}, 2)
			for _, s := range tt.steps {
				if s.clock != 0 {
					clock = at(s.clock)
				}
				switch {
				case s.event != nil:
					p.event(*s.event)
				case s.beat:
					p.heartbeat()
				case s.done != "":
					p.done(rules.Result{Verdict: rules.Pass, History: &history.History{Scenario: s.done, Target: "builtin:guarded"}})
				}
			}
			var got []string
			for _, l := range strings.Split(strings.TrimSpace(out.String()), "\n") {
				if l != "" {
					got = append(got, l)
				}
			}
			if len(got) != len(tt.want) {
				t.Fatalf("lines:\n%s\nwant:\n%s", strings.Join(got, "\n"), strings.Join(tt.want, "\n"))
			}
			for i, w := range tt.want {
				if !strings.HasPrefix(got[i], w) {
					t.Errorf("line %d: %q, want %q…", i+1, got[i], w)
				}
			}
		})
	}
}

// savedNaiveRun runs the scenarios at paths on builtin:naive, where a rule
// breaks, and returns the path of its JSON report.
func savedNaiveRun(t *testing.T, paths ...string) string {
	t.Helper()
	saved := filepath.Join(t.TempDir(), "naive.json")
	args := append(append([]string{"run"}, paths...), "--target", "builtin:naive", "--json", saved)
	if code, out, errOut := execute(t, args...); code != exitRuleBroken {
		t.Fatalf("saving a failing run: exit %d\n%s%s", code, out, errOut)
	}
	return saved
}

// failingWriter fails every write, as stdout on a full disk (/dev/full).
type failingWriter struct{}

func (failingWriter) Write([]byte) (int, error) { return 0, syscall.ENOSPC }

// TestExitCodeWhenStdoutFails: a broken rule exits 1 whatever happens to
// stdout, a run whose rules held exits 3 when its table or report cannot be
// written, and the write error is said either way.
func TestExitCodeWhenStdoutFails(t *testing.T) {
	saved := savedNaiveRun(t, "../../scenarios/seed/fault-on-chat.yaml")
	tests := []struct {
		name     string
		args     []string
		wantCode int
	}{
		{"broken rule, table", []string{"run", "../../scenarios/seed/fault-on-chat.yaml", "--target", "builtin:naive"}, exitRuleBroken},
		{"broken rule, quiet", []string{"run", "../../scenarios/seed/fault-on-chat.yaml", "--target", "builtin:naive", "-q"}, exitRuleBroken},
		{"broken rule, json on stdout", []string{"run", "../../scenarios/seed/fault-on-chat.yaml", "--target", "builtin:naive", "--json", "-"}, exitRuleBroken},
		{"rules held", []string{"run", "../../scenarios/seed/fault-on-chat.yaml"}, exitCannotRun},
		{"merge of a broken rule", []string{"report", "merge", saved}, exitRuleBroken},
		{"recheck of a broken rule", []string{"run", "--recheck", saved}, exitRuleBroken},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var errOut bytes.Buffer
			root := newRootCmd(strings.NewReader(""), failingWriter{}, &errOut)
			root.SetArgs(tt.args)
			err := root.ExecuteContext(context.Background())
			if code := exitCode(err); code != tt.wantCode || err == nil || !strings.Contains(err.Error(), "no space left on device") {
				t.Errorf("exit %d, want %d and the write error; error %v\nstderr:\n%s", code, tt.wantCode, err, errOut.String())
			}
		})
	}
}

// TestUnjudgedRunSaysSo: a run whose only non-pass is unknown (an armed
// fault that never fired) exits 1 saying it could not judge which run, not
// that a rule broke; and that fault is upstream fault 1 in the check's
// text, the JSON report and the HTML report alike.
func TestUnjudgedRunSaysSo(t *testing.T) {
	dir := t.TempDir()
	f, js, page := filepath.Join(dir, "unfired.yaml"), filepath.Join(dir, "run.json"), filepath.Join(dir, "run.html")
	src := `name: a fault that never fires
request: {endpoint: chat}
faults:
  upstream: [{on: follow_up, respond: {status: 500}, times: {nth: 3}}]
expect:
  writes: 1
  rules: [no-replay-after-dispatch]
`
	if err := os.WriteFile(f, []byte(src), 0o644); err != nil {
		t.Fatal(err)
	}
	var out, errOut bytes.Buffer
	root := newRootCmd(strings.NewReader(""), &out, &errOut)
	root.SetArgs([]string{"run", f, "--json", js, "--html", page})
	err := root.ExecuteContext(context.Background())
	if code := exitCode(err); code != exitRuleBroken || err == nil {
		t.Fatalf("exit %d, want %d\n%s%s", code, exitRuleBroken, out.String(), errOut.String())
	}
	if want := "no replay rule was broken, but replaycheck could not judge 1 scenario run: a fault that never fires on builtin:guarded"; !strings.Contains(err.Error(), want) || strings.Contains(err.Error(), "a replay rule was broken") {
		t.Errorf("error %q, want %q", err, want)
	}
	if text := out.String(); !strings.Contains(text, "cannot judge: upstream fault 1 {on: follow_up") || strings.Contains(text, "fault 0") {
		t.Errorf("the check does not name upstream fault 1:\n%s", text)
	}
	s, rerr := readReport(js)
	if rerr != nil || len(s.Results) != 1 || len(s.Results[0].History.Faults) != 1 || s.Results[0].History.Faults[0].Index != 1 {
		t.Fatalf("JSON report (%v): want one fault of index 1", rerr)
	}
	b, rerr := os.ReadFile(page)
	if rerr != nil || !strings.Contains(string(b), "upstream fault 1 ") || strings.Contains(string(b), "fault 0") {
		t.Errorf("HTML report (%v) does not name upstream fault 1", rerr)
	}
}

// TestReportOnStdoutIsAlone: every command that writes a report to stdout
// (FILE -, or baseline's default) writes it alone there; the table, the
// total and notices (a skipped client scenario) go to stderr.
func TestReportOnStdoutIsAlone(t *testing.T) {
	saved := savedNaiveRun(t, "../../scenarios/seed/fault-on-chat.yaml", "../../scenarios/clients/no-fault.yaml")
	isJSON := func(b string) error {
		if !json.Valid([]byte(b)) {
			return fmt.Errorf("not JSON")
		}
		return nil
	}
	isJUnit := func(b string) error {
		var v struct {
			XMLName xml.Name
		}
		if err := xml.NewDecoder(strings.NewReader(b)).Decode(&v); err != nil {
			return err
		}
		if !strings.HasPrefix(strings.TrimSpace(b), "<?xml") {
			return fmt.Errorf("does not start with the XML header")
		}
		return nil
	}
	isBaseline := func(b string) error {
		bl, err := baseline.Parse("stdout", []byte(b))
		if err == nil && len(bl.Entries) == 0 {
			err = fmt.Errorf("no entries")
		}
		return err
	}
	tests := []struct {
		name     string
		args     []string
		wantCode int
		parse    func(string) error
	}{
		{"run --json -", []string{"run", "../../scenarios/seed/fault-on-chat.yaml", "../../scenarios/clients/no-fault.yaml", "--target", "builtin:naive", "--json", "-"}, exitRuleBroken, isJSON},
		{"run --junit -", []string{"run", "../../scenarios/seed/fault-on-chat.yaml", "../../scenarios/clients/no-fault.yaml", "--target", "builtin:naive", "--junit", "-"}, exitRuleBroken, isJUnit},
		{"baseline", []string{"baseline", "../../scenarios/seed/fault-on-chat.yaml", "../../scenarios/clients/no-fault.yaml", "--target", "builtin:naive"}, exitOK, isBaseline},
		{"report merge --json -", []string{"report", "merge", saved, "--json", "-"}, exitRuleBroken, isJSON},
		{"report merge --junit -", []string{"report", "merge", saved, "--junit", "-"}, exitRuleBroken, isJUnit},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			code, out, errOut := execute(t, tt.args...)
			if code != tt.wantCode {
				t.Fatalf("exit %d, want %d\n%s%s", code, tt.wantCode, out, errOut)
			}
			if err := tt.parse(out); err != nil || strings.Contains(out, "skipping") || strings.Contains(out, "on builtin:naive: ") {
				t.Errorf("stdout is not the report alone (%v):\n%s", err, out)
			}
			if !strings.Contains(errOut, "on builtin:naive") {
				t.Errorf("stderr lacks the total:\n%s", errOut)
			}
		})
	}
}

// TestRunOutcomeNamesWhatFailed: "a replay rule was broken" only when one
// was; a run that failed only its plain expectations says so and names the
// run (exit 1); a scenario that did not apply is skipped beside a pass (exit
// 0), and a run where none applied is a usage error (exit 2).
func TestRunOutcomeNamesWhatFailed(t *testing.T) {
	const gemini = `name: gemini only
request: {endpoint: chat}
faults:
  upstream: [{on: follow_up, endpoint: gemini, respond: {status: 500}}]
expect:
  writes: 1
  rules: [no-replay-after-dispatch]
`
	const seedFault = `name: fault on
request: {endpoint: chat}
faults:
  upstream: [{on: follow_up, respond: {status: 500}}]
expect:
  writes: 1
  rules: [no-replay-after-dispatch]
`
	const plain = `name: no fault
request: {endpoint: chat}
expect:
  writes: %d
  rules: [no-replay-after-dispatch]
`
	tests := []struct {
		name     string
		files    []string
		args     []string
		wantCode int
		wantErr  string
		wantOut  []string
	}{
		{"an expectation failed", []string{fmt.Sprintf(plain, 2)}, nil, exitRuleBroken,
			"no replay rule was broken, but 1 scenario run did not meet the scenario's expectations: no fault on builtin:guarded", nil},
		{"a rule was broken", []string{seedFault}, []string{"--target", "builtin:naive"}, exitRuleBroken, "", nil},
		{"skipped beside a pass", []string{gemini, fmt.Sprintf(plain, 1)}, nil, exitOK, "", []string{
			"2 scenarios on builtin:guarded: 1 pass, 0 fail, 0 unknown, 1 skipped (not applicable)",
			"skipped gemini only on builtin:guarded: not applicable: the target spoke OpenAI Chat Completions, not streamed; this scenario's faults act on Gemini generateContent"}},
		{"nothing applied", []string{gemini}, nil, exitBadUsage, "no scenario applied to the target: the one scenario run was skipped", nil},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			dir := t.TempDir()
			args := []string{"run"}
			for i, src := range tt.files {
				f := filepath.Join(dir, fmt.Sprintf("s%d.yaml", i))
				if err := os.WriteFile(f, []byte(src), 0o644); err != nil {
					t.Fatal(err)
				}
				args = append(args, f)
			}
			var out, errOut bytes.Buffer
			root := newRootCmd(strings.NewReader(""), &out, &errOut)
			root.SetArgs(append(args, tt.args...))
			err := root.ExecuteContext(context.Background())
			if code := exitCode(err); code != tt.wantCode {
				t.Fatalf("exit %d, want %d (%v)\n%s%s", code, tt.wantCode, err, out.String(), errOut.String())
			}
			if tt.wantErr != "" && (err == nil || !strings.Contains(err.Error(), tt.wantErr) || strings.Contains(err.Error(), "a replay rule was broken")) {
				t.Errorf("error %v, want %q", err, tt.wantErr)
			}
			if np := (notPassed{}); tt.wantCode == exitRuleBroken && tt.wantErr == "" && (errors.As(err, &np) || err.Error() != errRulesBroken.Error()) {
				t.Errorf("error %v, want %v", err, errRulesBroken)
			}
			for _, w := range tt.wantOut {
				if !strings.Contains(out.String(), w) {
					t.Errorf("output lacks %q:\n%s", w, out.String())
				}
			}
		})
	}
}
