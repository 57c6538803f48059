package rules

import (
	"fmt"
	"time"

	"github.com/replaycheck/replaycheck/harness/history"
)

func retryAfterHonoredRule() Rule {
	return Rule{
		Name: "retry-after-honored",
		Doc: "After an upstream answer with Retry-After (seconds) or retry-after-ms, the next upstream request " +
			"comes no sooner than the wait asked for (or never, when the wait exceeds the client's budget). " +
			"Cannot judge when no answer asked for a wait.",
		Seed:  "003 (retry tutorial) R03 and 004 #2: honor Retry-After as the minimum wait, within a budget",
		Check: retryAfterHonored,
	}
}

// retryAfterHonored compares, for each answer that asked for a wait, the gap
// to the next upstream request with the wait.
func retryAfterHonored(h *history.History) Verdict {
	asked := 0
	for i, u := range h.Upstream {
		wait, ok := retryAfter(u)
		if !ok {
			continue
		}
		asked++
		if i+1 == len(h.Upstream) {
			continue
		}
		gap := h.Upstream[i+1].At.D() - u.At.D()
		if gap < wait {
			return judged(false, fmt.Sprintf("a wait of at least %s after the %s", wait, label(u)),
				fmt.Sprintf("the next upstream request %s later", gap.Round(time.Millisecond)))
		}
	}
	if asked == 0 {
		return unknown("waits that respect Retry-After", "no upstream answer asked for a wait")
	}
	return judged(true, "waits that respect Retry-After", fmt.Sprintf("every retry waited as asked (%s)", plural(asked, "answer")+" with a wait"))
}
