package run

import (
	"strconv"

	"github.com/replaycheck/replaycheck/harness/history"
	"github.com/replaycheck/replaycheck/harness/scenario"
	"github.com/replaycheck/replaycheck/harness/target"
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
