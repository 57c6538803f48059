package rules

import (
	"fmt"
	"strings"

	"github.com/replaycheck/replaycheck/internal/harness/history"
)

func nonRetryableNotRetriedRule() Rule {
	return Rule{
		Name:    "non-retryable-not-retried",
		Summary: "400, 403, 404, 422, 501 and x-should-retry: false stop at once",
		Doc: "An upstream answer that must not be retried — 400, 403, 404, 422, 501, or any status with " +
			"x-should-retry: false — stops the attempt at once: no further upstream request of the same kind " +
			"follows it within the client request. A 401 allows one more request (credentials refreshed once); " +
			"a second is a retry. Cannot judge when no such answer happened.",
		Seed: "004 #2: \"Classify before you retry. An explicit server signal beats the status code\"; terminal: \"400/422 " +
			"validation, 403 permission, 404 not found (including unknown model IDs), 501 … and any explicit do-not-retry " +
			"signal. On 401 … refresh or re-authorize once, then treat a second failure as terminal\"; 003: \"Errors such as " +
			"400, 401, and 404 stop immediately\"",
		Fix: "Classify before retrying: stop at once on 400, 403, 404, 422, 501 or x-should-retry: false and " +
			"return that error; on 401 refresh credentials once.",
		Example: `# scenarios/retry/non-retryable.yaml, trimmed
name: 400 is not retried
request: {endpoint: chat}
faults:
  upstream: [{on: initial, respond: {status: 400, message: "invalid request"}}]
expect:
  status: 400
  rules: [non-retryable-not-retried]
`,
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
		x := h.ExchangeAt(u.At.D())
		again := 0
		for _, v := range h.Upstream[i+1:] {
			if v.Kind == u.Kind && h.ExchangeAt(v.At.D()) == x {
				again++
			}
		}
		why := fmt.Sprintf("HTTP %d", u.Status)
		allowed := 0
		if strings.EqualFold(header(u, "x-should-retry"), "false") {
			why += " with x-should-retry: false"
		} else if u.Status == 401 {
			allowed = 1
		}
		expected := fmt.Sprintf("no retry after the %s %s", u.Kind, why)
		if allowed > 0 {
			expected = fmt.Sprintf("at most 1 more %s request (re-authorized once) after the %s %s", u.Kind, u.Kind, why)
		}
		return judged(again <= allowed, expected, plural(again, "more "+string(u.Kind)+" request"))
	}
	return unknown("no retry after a non-retryable answer", "no upstream answer was non-retryable")
}
