package rules

import (
	"fmt"

	"github.com/replaycheck/replaycheck/harness/history"
)

func noReplayAfterDispatchRule() Rule {
	return Rule{
		Name: "no-replay-after-dispatch",
		Doc: "A tool call that reached the MCP server is executed at most once per logical call: " +
			"no retry and no fallback re-runs it. Cannot judge when no tool call reached the server.",
		Seed:  "000 (LiteLLM): each endpoint under fault_on — Before 3 writes, After 1",
		Check: noReplayAfterDispatch,
	}
}

// noReplayAfterDispatch compares the tools/call requests the ledger executed
// with the logical calls the scenario's script makes (its calls times its
// client requests).
func noReplayAfterDispatch(h *history.History) Verdict {
	ex := executions(h)
	if len(ex) == 0 {
		return unknown("each dispatched tool call executed at most once", "no tool call reached the MCP server, so nothing could be replayed")
	}
	limit := h.LogicalCalls()
	if limit == 0 {
		limit = len(h.Requests)
	}
	expected := fmt.Sprintf("at most %s for %s", plural(limit, "execution"), plural(limit, "logical tool call"))
	observed := fmt.Sprintf("%s (%s)", plural(len(ex), "execution"), tally(byTool(ex)))
	return judged(len(ex) <= limit, expected, observed)
}
