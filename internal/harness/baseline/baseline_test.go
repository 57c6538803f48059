package baseline

import (
	"bytes"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"unicode/utf8"

	"github.com/google/go-cmp/cmp"

	"github.com/replaycheck/replaycheck/internal/harness/history"
	"github.com/replaycheck/replaycheck/internal/harness/rules"
	"github.com/replaycheck/replaycheck/internal/yamlfile"
)

// result builds a result of scenario on target whose checks have the given
// statuses, in order.
func result(scenario, target string, checks ...any) rules.Result {
	r := rules.Result{History: &history.History{Scenario: scenario, Target: target}}
	for i := 0; i+1 < len(checks); i += 2 {
		r.Verdicts = append(r.Verdicts, rules.Verdict{Check: checks[i].(string), Status: checks[i+1].(rules.Status)})
	}
	r.Verdict = rules.Overall(r.Verdicts)
	return r
}

func entry(scenario, target, rule string) Entry {
	return Entry{Scenario: scenario, Target: target, Rule: rule}
}

func TestCheck(t *testing.T) {
	const naive, guarded = "builtin:naive", "builtin:guarded"
	tests := []struct {
		name       string
		entries    []Entry
		results    []rules.Result
		want       []Verdict
		wantNotRun []Entry
		wantBroken bool
	}{
		{
			name:    "no baseline, all pass",
			results: []rules.Result{result("a", guarded, "writes", rules.Pass)},
			want:    []Verdict{{Scenario: "a", Target: guarded, Status: Pass}},
		},
		{
			name:       "no baseline, a failure is new",
			results:    []rules.Result{result("a", naive, "writes", rules.Fail, "status", rules.Pass)},
			want:       []Verdict{{Scenario: "a", Target: naive, Status: New, New: []string{"writes"}}},
			wantBroken: true,
		},
		{
			name:    "listed failures are known",
			entries: []Entry{entry("a", naive, "writes"), entry("a", naive, "no-replay-after-dispatch")},
			results: []rules.Result{result("a", naive, "writes", rules.Fail, "no-replay-after-dispatch", rules.Fail, "status", rules.Pass)},
			want:    []Verdict{{Scenario: "a", Target: naive, Status: Known, Known: []string{"writes", "no-replay-after-dispatch"}}},
		},
		{
			name:    "unknown is listable like a failure",
			entries: []Entry{entry("a", naive, "cancel-propagates")},
			results: []rules.Result{result("a", naive, "cancel-propagates", rules.Unknown)},
			want:    []Verdict{{Scenario: "a", Target: naive, Status: Known, Known: []string{"cancel-propagates"}}},
		},
		{
			name:       "an unknown that is not listed is new",
			results:    []rules.Result{result("a", naive, "cancel-propagates", rules.Unknown)},
			want:       []Verdict{{Scenario: "a", Target: naive, Status: New, New: []string{"cancel-propagates"}}},
			wantBroken: true,
		},
		{
			name:       "a second failure in a known scenario is new",
			entries:    []Entry{entry("a", naive, "writes")},
			results:    []rules.Result{result("a", naive, "writes", rules.Fail, "upstream[initial]", rules.Fail)},
			want:       []Verdict{{Scenario: "a", Target: naive, Status: New, Known: []string{"writes"}, New: []string{"upstream[initial]"}}},
			wantBroken: true,
		},
		{
			name:       "a listed check that holds is stale",
			entries:    []Entry{entry("a", naive, "writes")},
			results:    []rules.Result{result("a", naive, "writes", rules.Pass)},
			want:       []Verdict{{Scenario: "a", Target: naive, Status: Stale, Stale: []string{"writes"}}},
			wantBroken: true,
		},
		{
			name:       "a listed check the scenario no longer makes is stale",
			entries:    []Entry{entry("a", naive, "no-splice")},
			results:    []rules.Result{result("a", naive, "writes", rules.Pass)},
			want:       []Verdict{{Scenario: "a", Target: naive, Status: Stale, Stale: []string{"no-splice"}}},
			wantBroken: true,
		},
		{
			name:       "the naive baseline on guarded: nothing ran on naive",
			entries:    []Entry{entry("a", naive, "writes")},
			results:    []rules.Result{result("a", guarded, "writes", rules.Pass)},
			want:       []Verdict{{Scenario: "a", Target: guarded, Status: Pass}},
			wantNotRun: []Entry{entry("a", naive, "writes")},
		},
		{
			name:       "an entry of the same scenario on another target does not cover it",
			entries:    []Entry{entry("a", guarded, "writes")},
			results:    []rules.Result{result("a", naive, "writes", rules.Fail)},
			want:       []Verdict{{Scenario: "a", Target: naive, Status: New, New: []string{"writes"}}},
			wantNotRun: []Entry{entry("a", guarded, "writes")},
			wantBroken: true,
		},
		{
			name:       "scenarios selected out are neither used nor stale",
			entries:    []Entry{entry("a", naive, "writes"), entry("b", naive, "writes"), entry("c", naive, "status")},
			results:    []rules.Result{result("b", naive, "writes", rules.Fail)},
			want:       []Verdict{{Scenario: "b", Target: naive, Status: Known, Known: []string{"writes"}}},
			wantNotRun: []Entry{entry("a", naive, "writes"), entry("c", naive, "status")},
		},
		{
			name:       "new beats stale beats known in one result",
			entries:    []Entry{entry("a", naive, "status"), entry("a", naive, "writes")},
			results:    []rules.Result{result("a", naive, "writes", rules.Fail, "status", rules.Pass, "no-splice", rules.Fail)},
			want:       []Verdict{{Scenario: "a", Target: naive, Status: New, Known: []string{"writes"}, New: []string{"no-splice"}, Stale: []string{"status"}}},
			wantBroken: true,
		},
		{
			name:       "a result with no verdicts is listed as completed",
			results:    []rules.Result{result("a", naive)},
			want:       []Verdict{{Scenario: "a", Target: naive, Status: New, New: []string{"completed"}}},
			wantBroken: true,
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got := Check(Baseline{File: "b.yaml", Entries: tt.entries}, tt.results)
			if diff := cmp.Diff(tt.want, got.Verdicts); diff != "" {
				t.Errorf("verdicts (-want +got):\n%s", diff)
			}
			if diff := cmp.Diff(tt.wantNotRun, got.NotRun); diff != "" {
				t.Errorf("not run (-want +got):\n%s", diff)
			}
			if got.Broken() != tt.wantBroken {
				t.Errorf("Broken() = %v, want %v", got.Broken(), tt.wantBroken)
			}
			if got.File != "b.yaml" {
				t.Errorf("File = %q", got.File)
			}
		})
	}
}

