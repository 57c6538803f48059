package report

import (
	"fmt"
	"strings"

	"github.com/replaycheck/replaycheck/internal/harness/baseline"
)

// knownLabel marks a failure the baseline lists, in every format.
const knownLabel = "known failure (baseline)"

// baselineOf returns the baseline verdict of s.Results[i], or nil when s was
// not judged against a baseline.
func baselineOf(s Suite, i int) *baseline.Verdict {
	if s.Baseline == nil || i >= len(s.Baseline.Verdicts) {
		return nil
	}
	v := &s.Baseline.Verdicts[i]
	if h := s.Results[i].History; v.Scenario != h.Scenario || v.Target != h.Target {
		return nil
	}
	return v
}

// baselineCell renders a result's standing for a table column.
func baselineCell(v *baseline.Verdict) string {
	switch {
	case v == nil || v.Status == baseline.Pass:
		return "-"
	case v.Status == baseline.Known:
		return "known"
	default:
		return strings.ToUpper(string(v.Status))
	}
}

// known reports whether the baseline lists check as a known failure of v.
func known(v *baseline.Verdict, check string) bool {
	if v == nil {
		return false
	}
	for _, k := range v.Known {
		if k == check {
			return true
		}
	}
	return false
}

// staleMessage says what to do about a stale entry.
func staleMessage(e baseline.Entry) string {
	return fmt.Sprintf("baseline entry %s now passes: remove it", e)
}

// BaselineLines renders the baseline's outcome for the end of a report: one
// line with the counts and whether the run passes, one per stale entry, and
// one about the entries this run did not check; nil without a baseline.
func BaselineLines(s Suite) []string {
	o := s.Baseline
	if o == nil {
		return nil
	}
	t := o.Tally()
	verdict := "passes"
	if o.Broken() {
		verdict = "FAILS"
	}
	out := []string{fmt.Sprintf("baseline %s: %s, %s, %s: %s", o.File,
		count(t.Known, "known failure", "known failures"), count(t.New, "new failure", "new failures"),
		count(t.StaleEntries, "stale entry", "stale entries"), verdict)}
	for _, v := range o.Verdicts {
		for _, e := range v.StaleEntries() {
			out = append(out, "STALE "+staleMessage(e))
		}
	}
	if n := len(o.NotRun); n > 0 {
		out = append(out, fmt.Sprintf("%s not checked: scenario or target not in this run (filter, tag, shard or --target); neither used nor stale",
			count(n, "baseline entry", "baseline entries")))
	}
	return out
}

// count renders n with the singular or plural noun.
func count(n int, one, many string) string {
	if n == 1 {
		return "1 " + one
	}
	return fmt.Sprintf("%d %s", n, many)
}
