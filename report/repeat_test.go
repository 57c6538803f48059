package report

import (
	"bytes"
	"fmt"
	"strings"
	"testing"

	"github.com/replaycheck/replaycheck/internal/harness/history"
	"github.com/replaycheck/replaycheck/internal/harness/rules"
)

// repeatedRuns is the seed's chat case repeated len(loops) times on target,
// run i with loops[i] tool loops (1 passes, more write more than once), of
// which allow may fail.
func repeatedRuns(target string, allow int, loops ...int) []rules.Result {
	out := make([]rules.Result, len(loops))
	for i, n := range loops {
		h := seedRun(target, n)
		h.Token = fmt.Sprintf("rc01234567%02d", i+1)
		h.Entry = "alpha-" + h.Token
		for j := range h.MCP {
			if h.MCP[j].Entry != "" {
				h.MCP[j].Entry = h.Entry
			}
		}
		h.Repetition = &history.Repetition{Index: i + 1, Of: len(loops), AllowFailures: allow}
		out[i] = rules.Evaluate(h)
	}
	return out
}

// repeatFixture is a suite with a scenario repeated on two targets (every
// run passing on guarded; three of five failing on naive, one allowed) and
// one that ran once.
func repeatFixture() Suite {
	var results []rules.Result
	results = append(results, repeatedRuns("builtin:guarded", 1, 1, 1, 1, 1, 1)...)
	results = append(results, repeatedRuns("builtin:naive", 1, 1, 3, 2, 1, 3)...)
	once := seedRun("builtin:guarded", 1)
	once.Scenario = "chat once"
	results = append(results, rules.Evaluate(once))
	return Suite{Results: rules.Combine(results), Wall: ms(60)}
}

func TestRepeatFormats(t *testing.T) {
	checkGoldenFormats(t, repeatFixture, []goldenFormat{
		{"table-repeat.golden", func(b *bytes.Buffer, s Suite) error { return WriteTable(b, s, TableOptions{}) }},
		{"junit-repeat.golden.xml", func(b *bytes.Buffer, s Suite) error { return WriteJUnit(b, s) }},
		{"report-repeat.golden.json", func(b *bytes.Buffer, s Suite) error { return WriteJSON(b, s) }},
		{"summary-repeat.golden.md", func(b *bytes.Buffer, s Suite) error { return WriteMarkdown(b, s) }},
	})
}

// TestRepeatReportsShowTheRate checks what a reader of each report must
// find: the rate, what failed in which runs, and which run the details are.
func TestRepeatReportsShowTheRate(t *testing.T) {
	const rate = "3 of 5 runs failed: writes 3, upstream[follow_up] 3, upstream[initial] 3, no-replay-after-dispatch (runs 2, 5); " +
		"writes 2, upstream[follow_up] 2, upstream[initial] 2, no-replay-after-dispatch (run 3)"
	for _, tt := range []struct {
		name  string
		write func(*bytes.Buffer, Suite) error
		want  []string
	}{
		{"table", func(b *bytes.Buffer, s Suite) error { return WriteTable(b, s, TableOptions{}) },
			[]string{"RUNS", "3/5 failed", "0/5 failed", "3 scenarios (11 runs)", rate, "token rc0123456702 (run 2 of 5)"}},
		{"junit", func(b *bytes.Buffer, s Suite) error { return WriteJUnit(b, s) },
			[]string{rate, "run 2 of 5", `time="0.060"`, "repeat: expected at most 1 of 5 runs to fail, observed none of 5 runs failed"}},
		{"markdown", func(b *bytes.Buffer, s Suite) error { return WriteMarkdown(b, s) },
			[]string{"| Runs |", "| 3/5 failed |", rate, "Checks and timeline of run 2 of 5."}},
	} {
		t.Run(tt.name, func(t *testing.T) {
			var b bytes.Buffer
			if err := tt.write(&b, repeatFixture()); err != nil {
				t.Fatal(err)
			}
			for _, w := range tt.want {
				if !strings.Contains(b.String(), w) {
					t.Errorf("report lacks %q:\n%s", w, b.String())
				}
			}
		})
	}
}

// TestRepeatJSONKeepsEveryRun checks that the JSON report keeps every run's
// history with its place among the runs, so it can be judged again.
func TestRepeatJSONKeepsEveryRun(t *testing.T) {
	var b bytes.Buffer
	if err := WriteJSON(&b, repeatFixture()); err != nil {
		t.Fatal(err)
	}
	s, err := ReadJSON(&b)
	if err != nil {
		t.Fatal(err)
	}
	naive := s.Results[1]
	if naive.Repeat == nil || len(naive.Repeat.Results) != 5 {
		t.Fatalf("naive result: %+v, want 5 runs", naive.Repeat)
	}
	var again []rules.Result
	for i, r := range naive.Repeat.Results {
		if r.History == nil || r.History.Repetition == nil || r.History.Repetition.Index != i+1 {
			t.Fatalf("run %d lost its history or its place: %+v", i+1, r.History)
		}
		again = append(again, rules.Evaluate(r.History))
	}
	got := rules.Combine(again)
	if len(got) != 1 || got[0].Verdict != rules.Fail || got[0].Repeat.Failed != 3 || got[0].Repeat.AllowFailures != 1 {
		t.Errorf("judged again: %d results, %+v", len(got), got[0].Repeat)
	}
}