// TestFromResultsIsItsOwnBaseline checks that the baseline written from a
// run's results makes the same results all known, in any result order.
func TestFromResultsIsItsOwnBaseline(t *testing.T) {
	results := []rules.Result{
		result("seed chat fault_on", "builtin:naive", "status", rules.Pass, "writes", rules.Fail, "no-replay-after-dispatch", rules.Fail),
		result("no fault", "builtin:naive", "writes", rules.Pass),
		result("cancel", "builtin:naive", "cancel-propagates", rules.Unknown),
		result("seed chat fault_on", "builtin:guarded", "writes", rules.Pass),
		// Not applicable: no failure to know.
		result("gemini cut", "builtin:guarded", rules.CheckApplies, rules.Skipped),
	}
	b := FromResults(results)
	want := []Entry{
		entry("cancel", "builtin:naive", "cancel-propagates"),
		entry("seed chat fault_on", "builtin:naive", "no-replay-after-dispatch"),
		entry("seed chat fault_on", "builtin:naive", "writes"),
	}
	if diff := cmp.Diff(want, b.Entries); diff != "" {
		t.Fatalf("entries (-want +got):\n%s", diff)
	}
	o := Check(b, results)
	if o.Broken() || len(o.NotRun) != 0 {
		t.Fatalf("own baseline is broken: %+v", o)
	}
	if diff := cmp.Diff(Tally{Pass: 3, Known: 2}, o.Tally()); diff != "" {
		t.Errorf("tally (-want +got):\n%s", diff)
	}
	reversed := []rules.Result{results[4], results[3], results[2], results[1], results[0]}
	var first, second bytes.Buffer
	if err := b.Write(&first); err != nil {
		t.Fatal(err)
	}
	if err := FromResults(reversed).Write(&second); err != nil {
		t.Fatal(err)
	}
	if first.String() != second.String() {
		t.Errorf("result order changes the file:\n%s\n%s", first.String(), second.String())
	}
}

func TestWriteGolden(t *testing.T) {
	b := Baseline{Entries: []Entry{
		entry("seed chat fault_on", "builtin:naive", "writes"),
		entry("seed chat fault_on", "builtin:naive", "no-replay-after-dispatch"),
		entry(`quote " and: colon # hash`, "targets/litellm.yaml", "upstream[follow_up injected_500]"),
		entry("seed chat fault_on", "builtin:naive", "writes"),
	}}
	var got bytes.Buffer
	if err := b.Write(&got); err != nil {
		t.Fatal(err)
	}
	want := header +
		`- {scenario: "quote \" and: colon # hash", target: "targets/litellm.yaml", rule: "upstream[follow_up injected_500]"}` + "\n" +
		`- {scenario: "seed chat fault_on", target: "builtin:naive", rule: "no-replay-after-dispatch"}` + "\n" +
		`- {scenario: "seed chat fault_on", target: "builtin:naive", rule: "writes"}` + "\n"
	if diff := cmp.Diff(want, got.String()); diff != "" {
		t.Errorf("written baseline (-want +got):\n%s", diff)
	}
	back, err := Parse("b.yaml", got.Bytes())
	if err != nil {
		t.Fatal(err)
	}
	wantBack := []Entry{b.Entries[2], b.Entries[1], b.Entries[0]}
	if diff := cmp.Diff(wantBack, back.Entries); diff != "" {
		t.Errorf("read back (-want +got):\n%s", diff)
	}
}

