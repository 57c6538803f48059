package rules

import (
	"fmt"
	"strings"

	"github.com/replaycheck/replaycheck/harness/history"
)

func cancelPropagatesRule() Rule {
	return Rule{
		Name: "cancel-propagates",
		Doc: "When the caller gives up on a slow tool call (a tool timeout, the user's deadline), the MCP " +
			"server sees the request cancelled instead of running on. Cannot judge when no tool call was slow " +
			"or the slow call finished before anyone gave up.",
		Seed:  "004 #4 (Codex CLI 0.165.0): cancel remote MCP tool requests when their local futures are dropped",
		Check: cancelPropagates,
	}
}

// cancelPropagates looks at each tools/call that a delay fault held and
// whether the ledger saw it cancelled or answered.
func cancelPropagates(h *history.History) Verdict {
	const expected = "the slow tool call cancelled on the MCP server"
	slow := map[string]bool{}
	var tools []string
	for _, e := range h.MCP {
		if e.Kind == history.MCPFault && strings.Contains(e.Detail, "delay") {
			key := e.RequestID + "\x00" + e.Tool
			if !slow[key] {
				slow[key] = true
				tools = append(tools, e.Tool)
			}
		}
	}
	if len(slow) == 0 {
		return unknown(expected, "no tool call was slow")
	}
	cancelled, answered := 0, 0
	for _, e := range h.MCP {
		key := e.RequestID + "\x00" + e.Tool
		if !slow[key] {
			continue
		}
		switch e.Kind {
		case history.MCPCancelled:
			cancelled++
		case history.MCPResult:
			answered++
		}
	}
	if cancelled == 0 && answered > 0 && h.Error == "" {
		return unknown(expected, "the slow call finished before the caller gave up")
	}
	observed := fmt.Sprintf("%d cancelled (%s)", cancelled, strings.Join(tools, ", "))
	if running := len(slow) - cancelled - answered; running > 0 {
		observed += fmt.Sprintf(", %d left running on the server", running)
	}
	return judged(cancelled >= len(slow), fmt.Sprintf("%s cancelled on the MCP server", plural(len(slow), "slow tool call")), observed)
}
