package main

import (
	"encoding/xml"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/replaycheck/replaycheck/internal/harness/baseline"
)

const seedDir = "../../scenarios/seed"

// naiveBaseline writes the baseline of the seed suite on builtin:naive and
// returns its path and its entries.
func naiveBaseline(t *testing.T) (string, []baseline.Entry) {
	t.Helper()
	path := filepath.Join(t.TempDir(), "baseline.yaml")
	code, out, errOut := execute(t, "baseline", seedDir, "--target", "builtin:naive", "--output", path)
	if code != exitOK {
		t.Fatalf("baseline: exit %d\n%s%s", code, out, errOut)
	}
	b, err := baseline.Load(path)
	if err != nil {
		t.Fatal(err)
	}
	if want := fmt.Sprintf("baseline: %d entries from 4 failing scenario runs written to %s", len(b.Entries), path); !strings.Contains(out, want) {
		t.Errorf("baseline output lacks %q:\n%s", want, out)
	}
	return path, b.Entries
}

// writeEntries writes entries as a baseline file.
func writeEntries(t *testing.T, entries []baseline.Entry) string {
	t.Helper()
	path := filepath.Join(t.TempDir(), "edited.yaml")
	f, err := os.Create(path)
	if err != nil {
		t.Fatal(err)
	}
	if err := (baseline.Baseline{Entries: entries}).Write(f); err != nil {
		t.Fatal(err)
	}
	if err := f.Close(); err != nil {
		t.Fatal(err)
	}
	return path
}

// TestBaselineOfNaive writes the naive gateway's failures and checks the file
// lists exactly the seed's Before cases, the same bytes on every run.
func TestBaselineOfNaive(t *testing.T) {
	path, entries := naiveBaseline(t)
	failing := map[string]bool{}
	for _, e := range entries {
		if e.Target != "builtin:naive" {
			t.Errorf("entry on another target: %v", e)
		}
		failing[e.Scenario] = true
	}
	for _, s := range []string{"seed chat fault_on", "seed responses fault_on", "seed messages fault_on", "seed chat stream drop with fallback"} {
		if !failing[s] {
			t.Errorf("the baseline lacks %q", s)
		}
	}
	if len(failing) != 4 {
		t.Errorf("the baseline lists %d scenarios, want the 4 Before cases: %v", len(failing), failing)
	}
	if !containsEntry(entries, baseline.Entry{Scenario: "seed chat fault_on", Target: "builtin:naive", Rule: "no-replay-after-dispatch"}) {
		t.Errorf("the baseline lacks the chat case's broken rule:\n%v", entries)
	}
	file, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	code, stdout, stderr := execute(t, "baseline", seedDir, "--target", "builtin:naive", "--parallel", "3", "--seed", "another")
	if code != exitOK {
		t.Fatalf("baseline to stdout: exit %d\n%s", code, stderr)
	}
	if stdout != string(file) {
		t.Errorf("a second run writes other bytes (-file +stdout):\n-%s\n+%s", file, stdout)
	}
	if !strings.Contains(stderr, "written to stdout") || !strings.Contains(stderr, "[10/10]") {
		t.Errorf("progress and summary belong on stderr when the baseline goes to stdout:\n%s", stderr)
	}
}

func containsEntry(es []baseline.Entry, e baseline.Entry) bool {
	for _, x := range es {
		if x == e {
			return true
		}
	}
	return false
}

