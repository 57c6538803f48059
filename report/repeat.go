package report

import (
	"fmt"

	"github.com/replaycheck/replaycheck/internal/harness/rules"
)

// repeated reports whether any result of s is a repeated scenario's runs
// judged together: the reports then add a column with the rate.
func repeated(s Suite) bool {
	for _, r := range s.Results {
		if r.Repeat != nil {
			return true
		}
	}
	return false
}

// runsCell renders a result's runs for the RUNS column: "3/20 failed",
// "0/20 failed, 2 unknown", or "1" for a scenario that ran once.
func runsCell(r rules.Result) string {
	rp := r.Repeat
	if rp == nil {
		return "1"
	}
	cell := fmt.Sprintf("%d/%d failed", rp.Failed, rp.Runs)
	if rp.Unknown > 0 {
		cell += fmt.Sprintf(", %d unknown", rp.Unknown)
	}
	return cell
}

// shownRun says which run of a repeated scenario a report's details show:
// "run 4 of 20", or "" for a scenario that ran once.
func shownRun(r rules.Result) string {
	if r.Repeat == nil || r.Repeat.Shown == 0 {
		return ""
	}
	return fmt.Sprintf("run %d of %d", r.Repeat.Shown, r.Repeat.Runs)
}
