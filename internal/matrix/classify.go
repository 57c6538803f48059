package matrix

import (
	"fmt"
	"slices"
	"strings"

	"github.com/replaycheck/replaycheck/internal/harness/explore"
	"github.com/replaycheck/replaycheck/internal/harness/history"
	"github.com/replaycheck/replaycheck/internal/harness/rules"
	"github.com/replaycheck/replaycheck/internal/wire"
)

// duplicateRules are the rules whose failure is a write run twice for one
// call the model asked for.
var duplicateRules = []string{"no-replay-after-dispatch", "no-replay-ambiguous-mcp", "keyed-retry-same-key"}

// lostRule is the rule whose failure is a call that never ran and was not
// re-issued.
const lostRule = "no-lost-call"

// maxTold bounds ToldModel and ToldUser, in runes.
const maxTold = 240

// cellOf is kind k's cell from the sweep rep, decided by phase, and the
// index in rep.Cells of the run that decided it; false when no run of rep
// armed k alone (no point of the agent takes it).
func cellOf(k explore.Kind, rep *explore.Report, phase string) (Cell, int, bool) {
	c := Cell{Family: familyOf(k), Mechanism: k.Name, Doc: k.Doc, DecidedBy: phase}
	var runs []explore.Cell
	var at []int
	for i, run := range rep.Cells {
		if len(run.Schedule) == 1 && run.Schedule[0].Kind == k.Name {
			runs, at = append(runs, run), append(at, i)
		}
	}
	if len(runs) == 0 {
		return Cell{}, 0, false
	}
	worst := decide(&c, runs)
	if run := runs[worst]; c.Verdict.reproduced() && run.Finding > 0 {
		c.Reproduction = rep.Findings[run.Finding-1].File
	}
	return c, at[worst], true
}

// shownFindings is the explore.Options.Confirms of the sweep of kinds: a
// finding is confirmed when it holds a run that decides one of their cells
// whose verdict has a reproduction, the only findings the matrix shows.
// The others are reduced all the same, so each finding keeps the smallest
// reproduction of its mechanism.
func shownFindings(kinds []explore.Kind, phase string) func(*explore.Report, []int) bool {
	return func(rep *explore.Report, cells []int) bool {
		for _, k := range kinds {
			if c, i, ok := cellOf(k, rep, phase); ok && c.Verdict.reproduced() && slices.Contains(cells, i) {
				return true
			}
		}
		return false
	}
}

// decide sets c's verdict, counts and what the agent told from runs (at
// least one) and returns the index of the run that decided it. The cell is
// its worst run's: DUPLICATE, LOST or reported as failure where any run
// was; else safe where any run was judged; unknown only when none was.
func decide(c *Cell, runs []explore.Cell) int {
	worst, unjudged := 0, 0
	var worstVerdict Verdict
	reason := ""
	for i, run := range runs {
		v, why := judge(run)
		if v == Unknown {
			unjudged++
		}
		if i == 0 || v.rank() < worstVerdict.rank() {
			worst, worstVerdict, reason = i, v, why
		}
	}
	c.Runs = len(runs)
	if worstVerdict == Safe && unjudged > 0 {
		reason = fmt.Sprintf("%d of %d runs could not be judged", unjudged, c.Runs)
	}
	run := runs[worst]
	c.Verdict, c.Reason, c.Rules = worstVerdict, reason, slices.Clone(run.Failed)
	c.Writes, c.Schedule = run.Writes, run.Schedule.String()
	if h := run.Result.History; h != nil {
		c.LogicalCalls = h.LogicalCalls()
		c.ToldModel, c.ToldUser = toldModel(h), toldUser(h)
	}
	res := run.Result
	c.Result = &res
	return worst
}

// judge is one run's verdict and why.
func judge(run explore.Cell) (Verdict, string) {
	for _, r := range duplicateRules {
		if slices.Contains(run.Failed, r) {
			return Duplicate, message(run.Result, r)
		}
	}
	if slices.Contains(run.Failed, lostRule) {
		return Lost, message(run.Result, lostRule)
	}
	if h := run.Result.History; h != nil && run.Writes > 0 {
		if id := reportedFailed(h); id != "" {
			return ReportedFailure, fmt.Sprintf("call %s ran (%d writes) and the agent told the model it failed", id, run.Writes)
		}
	}
	if slices.Contains(run.Failed, rules.CheckCompleted) {
		return Hung, message(run.Result, rules.CheckCompleted)
	}
	switch run.Verdict {
	case rules.Pass, rules.Fail:
		return Safe, ""
	}
	for _, v := range run.Result.Verdicts {
		if v.Status == rules.Unknown || v.Status == rules.Skipped {
			return Unknown, v.Check + ": " + v.Message
		}
	}
	return Unknown, "no rule could judge the run"
}

// message is the failing verdict's message of check in r.
func message(r rules.Result, check string) string {
	for _, v := range r.Verdicts {
		if v.Check == check && v.Status == rules.Fail {
			return v.Message
		}
	}
	return check
}

// reportedFailed returns the id of a call the fake model read as failed
// (wire.ResultFailed) in a run whose writes ran; "" when none.
func reportedFailed(h *history.History) string {
	for _, u := range h.Upstream {
		for _, r := range u.Results {
			if r.Read == wire.ResultFailed {
				return r.ID
			}
		}
	}
	return ""
}

// toldModel is what the last follow-up told the model about each tool
// call: `call_X: error "connection closed"`.
func toldModel(h *history.History) string {
	for i := len(h.Upstream) - 1; i >= 0; i-- {
		u := h.Upstream[i]
		if len(u.Results) == 0 {
			continue
		}
		var parts []string
		for _, r := range u.Results {
			s := r.ID
			if r.Error {
				s += " error"
			}
			if r.Text != "" {
				s += fmt.Sprintf(" %q", r.Text)
			}
			parts = append(parts, strings.TrimSpace(s))
		}
		return clip(strings.Join(parts, "; "))
	}
	return ""
}

// toldUser is what the app or the user got in the run's first exchange:
// the client's exit code and the last line it printed, or the HTTP status
// and the answer's start.
func toldUser(h *history.History) string {
	if len(h.Requests) == 0 {
		return "no answer"
	}
	x := h.Requests[0]
	switch {
	case x.Client != nil:
		return clip(fmt.Sprintf("exit %d: %s", x.Client.Exit, lastLine(x.Client.Stdout+"\n"+x.Client.Stderr)))
	case x.TimedOut:
		return "no answer (the run's deadline passed)"
	case x.Status == 0:
		return clip("no answer: " + x.TransportError)
	}
	return clip(fmt.Sprintf("HTTP %d: %s", x.Status, strings.Join(strings.Fields(x.Body), " ")))
}

// lastLine is s's last line that is not blank.
func lastLine(s string) string {
	lines := strings.Split(strings.TrimSpace(s), "\n")
	return strings.TrimSpace(lines[len(lines)-1])
}

// clip cuts s to maxTold runes, ending in "…" when cut.
func clip(s string) string {
	r := []rune(s)
	if len(r) <= maxTold {
		return s
	}
	return string(r[:maxTold-1]) + "…"
}
