package rules

import (
	"fmt"

	"github.com/replaycheck/replaycheck/harness/history"
)

func retryBeforeDispatchRule() Rule {
	return Rule{
		Name: "retry-before-dispatch",
		Doc: "Where no tool call reached a server (a guardrail blocked it, or the failure came first), a " +
			"retry-able upstream failure is still retried. Cannot judge when a tool call reached the server, " +
			"when no retry-able failure happened, or when the target has no retries.",
		Seed:  "000 (LiteLLM): the block-mcp guardrail case with fault_once — retried before and after the fix",
		Check: retryBeforeDispatch,
	}
}

// retryBeforeDispatch looks for the first retry-able upstream failure of a run
// whose tool calls never reached the ledger and counts the upstream requests
// that followed it.
func retryBeforeDispatch(h *history.History) Verdict {
	const expected = "a retry after the retry-able upstream failure"
	if n := len(executions(h)); n > 0 {
		return unknown(expected, fmt.Sprintf("%s reached the MCP server, so replay was not safe", plural(n, "tool call")))
	}
	if h.Setup.NumRetries == 0 {
		return unknown(expected, "the target is configured with no retries")
	}
	for i, u := range h.Upstream {
		if !retryable(u) {
			continue
		}
		later := len(h.Upstream) - i - 1
		return judged(later > 0, "a retry after the retry-able upstream failure ("+label(u)+")",
			plural(later, "later upstream request"))
	}
	return unknown(expected, "no retry-able upstream failure happened")
}
