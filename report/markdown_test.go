package report

import (
	"bytes"
	"fmt"
	"regexp"
	"strconv"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/replaycheck/replaycheck/internal/harness/rules"
)

// manyFailures is n naive runs that replayed the write, each a scenario of
// its own.
func manyFailures(n int) Suite {
	s := Suite{Wall: ms(40)}
	for i := range n {
		h := seedRun("builtin:naive", 3)
		h.Scenario = fmt.Sprintf("chat follow-up 500 after tool ran #%04d", i)
		s.Results = append(s.Results, rules.Evaluate(h))
	}
	return s
}

// TestMarkdownFailuresFirst: the table lists failures, then what could not
// judge, then passes, each in the suite's order.
func TestMarkdownFailuresFirst(t *testing.T) {
	pass, fail, unknown := seedRun("builtin:guarded", 1), seedRun("builtin:naive", 3), unknownFixture().Results[0]
	pass2 := seedRun("builtin:guarded", 1)
	pass.Scenario, pass2.Scenario, fail.Scenario = "a pass", "another pass", "a failure"
	s := Suite{Results: []rules.Result{rules.Evaluate(pass), unknown, rules.Evaluate(pass2), rules.Evaluate(fail)}}
	var b bytes.Buffer
	if err := WriteMarkdown(&b, s); err != nil {
		t.Fatal(err)
	}
	var got []string
	for _, l := range strings.Split(b.String(), "\n") {
		if cells := strings.Split(l, " | "); len(cells) > 3 && strings.HasPrefix(l, "| ") && !strings.HasPrefix(l, "| Scenario") {
			got = append(got, strings.TrimPrefix(cells[0], "| ")+": "+cells[2])
		}
	}
	want := []string{"a failure: fail", "isError answered: unknown", "a pass: pass", "another pass: pass"}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("rows (-want +got):\n%s", diff)
	}
}

// TestMarkdownCapped: a summary stays within its size, every row or detail
// left out is counted, and 1,000 failing scenarios (1.7 MB uncapped) fit
// GitHub's 1 MiB step-summary limit.
func TestMarkdownCapped(t *testing.T) {
	rowsMore := regexp.MustCompile(`\*\*(\d+) more rows? in the JSON/JUnit artifact\*\*`)
	detailsMore := regexp.MustCompile(`The checks and timelines of (\d+) more not passing results? are in the JSON/JUnit artifact`)
	tests := []struct {
		name     string
		failures int
		max      int
		wantMax  int
		// wantRowsCut: some rows are left out (else all are shown).
		wantRowsCut bool
	}{
		{"1000 failures, the default cap", 1000, 0, 1 << 20, false},
		{"rows cut at 8 KiB", 200, 8 << 10, 8 << 10, true},
		{"details cut at 64 KiB", 100, 64 << 10, 64 << 10, false},
		{"all fits", 3, 0, MarkdownLimit, false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var b bytes.Buffer
			if err := WriteMarkdownWith(&b, manyFailures(tt.failures), MarkdownOptions{MaxBytes: tt.max}); err != nil {
				t.Fatal(err)
			}
			out := b.String()
			if b.Len() > tt.wantMax {
				t.Errorf("summary is %d bytes, want at most %d", b.Len(), tt.wantMax)
			}
			rows := strings.Count(out, "\n| chat follow-up 500 after tool ran #")
			details := strings.Count(out, "\n### ")
			cutRows := 0
			if m := rowsMore.FindStringSubmatch(out); m != nil {
				cutRows, _ = strconv.Atoi(m[1])
			}
			cutDetails := 0
			if m := detailsMore.FindStringSubmatch(out); m != nil {
				cutDetails, _ = strconv.Atoi(m[1])
			}
			if rows+cutRows != tt.failures || details+cutDetails != tt.failures {
				t.Errorf("%d rows shown + %d counted, %d details shown + %d counted; want %d each", rows, cutRows, details, cutDetails, tt.failures)
			}
			if (cutRows > 0) != tt.wantRowsCut {
				t.Errorf("%d rows left out, want some: %v", cutRows, tt.wantRowsCut)
			}
			if tt.failures > 3 && cutDetails == 0 {
				t.Errorf("no details left out of %d failures in %d bytes", tt.failures, b.Len())
			}
		})
	}
}
