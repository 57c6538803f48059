package rules

import (
	"fmt"
	"strings"

	"github.com/replaycheck/replaycheck/harness/history"
)

func nonRetryableNotRetriedRule() Rule {
	return Rule{
		Name: "non-retryable-not-retried",
		Doc: "An upstream answer that must not be retried — 400, 401, 403, 404, 422, 501, or any status with " +
			"x-should-retry: false — stops the attempt at once: no further upstream request of the same kind " +
			"follows it within the client request. Cannot judge when no such answer happened.",
		Seed:  "003 (retry tutorial) and 004 #2: classify before retrying; an explicit do-not-retry signal wins",
		Check: nonRetryableNotRetried,
	}
}

// nonRetryableNotRetried counts the upstream requests of the same kind that
// followed the first non-retryable answer within the same client exchange.
func nonRetryableNotRetried(h *history.History) Verdict {
	for i, u := range h.Upstream {
		if !nonRetryable(u) {
			continue
		}
		x := exchangeAt(h, u.At.D())
		again := 0
		for _, v := range h.Upstream[i+1:] {
			if v.Kind == u.Kind && exchangeAt(h, v.At.D()) == x {
				again++
			}
		}
		why := fmt.Sprintf("HTTP %d", u.Status)
		if strings.EqualFold(header(u, "x-should-retry"), "false") {
			why += " with x-should-retry: false"
		}
		return judged(again == 0, fmt.Sprintf("no retry after the %s %s", u.Kind, why),
			plural(again, "more "+u.Kind+" request"))
	}
	return unknown("no retry after a non-retryable answer", "no upstream answer was non-retryable")
}
