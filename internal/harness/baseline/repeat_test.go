package baseline

import (
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/replaycheck/replaycheck/internal/harness/history"
	"github.com/replaycheck/replaycheck/internal/harness/rules"
)

// repeated is a repeated scenario's runs judged together, the first failing
// one failing check.
func repeated(failing string, fails ...bool) rules.Result {
	var runs []rules.Result
	for i, f := range fails {
		s := rules.Pass
		if f {
			s = rules.Fail
		}
		r := result("race", "builtin:naive", "writes", rules.Pass, failing, s)
		r.History.Repetition = &history.Repetition{Index: i + 1, Of: len(fails)}
		runs = append(runs, r)
	}
	return rules.Aggregate(runs, 0)
}

// TestCheckRepeated checks that a repeated scenario is judged against a
// baseline by its rate (the repeat check) alone: which check its first
// failing run shows may change from one run of the suite to the next.
func TestCheckRepeated(t *testing.T) {
	b := Baseline{Entries: []Entry{entry("race", "builtin:naive", "repeat")}}
	tests := []struct {
		name string
		r    rules.Result
		want Verdict
	}{
		{"fails, as listed", repeated("no-replay-after-dispatch", false, true, true),
			Verdict{Scenario: "race", Target: "builtin:naive", Status: Known, Known: []string{"repeat"}}},
		{"fails on another check, still as listed", repeated("upstream[initial]", true, false, false),
			Verdict{Scenario: "race", Target: "builtin:naive", Status: Known, Known: []string{"repeat"}}},
		{"passes now", repeated("no-replay-after-dispatch", false, false, false),
			Verdict{Scenario: "race", Target: "builtin:naive", Status: Stale, Stale: []string{"repeat"}}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got := Check(b, []rules.Result{tt.r})
			if diff := cmp.Diff(tt.want, got.Verdicts[0]); diff != "" {
				t.Errorf("verdict (-want +got):\n%s", diff)
			}
		})
	}
	if got := FromResults([]rules.Result{repeated("writes", true, false)}).Entries; !cmp.Equal(got, b.Entries) {
		t.Errorf("FromResults = %v, want %v", got, b.Entries)
	}
}
