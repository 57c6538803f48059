package report

import (
	"errors"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/replaycheck/replaycheck/internal/harness/baseline"
	"github.com/replaycheck/replaycheck/internal/harness/rules"
)

// shardsOf splits s into one suite per result, as shards I/N of a run.
func shardsOf(s Suite) []Suite {
	var out []Suite
	for i, r := range s.Results {
		shard := Suite{Results: []rules.Result{r}, Wall: ms(float64(10 * (i + 1))), Run: &RunInfo{Replaycheck: "v1.2.3", Seed: "replaycheck",
			Shard: string(rune('1'+i)) + "/" + string(rune('0'+len(s.Results)))}}
		if s.Baseline != nil {
			b := *s.Baseline
			b.Verdicts = []baseline.Verdict{s.Baseline.Verdicts[i]}
			shard.Baseline = &b
		}
		out = append(out, shard)
	}
	return out
}

// mergeSummary is what a merged suite is judged by.
type mergeSummary struct {
	Rows                  []string // scenario on target: verdict
	Scenarios, Pass, Fail int
	Unknown               int
	Run                   RunInfo
	Wall                  string
	Broken                bool
	NotRun                int
	Abort                 string
}

func summarize(s Suite) mergeSummary {
	t := s.Totals()
	m := mergeSummary{Scenarios: t.Scenarios, Pass: t.Pass, Fail: t.Fail, Unknown: t.Unknown, Wall: s.Wall.D().String()}
	for _, r := range s.Results {
		m.Rows = append(m.Rows, r.History.Scenario+" on "+r.History.Target+": "+string(r.Verdict))
	}
	if s.Run != nil {
		m.Run = *s.Run
	}
	if s.Baseline != nil {
		m.Broken, m.NotRun = s.Baseline.Broken(), len(s.Baseline.NotRun)
	}
	if s.Abort != nil {
		m.Abort = string(s.Abort.Kind) + ": " + s.Abort.Error
	}
	return m
}

func TestMerge(t *testing.T) {
	// A saved verdict is kept even where the history would now judge
	// otherwise: merge joins reports, it does not check.
	savedPass := fixture()
	savedPass.Results[1].Verdict = rules.Pass
	interrupted := shardsOf(fixture())
	interrupted[1].Results = nil
	interrupted[1].Abort = interruptedFixture().Abort

	tests := []struct {
		name    string
		names   []string
		suites  []Suite
		want    mergeSummary
		wantErr string
	}{
		{"two shards", []string{"a.json", "b.json"}, shardsOf(fixture()), mergeSummary{
			Rows:      []string{"chat follow-up 500 after tool ran on builtin:guarded: pass", "chat follow-up 500 after tool ran on builtin:naive: fail"},
			Scenarios: 2, Pass: 1, Fail: 1, Run: RunInfo{Replaycheck: "v1.2.3", Seed: "replaycheck", Shard: "1/2, 2/2"}, Wall: "20ms",
		}, ""},
		{"saved verdicts kept", []string{"a.json", "b.json"}, shardsOf(savedPass), mergeSummary{
			Rows:      []string{"chat follow-up 500 after tool ran on builtin:guarded: pass", "chat follow-up 500 after tool ran on builtin:naive: pass"},
			Scenarios: 2, Pass: 2, Run: RunInfo{Replaycheck: "v1.2.3", Seed: "replaycheck", Shard: "1/2, 2/2"}, Wall: "20ms",
		}, ""},
		{"with a baseline", []string{"a.json", "b.json", "c.json"}, shardsOf(baselineFixture()), mergeSummary{
			Rows: []string{"chat follow-up 500 after tool ran on builtin:guarded: pass", "chat follow-up 500 after tool ran on builtin:naive: fail",
				"chat follow-up 500, known on builtin:naive: fail"},
			Scenarios: 3, Pass: 1, Fail: 2, Run: RunInfo{Replaycheck: "v1.2.3", Seed: "replaycheck", Shard: "1/3, 2/3, 3/3"}, Wall: "30ms",
			Broken: true, NotRun: 1,
		}, ""},
		{"an interrupted shard", []string{"a.json", "b.json"}, interrupted, mergeSummary{
			Rows:      []string{"chat follow-up 500 after tool ran on builtin:guarded: pass"},
			Scenarios: 1, Pass: 1, Run: RunInfo{Replaycheck: "v1.2.3", Seed: "replaycheck", Shard: "1/2, 2/2"}, Wall: "20ms",
			Abort: "interrupted: b.json: terminated signal received",
		}, ""},
		{"duplicate", []string{"a.json", "b.json"}, []Suite{fixture(), shardsOf(fixture())[1]}, mergeSummary{},
			`"chat follow-up 500 after tool ran" on builtin:naive is in both a.json and b.json`},
		{"baseline on one only", []string{"a.json", "b.json"}, []Suite{shardsOf(baselineFixture())[0], shardsOf(fixture())[1]}, mergeSummary{},
			"a.json was judged against a baseline and b.json against none"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := Merge(tt.names, tt.suites)
			if tt.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), tt.wantErr) {
					t.Fatalf("error %v, want one with %q", err, tt.wantErr)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if diff := cmp.Diff(tt.want, summarize(got)); diff != "" {
				t.Errorf("merged (-want +got):\n%s", diff)
			}
		})
	}
}

// TestMergeDuplicateIsTyped: a duplicate names the scenario, the target and
// both reports.
func TestMergeDuplicateIsTyped(t *testing.T) {
	_, err := Merge([]string{"shard-1.json", "shard-2.json"}, []Suite{fixture(), fixture()})
	var dup *DuplicateError
	if !errors.As(err, &dup) {
		t.Fatalf("error %v, want a *DuplicateError", err)
	}
	want := DuplicateError{Scenario: "chat follow-up 500 after tool ran", Target: "builtin:guarded", First: "shard-1.json", Second: "shard-2.json"}
	if diff := cmp.Diff(want, *dup); diff != "" {
		t.Errorf("duplicate (-want +got):\n%s", diff)
	}
}

// TestMergeBaselineNotRun: an entry no shard ran stays not run; one that
// another shard ran is judged there and leaves the list.
func TestMergeBaselineNotRun(t *testing.T) {
	shards := shardsOf(baselineFixture())
	// Each shard lists the other shards' scenarios as not run, as a
	// sharded run does.
	never := baseline.Entry{Scenario: "a scenario this run did not select", Target: "builtin:naive", Rule: "writes"}
	for i := range shards {
		b := *shards[i].Baseline
		b.NotRun = []baseline.Entry{never}
		for j, v := range baselineFixture().Baseline.Verdicts {
			if j != i {
				b.NotRun = append(b.NotRun, baseline.Entry{Scenario: v.Scenario, Target: v.Target, Rule: "writes"})
			}
		}
		shards[i].Baseline = &b
	}
	got, err := Merge([]string{"a.json", "b.json", "c.json"}, shards)
	if err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff([]baseline.Entry{never}, got.Baseline.NotRun); diff != "" {
		t.Errorf("not run (-want +got):\n%s", diff)
	}
}
