package main

import (
	"bytes"
	"context"
	"encoding/json"
	"encoding/xml"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/replaycheck/replaycheck/internal/harness/rules"
	"github.com/replaycheck/replaycheck/internal/harness/run"
	"github.com/replaycheck/replaycheck/internal/harness/scenario"
	"github.com/replaycheck/replaycheck/internal/harness/targetfile"
	"github.com/replaycheck/replaycheck/report"
	"github.com/replaycheck/replaycheck/scenarios"
)

// execute runs the root command with args and returns its exit code and output.
func execute(t *testing.T, args ...string) (int, string, string) {
	t.Helper()
	var out, errOut bytes.Buffer
	root := newRootCmd(strings.NewReader(""), &out, &errOut)
	root.SetArgs(args)
	err := root.ExecuteContext(context.Background())
	if err != nil && exitCode(err) != exitRuleBroken {
		errOut.WriteString(err.Error())
	}
	return exitCode(err), out.String(), errOut.String()
}

func TestRunSeedOnGuardedPasses(t *testing.T) {
	code, out, errOut := execute(t, "run", "../../scenarios/seed", "--parallel", "2")
	if code != exitOK {
		t.Fatalf("exit %d, want 0\n%s%s", code, out, errOut)
	}
	for _, want := range []string{"seed chat fault_on", "10 scenarios on builtin:guarded: 10 pass, 0 fail, 0 unknown"} {
		if !strings.Contains(out, want) {
			t.Errorf("output lacks %q:\n%s", want, out)
		}
	}
	// Progress goes to stderr.
	if !strings.Contains(errOut, "[10/10]") || strings.Contains(out, "[10/10]") {
		t.Errorf("progress lines not on stderr only:\nstdout:\n%s\nstderr:\n%s", out, errOut)
	}
}

// TestRunNaiveReportsBeforeCounts runs the seed suite on the naive gateway:
// exit 1, the Before counts in every report, and a JSON report that
// re-checks to the same verdicts.
func TestRunNaiveReportsBeforeCounts(t *testing.T) {
	dir := t.TempDir()
	junit, js, md := filepath.Join(dir, "junit.xml"), filepath.Join(dir, "run.json"), filepath.Join(dir, "summary.md")
	code, out, errOut := execute(t, "run", "../../scenarios/seed", "--target", "builtin:naive", "--junit", junit, "--json", js, "--markdown", md)
	if code != exitRuleBroken {
		t.Fatalf("exit %d, want 1\n%s%s", code, out, errOut)
	}
	if !strings.Contains(out, "FAIL writes: expected 1 write, observed 3") || !strings.Contains(out, "3 /v1/chat/completions follow_up injected_500") {
		t.Errorf("terminal report lacks the Before counts:\n%s", out)
	}
	b, err := os.ReadFile(junit)
	if err != nil {
		t.Fatal(err)
	}
	var suites struct {
		Tests    int `xml:"tests,attr"`
		Failures int `xml:"failures,attr"`
	}
	if err := xml.Unmarshal(b, &suites); err != nil || suites.Tests != 10 || suites.Failures != 4 {
		t.Errorf("JUnit: %+v, %v; want 10 tests, 4 failures", suites, err)
	}
	b, err = os.ReadFile(md)
	if err != nil || !strings.Contains(string(b), "| seed chat fault_on | builtin:naive | fail | 500 | 3 |") {
		t.Errorf("Markdown summary lacks the Before row (%v):\n%s", err, b)
	}
	b, err = os.ReadFile(js)
	if err != nil {
		t.Fatal(err)
	}
	var saved struct {
		Results []rules.Result `json:"results"`
	}
	if err := json.Unmarshal(b, &saved); err != nil || len(saved.Results) != 10 {
		t.Fatalf("JSON report: %d results, %v", len(saved.Results), err)
	}
	code, reout, _ := execute(t, "run", "--recheck", js)
	if code != exitRuleBroken || !strings.Contains(reout, "10 scenarios on builtin:naive: 6 pass, 4 fail, 0 unknown") {
		t.Errorf("recheck: exit %d\n%s", code, reout)
	}
}