// TestRunWithBaseline adopts the naive baseline and walks its life: known
// failures pass, a failure it does not list fails, an entry whose check now
// holds fails as stale, and entries of scenarios or targets not run are
// neither.
func TestRunWithBaseline(t *testing.T) {
	path, entries := naiveBaseline(t)
	var withoutChat, onGuarded []baseline.Entry
	for _, e := range entries {
		if e.Scenario != "seed chat fault_on" {
			withoutChat = append(withoutChat, e)
		}
		// The same gateway after the fix: the entries name the target the run uses.
		e.Target = "builtin:guarded"
		onGuarded = append(onGuarded, e)
	}
	notMessages := 0
	for _, e := range entries {
		if e.Scenario != "seed messages fault_on" {
			notMessages++
		}
	}
	tests := []struct {
		name     string
		args     []string
		baseline string
		want     int
		wantOut  []string
	}{
		{
			name: "naive with its own baseline: known failures only", args: []string{"--target", "builtin:naive"}, baseline: path, want: exitOK,
			wantOut: []string{
				"KNOWN FAILURE (baseline) seed chat fault_on on builtin:naive",
				"10 scenarios on builtin:naive: 6 pass, 4 fail, 0 unknown",
				"baseline " + path + ": 4 known failures, 0 new failures, 0 stale entries: passes",
			},
		},
		{
			name: "a failure the baseline does not list is new", args: []string{"--target", "builtin:naive"}, baseline: writeEntries(t, withoutChat), want: exitRuleBroken,
			wantOut: []string{"FAIL (not in the baseline) seed chat fault_on on builtin:naive", "3 known failures, 1 new failure, 0 stale entries: FAILS"},
		},
		{
			name: "guarded with the naive baseline: its entries are of another target", args: []string{"--target", "builtin:guarded"}, baseline: path, want: exitOK,
			wantOut: []string{fmt.Sprintf("%d baseline entries not checked: scenario or target not in this run", len(entries)), "0 known failures, 0 new failures, 0 stale entries: passes"},
		},
		{
			name: "the gateway fixed under the same target: every entry is stale", args: []string{"--target", "builtin:guarded"}, baseline: writeEntries(t, onGuarded), want: exitRuleBroken,
			wantOut: []string{
				fmt.Sprintf("0 known failures, 0 new failures, %d stale entries: FAILS", len(entries)),
				`STALE baseline entry {scenario: "seed chat fault_on", target: "builtin:guarded", rule: "no-replay-after-dispatch"} now passes: remove it`,
			},
		},
		{
			name: "scenarios filtered out are neither used nor stale", args: []string{"--target", "builtin:naive", "--filter", "messages"}, baseline: path, want: exitOK,
			wantOut: []string{fmt.Sprintf("%d baseline entries not checked", notMessages), "1 known failure, 0 new failures, 0 stale entries: passes"},
		},
		{
			name: "one shard of three", args: []string{"--target", "builtin:naive", "--shard", "2/3"}, baseline: path, want: exitOK,
			wantOut: []string{"baseline entries not checked", "0 new failures, 0 stale entries: passes"},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			args := append([]string{"run", seedDir, "--baseline", tt.baseline}, tt.args...)
			code, out, errOut := execute(t, args...)
			if code != tt.want {
				t.Fatalf("exit %d, want %d\n%s%s", code, tt.want, out, errOut)
			}
			for _, w := range tt.wantOut {
				if !strings.Contains(out, w) {
					t.Errorf("output lacks %q:\n%s", w, out)
				}
			}
		})
	}
}

// TestBaselineInReports checks that JUnit skips known failures and the
// Markdown summary shows the baseline's outcome.
func TestBaselineInReports(t *testing.T) {
	path, _ := naiveBaseline(t)
	dir := t.TempDir()
	junit, md := filepath.Join(dir, "junit.xml"), filepath.Join(dir, "summary.md")
	code, out, errOut := execute(t, "run", seedDir, "--target", "builtin:naive", "--baseline", path, "--junit", junit, "--markdown", md)
	if code != exitOK {
		t.Fatalf("exit %d\n%s%s", code, out, errOut)
	}
	b, err := os.ReadFile(junit)
	if err != nil {
		t.Fatal(err)
	}
	// junit-10.xsd has skipped on <testsuite> only.
	var suites struct {
		Tests    int `xml:"tests,attr"`
		Failures int `xml:"failures,attr"`
		Suites   []struct {
			Skipped int `xml:"skipped,attr"`
		} `xml:"testsuite"`
	}
	err = xml.Unmarshal(b, &suites)
	skipped := 0
	for _, s := range suites.Suites {
		skipped += s.Skipped
	}
	if err != nil || suites.Tests != 10 || suites.Failures != 0 || skipped != 4 {
		t.Errorf("JUnit: %+v, %v; want 10 tests, 0 failures, 4 skipped", suites, err)
	}
	b, err = os.ReadFile(md)
	if err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{"## ✅ replaycheck", "- baseline " + path + ": 4 known failures", "| seed chat fault_on | builtin:naive | fail | 500 | 3 | 3 | 3 | 3 |", "| known |"} {
		if !strings.Contains(string(b), want) {
			t.Errorf("Markdown lacks %q:\n%s", want, b)
		}
	}
}

