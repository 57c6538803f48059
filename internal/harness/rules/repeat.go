package rules

import (
	"fmt"
	"maps"
	"slices"
	"strconv"
	"strings"

	"github.com/replaycheck/replaycheck/internal/harness/history"
)

// CheckRepeat names the verdict that judges a repeated scenario's runs
// together (repeat: N); a baseline entry may list it like any check.
const CheckRepeat = "repeat"

// KindRepeat is the kind of that verdict.
const KindRepeat = "repeat"

// Repeat is the tally of a repeated scenario's runs on one target.
type Repeat struct {
	// Runs is how many runs there were; AllowFailures how many of them may
	// fail with the scenario still passing.
	Runs          int `json:"runs"`
	AllowFailures int `json:"allow_failures"`
	// Passed, Failed, Unknown and Skipped count the runs by their own
	// verdict; a skipped run (its scenario did not apply) counts for
	// nothing.
	Passed  int `json:"passed"`
	Failed  int `json:"failed"`
	Unknown int `json:"unknown"`
	Skipped int `json:"skipped,omitempty"`
	// Duration is the runs' durations added up (they may have overlapped).
	Duration history.Duration `json:"duration"`
	// Shown is the run (from 1) whose history, counts and checks the
	// aggregated Result carries: the first failed run when the verdict is
	// fail, the first that could not be judged when unknown, else the first
	// that passed.
	Shown int `json:"shown"`
	// Failures group the failed runs by what failed, in order of first
	// occurrence.
	Failures []RepeatFailure `json:"failures,omitempty"`
	// Results are the runs' own results, in run order, each with its
	// history: what --recheck judges again. A long repeat keeps the first
	// KeptRuns runs and the first of each verdict; Omitted counts the runs
	// left out.
	Results []Result `json:"results"`
	Omitted int      `json:"omitted,omitempty"`
}

// RepeatFailure is one way runs of a repeated scenario failed, and which
// runs failed so.
type RepeatFailure struct {
	// Checks are the checks that failed, in check order, with what was
	// observed for the plain counts.
	Checks []FailedCheck `json:"checks"`
	// Runs are the runs (from 1) that failed exactly so.
	Runs []int `json:"runs"`
}

// FailedCheck is a check that failed in a run; Observed is set for plain
// counts (writes, status, upstream[…]), whose value tells runs apart.
type FailedCheck struct {
	Check    string `json:"check"`
	Observed string `json:"observed,omitempty"`
}

// String renders the failure for reports: "writes 2, no-replay-after-dispatch".
func (f RepeatFailure) String() string {
	parts := make([]string, len(f.Checks))
	for i, c := range f.Checks {
		parts[i] = c.Check
		if c.Observed != "" {
			parts[i] += " " + c.Observed
		}
	}
	return strings.Join(parts, ", ")
}

// KeptRuns bounds the runs whose own result, with its history, a repeated
// scenario's Result keeps in Repeat.Results: the first KeptRuns runs, and
// the first run of each verdict (one is the run shown); the others are only
// counted (Repeat.Omitted), so a long repeat does not hold every history.
const KeptRuns = 100

// Aggregate judges the runs of one repeated scenario on one target together:
// runs are their results (from Evaluate) in run order, of which at most
// allowFailures may fail. It is a Tally given every run in turn.
func Aggregate(runs []Result, allowFailures int) Result {
	t := NewTally(allowFailures)
	for i, r := range runs {
		t.Add(i+1, r)
	}
	return t.Result()
}

// Tally judges the runs of one repeated scenario on one target as they end,
// in any order, keeping only what the Result needs: the counts, the failed
// runs' numbers, the first KeptRuns runs and the first run of each verdict.
// The zero value is not ready; use NewTally. It is not safe for concurrent
// use.
type Tally struct {
	rep   Repeat
	first map[Status]int // run number of the first run of each verdict
	kept  map[int]Result // by run number
}

// NewTally returns a Tally of runs of which at most allowFailures may fail.
func NewTally(allowFailures int) *Tally {
	return &Tally{rep: Repeat{AllowFailures: allowFailures}, first: map[Status]int{}, kept: map[int]Result{}}
}

// Add counts run n (from 1) with result r.
func (t *Tally) Add(n int, r Result) {
	rep := &t.rep
	rep.Runs++
	switch r.Verdict {
	case Pass:
		rep.Passed++
	case Fail:
		rep.Failed++
		rep.addFailure(n, r.Verdicts)
	case Skipped:
		rep.Skipped++
	default:
		rep.Unknown++
	}
	if r.History != nil {
		rep.Duration += r.History.Duration
	}
	if f, seen := t.first[r.Verdict]; !seen || n < f {
		if seen && f > KeptRuns {
			delete(t.kept, f)
		}
		t.first[r.Verdict] = n
		t.kept[n] = r
	} else if n <= KeptRuns {
		t.kept[n] = r
	}
}

