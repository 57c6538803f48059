package rules

import (
	"fmt"

	"github.com/replaycheck/replaycheck/internal/harness/history"
)

func retryBeforeDispatchRule() Rule {
	return Rule{
		Name:    "retry-before-dispatch",
		Summary: "a transient failure before any tool call was dispatched is still retried",
		Doc: "Where no tool call had reached a server when a retry-able upstream failure happened (a guardrail " +
			"blocked it, or the failure came first), the failure is still retried. Cannot judge when a tool call " +
			"reached the server before the failure, when no retry-able failure happened, when the target has no retries, or " +
			"when the failure is a dropped stream whose chunks had reached the client (or that cannot be told), which a retry would splice.",
		Seed: "000 (LiteLLM): \"Calls that never reach a server keep today's retries\" — in the block-mcp guardrail case with fault_once " +
			"each request was retried after its failed follow-up, before and after the fix",
		Fix: "Keep retrying transient failures (429, 5xx, a reset) while no tool call of the request has " +
			"reached a server; only a dispatched call turns retries off.",
		Example: `# scenarios/retry/transient.yaml, trimmed
name: 503 before dispatch is retried
request: {endpoint: chat}
faults:
  upstream: [{on: initial, respond: {status: 503}, times: once}]
expect:
  status: 200
  writes: 1
  rules: [retry-before-dispatch]
`,
		Check: retryBeforeDispatch,
	}
}

// retryBeforeDispatch finds the first retry-able upstream failure and, when no
// tool call had executed before it, counts the upstream requests after it in
// the same client exchange (a later client request is not a retry).
func retryBeforeDispatch(h *history.History) Verdict {
	const expected = "a retry after the retry-able upstream failure"
	if h.Setup.NumRetries == 0 {
		return unknown(expected, "the target is configured with no retries")
	}
	ex := executions(h)
	for i, u := range h.Upstream {
		if !retryable(u) {
			continue
		}
		before := 0
		for _, e := range ex {
			if e.At.D() <= u.At.D() {
				before++
			}
		}
		if before > 0 {
			return unknown(expected, fmt.Sprintf("%s reached the MCP server before the upstream %s, so replay was not safe", plural(before, "tool call"), label(u)))
		}
		x, later := h.ExchangeAt(u.At.D()), 0
		for _, v := range h.Upstream[i+1:] {
			if h.ExchangeAt(v.At.D()) == x {
				later++
			}
		}
		if later == 0 && cutAtDeadline(h, x) {
			return unknown(expected, "the run's deadline ended the client request before a retry after the upstream "+label(u)+" could come (the run did not complete)")
		}
		if dropped(u) && later == 0 {
			switch reached, known := delivered(h, x, u); {
			case !known:
				return unknown(expected, "the upstream stream dropped ("+label(u)+") and was not retried, and the client stream does not show whether its chunks had reached the client, when a retry would splice")
			case reached:
				return unknown(expected, "the dropped upstream stream ("+label(u)+") had delivered chunks to the client, so a retry would splice")
			}
		}
		return judged(later > 0, "a retry after the retry-able upstream failure ("+label(u)+") before any tool call ran",
			plural(later, "later upstream request")+" in the same client request")
	}
	return unknown(expected, "no retry-able upstream failure happened")
}