func TestParse(t *testing.T) {
	tests := []struct {
		name    string
		src     string
		want    []Entry
		wantErr string
	}{
		{name: "empty file", src: "", want: nil},
		{name: "header only", src: header, want: nil},
		{
			name: "block style, unsorted",
			src:  "- scenario: b\n  target: builtin:naive\n  rule: writes\n- {scenario: a, target: builtin:naive, rule: status}\n",
			want: []Entry{entry("a", "builtin:naive", "status"), entry("b", "builtin:naive", "writes")},
		},
		{
			name: "concatenated shard files",
			src:  header + "- {scenario: a, target: t, rule: r}\n" + header + "- {scenario: b, target: t, rule: r}\n",
			want: []Entry{entry("a", "t", "r"), entry("b", "t", "r")},
		},
		{name: "unknown field", src: "- {scenario: a, target: t, rule: r}\n- {scenario: a, target: t, check: r}\n", wantErr: "b.yaml:2:28: unknown field \"check\""},
		{name: "not a list", src: "scenario: a\n", wantErr: "b.yaml:1:"},
		{name: "missing rule", src: "- {scenario: a, target: t, rule: r}\n- {scenario: a, target: t}\n", wantErr: "b.yaml:2:3: baseline entry needs rule"},
		{name: "empty fields", src: "- {scenario: \" \", target: \"\", rule: r}\n", wantErr: "b.yaml:1:3: baseline entry needs scenario, target"},
		{name: "listed twice", src: "- {scenario: a, target: t, rule: r}\n- {scenario: a, target: t, rule: r}\n", wantErr: "b.yaml:2:3: baseline entry {scenario: \"a\", target: \"t\", rule: \"r\"} is listed twice (first as entry 1)"},
		{name: "two documents", src: "- {scenario: a, target: t, rule: r}\n---\n- {scenario: b, target: t, rule: r}\n", wantErr: "b.yaml:3:1: want one YAML document"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := Parse("b.yaml", []byte(tt.src))
			if tt.wantErr != "" {
				var e *yamlfile.Error
				if err == nil || !errors.As(err, &e) || !strings.HasPrefix(err.Error(), tt.wantErr) {
					t.Fatalf("error %v, want a *yamlfile.Error starting %q", err, tt.wantErr)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if diff := cmp.Diff(tt.want, got.Entries); diff != "" {
				t.Errorf("entries (-want +got):\n%s", diff)
			}
			if got.File != "b.yaml" {
				t.Errorf("File = %q", got.File)
			}
		})
	}
}

func TestLoad(t *testing.T) {
	dir := t.TempDir()
	good := filepath.Join(dir, "baseline.yaml")
	if err := os.WriteFile(good, []byte("- {scenario: a, target: t, rule: r}\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	b, err := Load(good)
	if err != nil || len(b.Entries) != 1 || b.File != good {
		t.Fatalf("Load = %+v, %v", b, err)
	}
	if _, err := Load(filepath.Join(dir, "missing.yaml")); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("missing file: %v, want ErrNotExist", err)
	}
	big := filepath.Join(dir, "big.yaml")
	if err := os.WriteFile(big, bytes.Repeat([]byte("#"), MaxFileSize+1), 0o644); err != nil {
		t.Fatal(err)
	}
	if _, err := Load(big); err == nil || !strings.Contains(err.Error(), "larger than") {
		t.Errorf("oversized file: %v", err)
	}
}

// FuzzWriteParse checks that any entry written reads back as itself.
func FuzzWriteParse(f *testing.F) {
	f.Add("seed chat fault_on", "builtin:naive", "writes")
	f.Add(`a "quoted": name # not a comment`, "targets/x.yaml", "upstream[follow_up injected_500]")
	f.Add("tab\tnewline\nbell\a", "ünïcødé ✓", "\\back\\slash")
	f.Add("- [not, a, list]", "{x: y}", "&anchor *alias !tag")
	f.Fuzz(func(t *testing.T, scenario, target, rule string) {
		e := entry(scenario, target, rule)
		for _, s := range []string{scenario, target, rule} {
			if !utf8.ValidString(s) || strings.TrimSpace(s) == "" {
				t.Skip()
			}
		}
		var b bytes.Buffer
		if err := (Baseline{Entries: []Entry{e}}).Write(&b); err != nil {
			t.Fatal(err)
		}
		got, err := Parse("f.yaml", b.Bytes())
		if err != nil {
			t.Fatalf("%v\n%s", err, b.String())
		}
		if len(got.Entries) != 1 || got.Entries[0] != e {
			t.Fatalf("read back %+v, want %+v\n%s", got.Entries, e, b.String())
		}
	})
}
