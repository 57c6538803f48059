package report

import (
	"fmt"
	"strings"

	"github.com/replaycheck/replaycheck/internal/harness/history"
	"github.com/replaycheck/replaycheck/internal/harness/rules"
)

// StepLife is a kill of the target by the harness or the start of its
// resume (history.TargetEvents): a note on the target's lifeline.
const StepLife StepKind = "life"

// lifeSteps are the target's kills and resumes.
func lifeSteps(h *history.History) []Step {
	var steps []Step
	for _, e := range h.TargetEvents {
		steps = append(steps, Step{At: e.At.D(), From: PartyTarget, To: PartyTarget, Kind: StepLife, Label: lifeText(e)})
	}
	return steps
}

// lifeText words a kill ("target killed (SIGKILL) after tools/call
// commit_write ran (life 1, pid 4711)") or a resume ("resumed (life 2):
// exited 0, said …"; a proxy's says the app request is not sent again).
func lifeText(e history.TargetEvent) string {
	if e.Kind == history.TargetKilled {
		signal := string(e.Signal)
		if e.KilledAfterGrace {
			signal += ", then SIGKILL: it had not exited within its grace"
		}
		return fmt.Sprintf("target killed (%s) %s (life %d, pid %d)", signal, rules.KillPointText(e), e.Life, e.PID)
	}
	var how string
	switch {
	case e.Exit == nil, *e.Exit == -1 && !e.Success && e.Said == "":
		how = "did not end by itself (killed again, or past the deadline)"
	case *e.Exit == -1 && e.Success:
		how = "finished the pending turn"
	case *e.Exit == -1:
		how = "did not finish the pending turn"
	default:
		how = fmt.Sprintf("exited %d", *e.Exit)
	}
	if said := strings.Join(strings.Fields(e.Said), " "); said != "" {
		how += ", said " + capText(fmt.Sprintf("%q", said), 120)
	}
	if e.Proxy {
		how += " (a proxy: it carries on with its own pending work; the harness does not send the app request again)"
	}
	return fmt.Sprintf("resumed (life %d): %s", e.Life, how)
}
