package rules

import (
	"fmt"

	"github.com/replaycheck/replaycheck/internal/harness/history"
	"github.com/replaycheck/replaycheck/internal/wire"
)

func isErrorNotRetriedRule() Rule {
	return Rule{
		Name:    "is-error-not-retried",
		Summary: "an MCP isError result goes back to the model; it is not re-sent",
		Doc: "An MCP result with isError: true is a result, not a transport failure: it goes back to the " +
			"model, the call is not re-sent, and it does not count toward the server being unreachable — every " +
			"logical call reaches the server exactly once; a call the model asked for again after the client reported " +
			"the first failed (again_if_failed) is a logical call of its own. Cannot judge when no call got an isError result.",
		Seed: "004 #2: \"An MCP tool result with isError: true is not a transport failure; return it to the model instead of " +
			"retrying\"; 002 (hermes PR): three isError results opened the breaker and a later valid call never reached the " +
			"server — \"a completed RPC round-trip resets the breaker regardless of payload\". 002's maintainers closed that PR " +
			"and kept isError as a breaker strike (fixing the message instead); this rule follows the PR and 004 #2, so that design fails it",
		Fix: "Treat a tools/call answered with isError: true as a completed call: give the result to the " +
			"model, do not re-send it, and do not count it toward the server being unreachable (a circuit " +
			"breaker).",
		Example: `# scenarios/mcp/tool-errors.yaml, trimmed
name: tool error goes back to the model
request: {endpoint: responses}
faults:
  mcp: [{tool: commit_write, is_error: {message: "entry rejected"}, times: once}]
expect:
  status: 200
  mcp: {calls: {commit_write: 1}}
  rules: [is-error-not-retried]
`,
		Check: isErrorNotRetried,
	}
}

// isErrorNotRetried compares, for each client request, the tools/call
// requests the server received during it with the logical calls the script
// makes per request, once some call was answered with isError.
func isErrorNotRetried(h *history.History) Verdict {
	const expected = "each logical call to reach the server exactly once"
	errs := 0
	for _, e := range h.MCP {
		if answeredIsError(e) {
			errs++
		}
	}
	if errs == 0 {
		return unknown(expected, "no tool call was answered with isError")
	}
	per := h.Setup.ToolCalls
	if per == 0 {
		per = 1
	}
	n := max(len(h.Requests), 1)
	byExchange := make([][]wire.MCPEvent, n)
	for _, e := range h.Calls("") {
		i := max(h.ExchangeAt(e.At.D()), 0)
		byExchange[i] = append(byExchange[i], e)
	}
	again := reasks(h)
	total := 0
	for i, calls := range byExchange {
		want := per + len(again[i])
		total += want
		if len(calls) == want {
			continue
		}
		where := ""
		if n > 1 {
			where = fmt.Sprintf(" in request %d of %d", i+1, n)
		}
		asked := ""
		if len(again[i]) > 0 {
			asked = fmt.Sprintf(" (%s asked again by the model)", plural(len(again[i]), "call"))
		}
		return judged(false,
			fmt.Sprintf("%s per client request%s to reach the server once each, %s answered with isError", plural(want, "logical call"), asked, plural(errs, "call")),
			fmt.Sprintf("%s%s (%s)", plural(len(calls), "tools/call"), where, tally(byTool(calls))))
	}
	all := h.Calls("")
	observed := fmt.Sprintf("%s (%s)", plural(len(all), "tools/call"), tally(byTool(all)))
	for _, rs := range again {
		if s := reaskText(rs); s != "" {
			observed += "; " + s
		}
	}
	return judged(true,
		fmt.Sprintf("%s to reach the server once each, %s answered with isError", plural(total, "logical call"), plural(errs, "call")),
		observed)
}
