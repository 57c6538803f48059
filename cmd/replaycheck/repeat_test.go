package main

import (
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"

	"github.com/replaycheck/replaycheck/internal/harness/rules"
)

// TestRunRepeat runs the seed's fault_on case with --repeat on both built-in
// gateways: every run is a run of its own in the progress, the reports show
// the rate, and the JSON report re-checks to the same rate.
func TestRunRepeat(t *testing.T) {
	dir := t.TempDir()
	js, md := filepath.Join(dir, "run.json"), filepath.Join(dir, "summary.md")
	tests := []struct {
		name     string
		args     []string
		wantCode int
		want     []string
	}{
		{name: "guarded", args: []string{"--target", "builtin:guarded"}, wantCode: exitOK,
			want: []string{"RUNS", "0/4 failed", "[4/4]", "run 4/4", "1 scenario (4 runs) on builtin:guarded: 1 pass, 0 fail, 0 unknown"}},
		{name: "naive", args: []string{"--target", "builtin:naive", "--json", js, "--markdown", md}, wantCode: exitRuleBroken,
			want: []string{"4/4 failed", "FAIL repeat: expected no run of 4 to fail, observed 4 of 4 runs failed: writes 3, ", "(runs 1, 2, 3, 4)", "(run 1 of 4)"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			args := append([]string{"run", "../../scenarios/seed/fault-on-chat.yaml", "--repeat", "4", "--parallel", "4"}, tt.args...)
			code, out, errOut := execute(t, args...)
			if code != tt.wantCode {
				t.Fatalf("exit %d, want %d\n%s%s", code, tt.wantCode, out, errOut)
			}
			// The table on stdout, the progress lines on stderr.
			out += errOut
			for _, w := range tt.want {
				if !strings.Contains(out, w) {
					t.Errorf("output lacks %q:\n%s", w, out)
				}
			}
		})
	}
	b, err := os.ReadFile(md)
	if err != nil || !strings.Contains(string(b), "| fail | 4/4 failed |") {
		t.Errorf("Markdown summary lacks the rate (%v):\n%s", err, b)
	}
	code, out, errOut := execute(t, "run", "--recheck", js)
	if code != exitRuleBroken || !strings.Contains(out, "4/4 failed") || !strings.Contains(out, "observed 4 of 4 runs failed") {
		t.Errorf("recheck: exit %d, want %d and the rate\n%s%s", code, exitRuleBroken, out, errOut)
	}
}

// TestRunRepeatScenarioThreshold runs a scenario file with its own repeat
// and allow_failures: every run writes 3 times on naive, which two allowed
// failures do not cover; on guarded it passes; --repeat 2 doubles both.
func TestRunRepeatScenarioThreshold(t *testing.T) {
	f := filepath.Join(t.TempDir(), "race.yaml")
	src := `name: follow-up 500, repeated
request: {endpoint: chat}
repeat: 3
faults:
  upstream: [{on: follow_up, respond: {status: 500}, times: always}]
expect:
  writes: 1
  allow_failures: 2
`
	if err := os.WriteFile(f, []byte(src), 0o644); err != nil {
		t.Fatal(err)
	}
	tests := []struct {
		target   string
		extra    []string
		wantCode int
		want     string
	}{
		{"builtin:naive", nil, exitRuleBroken, "expected at most 2 of 3 runs to fail, observed 3 of 3 runs failed: writes 3 (runs 1, 2, 3)"},
		{"builtin:guarded", nil, exitOK, "0/3 failed"},
		{"builtin:naive", []string{"--repeat", "2"}, exitRuleBroken, "expected at most 4 of 6 runs to fail, observed 6 of 6 runs failed"},
	}
	for _, tt := range tests {
		t.Run(tt.target+strings.Join(tt.extra, " "), func(t *testing.T) {
			code, out, errOut := execute(t, append([]string{"run", f, "--target", tt.target}, tt.extra...)...)
			if code != tt.wantCode || !strings.Contains(out, tt.want) {
				t.Errorf("exit %d, want %d and %q\n%s%s", code, tt.wantCode, tt.want, out, errOut)
			}
		})
	}
}

