package rules

import (
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/replaycheck/replaycheck/internal/harness/history"
	"github.com/replaycheck/replaycheck/internal/wire"
)

// repeatRun is run index of of a repeated scenario that expects one write and
// observed writes of them; writes < 0 makes a run that cannot be judged (a
// status expectation on a client run).
func repeatRun(index, of, allow, writes int) Result {
	h := &history.History{
		Scenario: "race", Target: "builtin:test", Token: "rc000000000" + string(rune('0'+index%10)),
		Repetition: &history.Repetition{Index: index, Of: of, AllowFailures: allow},
		Expect:     history.Expect{Counts: history.Counts{Writes: history.Exactly(1)}},
		Requests:   []history.Exchange{{Endpoint: "chat", Status: 200, CleanEnd: true}},
	}
	if writes < 0 {
		h.Expect = history.Expect{Counts: history.Counts{Status: intp(200)}}
		h.Requests = []history.Exchange{{Client: &history.ClientRun{Exit: 0}}}
	}
	for range writes {
		h.MCP = append(h.MCP, wire.MCPEvent{Kind: wire.MCPWrite, Tool: "commit_write"})
	}
	return Evaluate(h)
}

// runsOf builds the runs of a scenario repeated len(writes) times.
func runsOf(allow int, writes ...int) []Result {
	out := make([]Result, len(writes))
	for i, w := range writes {
		out[i] = repeatRun(i+1, len(writes), allow, w)
	}
	return out
}

func TestAggregate(t *testing.T) {
	tests := []struct {
		name        string
		allow       int
		writes      []int // per run; -1 cannot be judged
		want        Status
		wantShown   int
		wantMessage string
		wantTally   [3]int // passed, failed, unknown
	}{
		{name: "every run passes", writes: []int{1, 1, 1}, want: Pass, wantShown: 1, wantTally: [3]int{3, 0, 0},
			wantMessage: "expected no run of 3 to fail, observed none of 3 runs failed"},
		{name: "one failure, none allowed", writes: []int{1, 2, 1, 1}, want: Fail, wantShown: 2, wantTally: [3]int{3, 1, 0},
			wantMessage: "expected no run of 4 to fail, observed 1 of 4 runs failed: writes 2 (run 2)"},
		{name: "failures grouped by what failed", writes: []int{2, 1, 3, 2}, want: Fail, wantShown: 1, wantTally: [3]int{1, 3, 0},
			wantMessage: "expected no run of 4 to fail, observed 3 of 4 runs failed: writes 2 (runs 1, 4); writes 3 (run 3)"},
		{name: "failures within the allowance", allow: 2, writes: []int{1, 2, 1, 2, 1}, want: Pass, wantShown: 1, wantTally: [3]int{3, 2, 0},
			wantMessage: "expected at most 2 of 5 runs to fail, observed 2 of 5 runs failed: writes 2 (runs 2, 4)"},
		{name: "one failure over the allowance", allow: 1, writes: []int{1, 2, 2, 1}, want: Fail, wantShown: 2, wantTally: [3]int{2, 2, 0},
			wantMessage: "expected at most 1 of 4 runs to fail, observed 2 of 4 runs failed: writes 2 (runs 2, 3)"},
		{name: "every run unknown", writes: []int{-1, -1}, want: Unknown, wantShown: 1, wantTally: [3]int{0, 0, 2},
			wantMessage: "cannot judge: none of 2 runs failed; 2 could not be judged"},
		{name: "an unknown run counts against no allowance", writes: []int{1, -1, 1}, want: Unknown, wantShown: 2, wantTally: [3]int{2, 0, 1},
			wantMessage: "cannot judge: none of 3 runs failed; 1 could not be judged, and with them more than the allowed failures may have failed"},
		{name: "unknown runs within the allowance", allow: 1, writes: []int{1, -1, 1}, want: Pass, wantShown: 1, wantTally: [3]int{2, 0, 1},
			wantMessage: "expected at most 1 of 3 runs to fail, observed none of 3 runs failed; 1 could not be judged"},
		{name: "failures beat unknown runs", writes: []int{-1, 2}, want: Fail, wantShown: 2, wantTally: [3]int{0, 1, 1},
			wantMessage: "expected no run of 2 to fail, observed 1 of 2 runs failed: writes 2 (run 2); 1 could not be judged"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			runs := runsOf(tt.allow, tt.writes...)
			got := Aggregate(runs, tt.allow)
			if got.Verdict != tt.want {
				t.Errorf("verdict = %s, want %s", got.Verdict, tt.want)
			}
			if got.Repeat == nil {
				t.Fatal("Repeat is nil")
			}
			if got.Repeat.Shown != tt.wantShown || got.History != runs[tt.wantShown-1].History {
				t.Errorf("shown run = %d (history %p), want %d", got.Repeat.Shown, got.History, tt.wantShown)
			}
			if tally := [3]int{got.Repeat.Passed, got.Repeat.Failed, got.Repeat.Unknown}; tally != tt.wantTally {
				t.Errorf("passed, failed, unknown = %v, want %v", tally, tt.wantTally)
			}
			first := got.Verdicts[0]
			if first.Check != CheckRepeat || first.Status != tt.want {
				t.Errorf("first verdict = %s %s, want %s %s", first.Check, first.Status, CheckRepeat, tt.want)
			}
			if diff := cmp.Diff(tt.wantMessage, first.Message); diff != "" {
				t.Errorf("message (-want +got):\n%s", diff)
			}
			if diff := cmp.Diff(runs[tt.wantShown-1].Verdicts, got.Verdicts[1:]); diff != "" {
				t.Errorf("the shown run's checks (-want +got):\n%s", diff)
			}
			if len(got.Repeat.Results) != len(runs) {
				t.Errorf("kept %d runs, want %d", len(got.Repeat.Results), len(runs))
			}
		})
	}
}

