package run

import (
	"fmt"
	"strconv"

	"github.com/replaycheck/replaycheck/internal/harness/history"
	"github.com/replaycheck/replaycheck/internal/harness/scenario"
	"github.com/replaycheck/replaycheck/internal/harness/target"
	"github.com/replaycheck/replaycheck/internal/runtoken"
)

// Runs returns how many times s runs on each target and how many of those
// runs may fail with it still passing, with run --repeat multiplier: its
// repeat (1 when unset) and expect.allow_failures, both times multiplier. A
// multiplier below 1 counts as 1.
func Runs(s *scenario.Scenario, multiplier int) (runs, allowFailures int) {
	multiplier = max(multiplier, 1)
	return s.Runs() * multiplier, s.Expect.AllowFailures * multiplier
}

// runToken is the token of a run of s on t: derived from the seed, the
// scenario and the target, and for a repeated scenario the run's index, so
// every run of it has a token of its own. A scenario that runs once keeps the
// token it had before repeat existed.
func runToken(seed string, s *scenario.Scenario, t target.Target, rep *history.Repetition) string {
	if rep == nil {
		return runtoken.Derive(seed, s.Name, t.Name())
	}
	return runtoken.Derive(seed, s.Name, t.Name(), "run", strconv.Itoa(rep.Index))
}

// MaxRuns bounds the scenario runs of one Run: each run's result is kept
// until its scenario is judged, so a count past it would not fit in memory
// nor end in a working day.
const MaxRuns = 1_000_000

// TooManyRunsError is a run of more than MaxRuns scenario runs: Multiplier
// (run --repeat) times each scenario's own repeat, for every target it
// applies to. Largest is the scenario with the largest repeat.
type TooManyRunsError struct {
	Multiplier int
	Largest    *scenario.Scenario
}

func (e *TooManyRunsError) Error() string {
	msg := fmt.Sprintf("more than %d scenario runs (each scenario's repeat × --repeat %d × the targets it runs on)", MaxRuns, max(e.Multiplier, 1))
	if e.Largest != nil && e.Largest.Runs() > 1 {
		msg += fmt.Sprintf("; the largest repeat is %d, of %q (%s:%d)", e.Largest.Runs(), e.Largest.Name, e.Largest.File, e.Largest.Line)
	}
	return msg
}

// Count returns how many scenario runs Run makes of scenarios on targets
// with the run --repeat multiplier: for each scenario, Runs times the
// targets it applies to. It counts without overflow and stops at MaxRuns: a
// count past it is a *TooManyRunsError.
func Count(scenarios []*scenario.Scenario, targets []target.Target, multiplier int) (int, error) {
	multiplier = max(multiplier, 1)
	n := 0
	var largest *scenario.Scenario
	for _, s := range scenarios {
		if largest == nil || s.Runs() > largest.Runs() {
			largest = s
		}
	}
	for _, s := range scenarios {
		for _, t := range targets {
			if !Applies(s, t) {
				continue
			}
			// Each factor is at least 1; MaxRuns/factor keeps the products
			// below MaxRuns without computing one that overflows.
			if s.Runs() > MaxRuns/multiplier || n > MaxRuns-s.Runs()*multiplier {
				return 0, &TooManyRunsError{Multiplier: multiplier, Largest: largest}
			}
			n += s.Runs() * multiplier
		}
	}
	return n, nil
}