func TestRunUsageErrors(t *testing.T) {
	bad := filepath.Join(t.TempDir(), "bad.yaml")
	if err := os.WriteFile(bad, []byte("name: x\nrequest: {endpoint: chat}\nexpect: {writes: 1, bogus: 2}\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	tests := []struct {
		name string
		args []string
		want string
	}{
		{"bad scenario file", []string{"run", bad}, bad + ":3:21: unknown field \"bogus\""},
		{"bad shard", []string{"run", "--shard", "4/3"}, "--shard"},
		{"bad target", []string{"run", "--target", "builtin:no-such-bug"}, `unknown builtin target name "no-such-bug"`},
		{"bad filter", []string{"run", "--filter", "("}, "--filter"},
		{"nothing selected", []string{"run", "../../scenarios/seed", "--tag", "no-such-tag"}, "no scenario matches"},
		{"unknown flag", []string{"run", "--paralel", "2"}, "unknown flag"},
		{"missing recheck file", []string{"run", "--recheck", "/no/such/file.json"}, "--recheck"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			code, out, errOut := execute(t, tt.args...)
			if code != exitBadUsage {
				t.Fatalf("exit %d, want 2\n%s%s", code, out, errOut)
			}
			if !strings.Contains(errOut, tt.want) {
				t.Errorf("error lacks %q:\n%s", tt.want, errOut)
			}
		})
	}
}

func TestRunShardsCoverTheSuiteOnce(t *testing.T) {
	seen := map[string]int{}
	for _, shard := range []string{"1/3", "2/3", "3/3"} {
		code, out, errOut := execute(t, "list", "../../scenarios", "--shard", shard)
		if code != exitOK {
			t.Fatalf("exit %d\n%s", code, errOut)
		}
		for _, line := range strings.Split(out, "\n") {
			if f := strings.Split(line, "│"); len(f) > 2 && !strings.Contains(f[1], "SCENARIO") {
				seen[strings.TrimSpace(f[1])]++
			}
		}
	}
	code, out, _ := execute(t, "list", "../../scenarios")
	if code != exitOK {
		t.Fatal(out)
	}
	total := strings.Count(out, "\n") - 5 // header lines, borders and the count line
	if len(seen) != total {
		t.Errorf("shards cover %d scenarios, the suite has %d", len(seen), total)
	}
	for name, n := range seen {
		if n != 1 {
			t.Errorf("%s is in %d shards", name, n)
		}
	}
}

func TestValidate(t *testing.T) {
	code, out, _ := execute(t, "validate", "../../scenarios")
	if code != exitOK || !strings.HasPrefix(out, "ok: ") {
		t.Fatalf("exit %d: %s", code, out)
	}
	code, _, errOut := execute(t, "validate", "../../internal/harness/scenario/testdata/bad")
	if code != exitBadUsage {
		t.Fatalf("exit %d, want 2", code)
	}
	bad, _ := filepath.Glob("../../internal/harness/scenario/testdata/bad/*.yaml")
	for _, f := range bad {
		if !strings.Contains(errOut, f+":") {
			t.Errorf("validate does not report %s:\n%s", f, errOut)
		}
	}
	if !strings.Contains(errOut, ">    5 |   wirtes: 2") {
		t.Errorf("validate does not show the offending line:\n%s", errOut)
	}
	empty := t.TempDir()
	code, out, errOut = execute(t, "validate", empty)
	if code != exitBadUsage || !strings.Contains(errOut, "no scenario in "+empty) {
		t.Errorf("validate of a directory without scenarios: exit %d, %q %q; want 2 and a message naming it", code, out, errOut)
	}
}

func TestSchemaCmd(t *testing.T) {
	code, out, _ := execute(t, "schema")
	var s map[string]any
	if code != exitOK || json.Unmarshal([]byte(out), &s) != nil || s["$defs"] == nil {
		t.Fatalf("exit %d, schema does not parse:\n%.300s", code, out)
	}
}

