package rules

import (
	"fmt"
	"strings"

	"github.com/replaycheck/replaycheck/harness/history"
)

func isErrorNotRetriedRule() Rule {
	return Rule{
		Name: "is-error-not-retried",
		Doc: "An MCP result with isError: true is a result, not a transport failure: it goes back to the " +
			"model, the call is not re-sent, and it does not count toward the server being unreachable — every " +
			"logical call reaches the server exactly once. Cannot judge when no call got an isError result.",
		Seed:  "002 (hermes): isError results opened the breaker and later valid calls never reached the server; 004 #2",
		Check: isErrorNotRetried,
	}
}

// isErrorNotRetried compares the tools/call requests the server received with
// the logical calls, once some call was answered with isError.
func isErrorNotRetried(h *history.History) Verdict {
	const expected = "each logical call to reach the server exactly once"
	errs := 0
	for _, e := range h.MCP {
		if e.Kind == history.MCPFault && strings.Contains(e.Detail, "is_error") {
			errs++
		}
	}
	if errs == 0 {
		return unknown(expected, "no tool call was answered with isError")
	}
	calls := h.Calls("")
	logical := h.LogicalCalls()
	if logical == 0 {
		logical = len(h.Requests)
	}
	return judged(len(calls) == logical,
		fmt.Sprintf("%s to reach the server once each, %s answered with isError", plural(logical, "logical call"), plural(errs, "call")),
		fmt.Sprintf("%s (%s)", plural(len(calls), "tools/call"), tally(byTool(calls))))
}