// Result is the runs judged together. The verdict is fail when more than
// allowFailures runs failed, pass when at most allowFailures runs did not
// pass (failed or could not be judged) and one passed, skipped when every
// run's scenario did not apply, and unknown otherwise: the runs that could
// not be judged might have failed, so the rate is not known (every run
// unknown is the plain case). The Result
// carries a "repeat" verdict with the rate, then the checks, history and
// counts of the run that shows the verdict (see Repeat.Shown), and the kept
// runs in Repeat.Results. No runs is an unknown Result without a history.
func (t *Tally) Result() Result {
	rep := t.rep
	rep.Failures = slices.Clone(rep.Failures)
	for i := range rep.Failures {
		rep.Failures[i].Runs = slices.Sorted(slices.Values(rep.Failures[i].Runs))
	}
	slices.SortStableFunc(rep.Failures, func(a, b RepeatFailure) int { return a.Runs[0] - b.Runs[0] })
	nums := slices.Sorted(maps.Keys(t.kept))
	rep.Results = make([]Result, len(nums))
	for i, n := range nums {
		rep.Results[i] = t.kept[n]
	}
	rep.Omitted = rep.Runs - len(nums)
	status := Unknown
	switch {
	case rep.Failed > rep.AllowFailures:
		status = Fail
	case rep.Passed > 0 && rep.Failed+rep.Unknown <= rep.AllowFailures:
		status = Pass
	case rep.Runs > 0 && rep.Skipped == rep.Runs:
		status = Skipped
	}
	v := Verdict{Check: CheckRepeat, Kind: KindRepeat, Status: status, Expected: rep.expected(), Observed: rep.observed(status)}
	v.Message = message(status, v.Expected, v.Observed)
	out := Result{Verdict: status, Repeat: &rep, Verdicts: []Verdict{v}}
	shown, ok := t.first[status]
	if !ok {
		// Unknown with no unknown run: more failures than allowed once the
		// unknown runs count, which needs unknown runs; or no runs at all.
		shown, ok = t.first[Unknown]
	}
	if !ok && len(nums) > 0 {
		shown, ok = nums[0], true
	}
	if ok {
		s := t.kept[shown]
		rep.Shown = shown
		out.History, out.Counts = s.History, s.Counts
		out.Verdicts = append(out.Verdicts, s.Verdicts...)
	}
	return out
}

// addFailure records that run n failed with verdicts vs.
func (r *Repeat) addFailure(n int, vs []Verdict) {
	var checks []FailedCheck
	for _, v := range vs {
		if v.Status != Fail {
			continue
		}
		c := FailedCheck{Check: v.Check}
		if v.Kind == KindCount {
			c.Observed = v.Observed
		}
		checks = append(checks, c)
	}
	i := slices.IndexFunc(r.Failures, func(f RepeatFailure) bool { return slices.Equal(f.Checks, checks) })
	if i < 0 {
		r.Failures = append(r.Failures, RepeatFailure{Checks: checks})
		i = len(r.Failures) - 1
	}
	r.Failures[i].Runs = append(r.Failures[i].Runs, n)
}

// expected renders the threshold: "no run of 20 to fail", "at most 2 of 20
// runs to fail".
func (r *Repeat) expected() string {
	if r.AllowFailures == 0 {
		return fmt.Sprintf("no run of %d to fail", r.Runs)
	}
	return fmt.Sprintf("at most %d of %d runs to fail", r.AllowFailures, r.Runs)
}

// observed renders the rate and what failed: "3 of 20 runs failed: writes 2
// (runs 4, 9), writes 3 (run 12)".
func (r *Repeat) observed(s Status) string {
	var b strings.Builder
	if r.Failed == 0 {
		fmt.Fprintf(&b, "none of %d runs failed", r.Runs)
	} else {
		fmt.Fprintf(&b, "%d of %d %s failed: ", r.Failed, r.Runs, word(r.Runs, "run"))
		for i, f := range r.Failures {
			if i > 0 {
				b.WriteString("; ")
			}
			fmt.Fprintf(&b, "%s (%s %s)", f, word(len(f.Runs), "run"), runList(f.Runs))
		}
	}
	if r.Skipped > 0 {
		fmt.Fprintf(&b, "; %d did not apply to the target", r.Skipped)
	}
	if r.Unknown > 0 {
		fmt.Fprintf(&b, "; %d could not be judged", r.Unknown)
		if s == Unknown && r.Passed > 0 {
			b.WriteString(", and with them more than the allowed failures may have failed")
		}
	}
	return b.String()
}

// maxListedRuns bounds the run numbers a failure lists.
const maxListedRuns = 10

// runList renders run numbers: "4, 9, 12", and "…" past maxListedRuns.
func runList(ns []int) string {
	parts := make([]string, 0, min(len(ns), maxListedRuns)+1)
	for i, n := range ns {
		if i == maxListedRuns {
			parts = append(parts, fmt.Sprintf("… %d more", len(ns)-i))
			break
		}
		parts = append(parts, strconv.Itoa(n))
	}
	return strings.Join(parts, ", ")
}

func word(n int, w string) string {
	if n == 1 {
		return w
	}
	return w + "s"
}

// Combine returns results with the runs of each repeated scenario on each
// target (results whose history has a Repetition) aggregated into one Result
// (see Aggregate, with the runs' AllowFailures), at the place of its first
// run; the other results are kept as they are, in order.
func Combine(results []Result) []Result {
	type key struct{ scenario, target string }
	var out []Result
	groups := map[key]int{} // index in out
	runs := map[key][]Result{}
	for _, r := range results {
		h := r.History
		if h == nil || h.Repetition == nil {
			out = append(out, r)
			continue
		}
		k := key{h.Scenario, h.Target}
		if _, ok := groups[k]; !ok {
			groups[k] = len(out)
			out = append(out, Result{})
		}
		runs[k] = append(runs[k], r)
	}
	for k, i := range groups {
		rs := runs[k]
		slices.SortStableFunc(rs, func(a, b Result) int { return a.History.Repetition.Index - b.History.Repetition.Index })
		out[i] = Aggregate(rs, rs[0].History.Repetition.AllowFailures)
	}
	return out
}