// TestRunRepeatBadInput checks that a bad --repeat and a bad repeat in a
// scenario file are usage errors that say what is wrong, and where.
func TestRunRepeatBadInput(t *testing.T) {
	f := filepath.Join(t.TempDir(), "bad.yaml")
	if err := os.WriteFile(f, []byte("name: bad\nrequest: {endpoint: chat}\nrepeat: 0\nexpect: {writes: 1}\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	tests := []struct {
		name string
		args []string
		want string
	}{
		{"flag zero", []string{"run", "../../scenarios/seed/no-fault-chat.yaml", "--repeat", "0"}, `invalid argument "0" for "--repeat" flag: want how many times to run each scenario, 1 or more`},
		{"flag negative", []string{"run", "../../scenarios/seed/no-fault-chat.yaml", "--repeat", "-2"}, `invalid argument "-2" for "--repeat" flag`},
		{"flag not a number", []string{"run", "../../scenarios/seed/no-fault-chat.yaml", "--repeat", "often"}, `invalid argument "often" for "--repeat" flag: want how many`},
		{"scenario repeat 0", []string{"run", f}, f + ":3:9: repeat 0: want the number of runs, 1 or more"},
		{"validate repeat 0", []string{"validate", f}, f + ":3:9: repeat 0"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			code, out, errOut := execute(t, tt.args...)
			if code != exitBadUsage || !strings.Contains(out+errOut, tt.want) {
				t.Errorf("exit %d, want %d and %q\n%s%s", code, exitBadUsage, tt.want, out, errOut)
			}
		})
	}
}

// TestRunRepeatBound: a run of more than run.MaxRuns scenario runs is a
// usage error naming --repeat, the bound and the scenario's repeat, before
// anything runs; a product that overflows an int is no exception.
func TestRunRepeatBound(t *testing.T) {
	f := filepath.Join(t.TempDir(), "four.yaml")
	if err := os.WriteFile(f, []byte("name: four\nrequest: {endpoint: chat}\nrepeat: 4\nexpect: {writes: 1}\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	tests := []struct {
		name string
		args []string
		want []string
	}{
		{"a large --repeat", []string{"run", "../../scenarios/seed", "--repeat", "100000000"}, []string{"more than 1000000 scenario runs", "--repeat 100000000", "lower --repeat"}},
		{"a product past an int", []string{"run", f, "--repeat", "2305843009213693952"}, []string{"more than 1000000 scenario runs", "the largest repeat is 4, of \"four\" (" + f + ":1)"}},
		{"just past the bound", []string{"run", f, "--repeat", "250001"}, []string{"more than 1000000 scenario runs"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			code, out, errOut := execute(t, tt.args...)
			if code != exitBadUsage {
				t.Fatalf("exit %d, want %d\n%s%s", code, exitBadUsage, out, errOut)
			}
			for _, w := range tt.want {
				if !strings.Contains(errOut, w) {
					t.Errorf("error lacks %q:\n%s", w, errOut)
				}
			}
			if strings.Contains(errOut, "[1/") {
				t.Errorf("runs started:\n%s", errOut)
			}
		})
	}
}

// TestRunLongRepeatKeepsFewRuns: a scenario repeated more than
// rules.KeptRuns times is judged on every run, its JSON report keeps the
// first KeptRuns runs' histories and counts the others, and --recheck of it
// is refused, saying why, rather than judging fewer runs.
func TestRunLongRepeatKeepsFewRuns(t *testing.T) {
	js := filepath.Join(t.TempDir(), "run.json")
	n := rules.KeptRuns + 20
	code, out, errOut := execute(t, "run", "../../scenarios/seed/no-fault-chat.yaml", "--repeat", strconv.Itoa(n), "--json", js, "--parallel", "8")
	if code != exitOK || !strings.Contains(errOut, fmt.Sprintf("[%d/%d]", n, n)) {
		t.Fatalf("exit %d, want 0 and the progress of every run\n%s%s", code, out, errOut)
	}
	suite, err := readReport(js)
	if err != nil || len(suite.Results) != 1 || suite.Results[0].Repeat == nil {
		t.Fatalf("report: %v, %d results", err, len(suite.Results))
	}
	rep := suite.Results[0].Repeat
	if rep.Runs != n || rep.Passed != n || len(rep.Results) != rules.KeptRuns || rep.Omitted != n-rules.KeptRuns {
		t.Errorf("repeat: %d runs, %d passed, %d kept, %d omitted; want %d, %d, %d, %d", rep.Runs, rep.Passed, len(rep.Results), rep.Omitted, n, n, rules.KeptRuns, n-rules.KeptRuns)
	}
	code, out, errOut = execute(t, "run", "--recheck", js)
	if want := fmt.Sprintf("ran %d times and the report keeps the histories of %d", n, rules.KeptRuns); code != exitBadUsage || !strings.Contains(errOut, want) {
		t.Errorf("recheck: exit %d, want %d and %q\n%s%s", code, exitBadUsage, want, out, errOut)
	}
}