func TestListByTag(t *testing.T) {
	code, out, _ := execute(t, "list", "../../scenarios/seed", "--tag", "bug:replay-after-dispatch")
	if code != exitOK || !strings.Contains(out, "3 of 10 scenarios") || !strings.Contains(out, "seed messages fault_on") {
		t.Errorf("exit %d:\n%s", code, out)
	}
}

func TestHelpDocumentsExitCodes(t *testing.T) {
	_, out, _ := execute(t, "run", "--help")
	for _, want := range []string{"Exit codes:", "0    every rule held", "3    the harness or the target could not run", "130  interrupted (Ctrl-C or SIGTERM)", "Examples:"} {
		if !strings.Contains(out, want) {
			t.Errorf("run --help lacks %q", want)
		}
	}
}

func TestProgressInPlaceOnATerminal(t *testing.T) {
	var out bytes.Buffer
	term := true
	err := runRun(context.Background(), &runOptions{
		Paths:   []string{"../../scenarios/seed/no-fault-chat.yaml", "../../scenarios/seed/no-fault-responses.yaml"},
		Targets: []string{"builtin:guarded"}, Parallel: 1, Timeout: time.Minute, Seed: "t",
		Out: &out, ErrOut: &out, Terminal: &term,
	})
	if err != nil {
		t.Fatalf("runRun: %v\n%s", err, out.String())
	}
	s := out.String()
	if !strings.Contains(s, "\r\033[K[1/2] 0 not passing · pass ") || !strings.Contains(s, "\r\033[K[2/2]") {
		t.Errorf("no in-place progress:\n%q", s)
	}
	if strings.Contains(s, "[1/2] pass") {
		t.Errorf("plain progress lines on a terminal:\n%q", s)
	}
}

// TestRunEveryShardOfAHundred runs every shard I/100 of the built-in suite on
// the guarded gateway: a shard past the end of the suite is empty and exits
// 0, the others exit 0 or 1 as their results say, and together the shards
// run every scenario that runs on the target exactly once.
func TestRunEveryShardOfAHundred(t *testing.T) {
	if testing.Short() {
		t.Skip("runs the built-in suite in 100 shards")
	}
	all, err := scenario.LoadFS(scenarios.FS, ".", "builtin:scenarios")
	if err != nil {
		t.Fatal(err)
	}
	guarded, err := resolveTargets([]string{"builtin:guarded"}, targetfile.Options{})
	if err != nil {
		t.Fatal(err)
	}
	want := map[string]int{}
	for _, s := range all {
		if run.Applies(s, guarded[0]) {
			want[s.Name] = 1
		}
	}
	// The shards run eight at a time, as a CI matrix's jobs would: most of
	// a shard is its one scenario's waiting.
	type shardRun struct {
		code        int
		out, errOut string
		suite       report.Suite
		err         error
	}
	dir := t.TempDir()
	runs := make([]shardRun, 100)
	var wg sync.WaitGroup
	slots := make(chan struct{}, 8)
	for i := range runs {
		wg.Add(1)
		slots <- struct{}{}
		go func() {
			defer func() { <-slots; wg.Done() }()
			js := filepath.Join(dir, fmt.Sprintf("shard-%d.json", i+1))
			r := &runs[i]
			r.code, r.out, r.errOut = execute(t, "run", "--shard", fmt.Sprintf("%d/100", i+1), "--json", js)
			r.suite, r.err = readReport(js)
		}()
	}
	wg.Wait()
	got := map[string]int{}
	for i, r := range runs {
		shard := fmt.Sprintf("%d/100", i+1)
		if r.err != nil {
			t.Fatalf("--shard %s: exit %d, %v\n%s%s", shard, r.code, r.err, r.out, r.errOut)
		}
		wantCode := exitOK
		if tt := r.suite.Totals(); tt.Fail+tt.Unknown > 0 {
			wantCode = exitRuleBroken
		}
		if r.code != wantCode {
			t.Errorf("--shard %s: exit %d, want %d for its %d results\n%s%s", shard, r.code, wantCode, len(r.suite.Results), r.out, r.errOut)
		}
		for _, res := range r.suite.Results {
			got[res.History.Scenario]++
		}
	}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("scenarios run by the shards (-want +got):\n%s", diff)
	}
}