func TestAggregateListsAtMostTenRuns(t *testing.T) {
	writes := make([]int, 12)
	for i := range writes {
		writes[i] = 2
	}
	got := Aggregate(runsOf(0, writes...), 0)
	want := "expected no run of 12 to fail, observed 12 of 12 runs failed: writes 2 (runs 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, … 2 more)"
	if diff := cmp.Diff(want, got.Verdicts[0].Message); diff != "" {
		t.Errorf("message (-want +got):\n%s", diff)
	}
}

// TestCombine checks that the runs of a repeated scenario become one result
// at the place of its first run, in run order, with the allowance the runs
// carry, and that results of scenarios that ran once stay as they are.
func TestCombine(t *testing.T) {
	once := Evaluate(seedHistory(func(h *history.History) { h.Scenario = "once"; h.Expect.Writes = history.Exactly(0) }))
	runs := runsOf(1, 1, 2, 2)
	other := repeatRun(1, 2, 0, 1)
	other.History.Target = "builtin:other"
	other2 := repeatRun(2, 2, 0, 1)
	other2.History.Target = "builtin:other"
	in := []Result{runs[2], once, other2, runs[0], other, runs[1]}
	got := Combine(in)
	if len(got) != 3 {
		t.Fatalf("%d results, want 3", len(got))
	}
	if got[0].Repeat == nil || got[0].Verdict != Fail || got[0].Repeat.AllowFailures != 1 || got[0].Repeat.Runs != 3 {
		t.Errorf("race on builtin:test = %s %+v, want fail, 3 runs, 1 allowed", got[0].Verdict, got[0].Repeat)
	}
	for i, r := range got[0].Repeat.Results {
		if r.History.Repetition.Index != i+1 {
			t.Errorf("run %d has index %d", i+1, r.History.Repetition.Index)
		}
	}
	if got[1].Repeat != nil || got[1].History != once.History {
		t.Errorf("result 2 = %+v, want the scenario that ran once, as it was", got[1])
	}
	if got[2].Repeat == nil || got[2].Verdict != Pass || got[2].History.Target != "builtin:other" {
		t.Errorf("race on builtin:other = %s %+v, want pass", got[2].Verdict, got[2].Repeat)
	}
}

// TestTallyKeepsFewRuns adds the 1,000 runs of a repeated scenario in
// reverse order, runs 500 and 900 failing and run 700 not judged: the
// result counts every run but keeps only the first KeptRuns runs and the
// first run of each verdict (the first failure is shown), and is the result Aggregate gives of the
// same runs in order, but for the runs it leaves out.
func TestTallyKeepsFewRuns(t *testing.T) {
	const n = 1000
	writes := make([]int, n)
	for i := range writes {
		writes[i] = 1
	}
	writes[499], writes[899], writes[699] = 2, 3, -1
	runs := runsOf(0, writes...)
	tally := NewTally(0)
	for i := n; i >= 1; i-- {
		tally.Add(i, runs[i-1])
	}
	got := tally.Result()
	rep := got.Repeat
	if rep.Runs != n || rep.Passed != n-3 || rep.Failed != 2 || rep.Unknown != 1 || got.Verdict != Fail {
		t.Fatalf("tally: %d runs, %d passed, %d failed, %d unknown, verdict %s", rep.Runs, rep.Passed, rep.Failed, rep.Unknown, got.Verdict)
	}
	if rep.Shown != 500 || got.History != runs[499].History {
		t.Errorf("shows run %d, want the first failure, run 500", rep.Shown)
	}
	var kept []int
	for _, r := range rep.Results {
		kept = append(kept, r.History.Repetition.Index)
	}
	var want []int
	for i := 1; i <= KeptRuns; i++ {
		want = append(want, i)
	}
	want = append(want, 500, 700)
	if diff := cmp.Diff(want, kept); diff != "" || rep.Omitted != n-len(want) {
		t.Errorf("omits %d runs, want %d; kept runs (-want +got):\n%s", rep.Omitted, n-len(want), diff)
	}
	whole := Aggregate(runs, 0)
	if diff := cmp.Diff(whole.Verdicts, got.Verdicts); diff != "" {
		t.Errorf("verdicts differ from Aggregate's (-aggregate +tally):\n%s", diff)
	}
	if want := "writes 2 (run 500); writes 3 (run 900); 1 could not be judged"; !strings.Contains(got.Verdicts[0].Observed, want) {
		t.Errorf("observed %q, want it to hold %q", got.Verdicts[0].Observed, want)
	}
}
