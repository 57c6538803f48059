package rules

import (
	"fmt"
	"strings"

	"github.com/replaycheck/replaycheck/harness/history"
)

func noReplayAmbiguousMCPRule() Rule {
	return Rule{
		Name: "no-replay-ambiguous-mcp",
		Doc: "A tools/call whose connection dropped after the server executed it (the outcome is unknown to " +
			"the client) is not sent again, whatever idempotentHint or readOnlyHint the tool advertises. " +
			"Cannot judge when no tools/call connection was dropped after execution.",
		Seed:  "001 (agent-framework #9247): ambiguous connection loss must not replay tools/call; hints do not authorize it",
		Check: noReplayAmbiguousMCP,
	}
}

// noReplayAmbiguousMCP counts, for each drop_after_execute fault, the calls of
// the same tool that followed it within the same client exchange, beyond the
// calls of that tool the script still had to make (a script may call a tool
// more than once).
func noReplayAmbiguousMCP(h *history.History) Verdict {
	const expected = "no tools/call re-sent after its connection dropped"
	drops, resent := 0, 0
	for i, e := range h.MCP {
		if e.Kind != history.MCPFault || !strings.Contains(e.Detail, "drop_after_execute") {
			continue
		}
		drops++
		x := exchangeAt(h, e.At.D())
		before, after := 0, 0
		for j, c := range h.MCP {
			if c.Kind != history.MCPCall || c.Tool != e.Tool || exchangeAt(h, c.At.D()) != x {
				continue
			}
			if j < i {
				before++
			} else {
				after++
			}
		}
		left := max(countOf(h.Setup.Tools, e.Tool, 1)-before, 0)
		resent += max(after-left, 0)
	}
	if drops == 0 {
		return unknown(expected, "no tools/call connection was dropped after execution")
	}
	return judged(resent == 0, fmt.Sprintf("no tools/call re-sent after %s", plural(drops, "dropped connection")),
		fmt.Sprintf("%d re-sent (%s)", resent, plural(len(h.Writes()), "write")))
}

// countOf counts tool in tools, or returns least when the script names it fewer
// times (a script the harness does not know counts as one call).
func countOf(tools []string, tool string, least int) int {
	n := 0
	for _, t := range tools {
		if t == tool {
			n++
		}
	}
	return max(n, least)
}