// TestBaselineFromRecheck writes the baseline of a saved run without running
// again: the same file as from the run.
func TestBaselineFromRecheck(t *testing.T) {
	path, _ := naiveBaseline(t)
	js := filepath.Join(t.TempDir(), "run.json")
	if code, out, errOut := execute(t, "run", seedDir, "--target", "builtin:naive", "--json", js); code != exitRuleBroken {
		t.Fatalf("run: exit %d\n%s%s", code, out, errOut)
	}
	code, stdout, stderr := execute(t, "baseline", "--recheck", js)
	if code != exitOK {
		t.Fatalf("baseline --recheck: exit %d\n%s", code, stderr)
	}
	want, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	if stdout != string(want) {
		t.Errorf("baseline from the saved run differs (-run +recheck):\n-%s\n+%s", want, stdout)
	}
	if code, out, errOut := execute(t, "run", "--recheck", js, "--baseline", path); code != exitOK {
		t.Errorf("run --recheck --baseline: exit %d\n%s%s", code, out, errOut)
	}
}

func TestBaselineUsageErrors(t *testing.T) {
	dir := t.TempDir()
	bad := filepath.Join(dir, "bad.yaml")
	if err := os.WriteFile(bad, []byte("- {scenario: a, target: builtin:naive, rule: writes}\n- {scenario: b, target: builtin:naive, check: writes}\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	tests := []struct {
		name string
		args []string
		want int
		msg  string
	}{
		{"missing baseline file", []string{"run", seedDir, "--baseline", filepath.Join(dir, "missing.yaml")}, exitBadUsage, "reading baseline"},
		{"bad baseline file", []string{"run", seedDir, "--baseline", bad}, exitBadUsage, bad + ":2:40: unknown field \"check\""},
		{"baseline takes run's selection flags", []string{"baseline", seedDir, "--shard", "4/3"}, exitBadUsage, "--shard"},
		{"baseline has no --baseline", []string{"baseline", seedDir, "--baseline", bad}, exitBadUsage, "unknown flag"},
		{"unwritable output", []string{"baseline", seedDir, "--filter", "no fault", "--output", filepath.Join(dir, "no", "such", "dir", "b.yaml")}, exitCannotRun, "writing baseline"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			code, out, errOut := execute(t, tt.args...)
			if code != tt.want {
				t.Fatalf("exit %d, want %d\n%s%s", code, tt.want, out, errOut)
			}
			if !strings.Contains(errOut, tt.msg) {
				t.Errorf("error lacks %q:\n%s", tt.msg, errOut)
			}
		})
	}
}

// TestShardBaselinesConcatenate writes one baseline per shard and checks that
// the files, concatenated, are the baseline of the whole suite.
func TestShardBaselinesConcatenate(t *testing.T) {
	path, whole := naiveBaseline(t)
	var concatenated strings.Builder
	for _, shard := range []string{"1/3", "2/3", "3/3"} {
		code, stdout, stderr := execute(t, "baseline", seedDir, "--target", "builtin:naive", "--shard", shard)
		if code != exitOK {
			t.Fatalf("shard %s: exit %d\n%s", shard, code, stderr)
		}
		concatenated.WriteString(stdout)
	}
	got, err := baseline.Parse("concatenated.yaml", []byte(concatenated.String()))
	if err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff(whole, got.Entries); diff != "" {
		t.Errorf("shard baselines differ from %s (-whole +shards):\n%s", path, diff)
	}
}
