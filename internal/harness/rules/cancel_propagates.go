package rules

import (
	"fmt"
	"strings"
	"time"

	"github.com/replaycheck/replaycheck/internal/harness/history"
	"github.com/replaycheck/replaycheck/internal/wire"
)

func cancelPropagatesRule() Rule {
	return Rule{
		Name:    "cancel-propagates",
		Summary: "a tool call the caller gave up on is cancelled on the MCP server",
		Doc: "When the caller gives up on a slow tool call (a tool timeout, the user's deadline), the MCP " +
			"server sees the request cancelled instead of running on. Cannot judge when no tool call was slow " +
			"or the slow call finished before anyone gave up.",
		Seed: "004 #4: \"Propagate cancellation on every exit path (user stop, timeout, parent task cancelled, future dropped)\"; " +
			"Codex CLI 0.165.0 \"Cancelled remote MCP tool requests when their local response futures are dropped\"",
		Fix: "When a tool call times out or its caller gives up, cancel it on the server (cancel the call's " +
			"context, so the SDK sends notifications/cancelled) instead of abandoning it.",
		Example: `# scenarios/mcp/cancel.yaml, trimmed
name: tool timeout cancels the call
request: {endpoint: chat}
gateway: {tool_timeout: 1s}
faults:
  mcp: [{tool: commit_write, delay: 15s}]
expect:
  rules: [cancel-propagates]
`,
		Check: cancelPropagates,
	}
}

// cancelPropagates looks at each tools/call that a delay fault held and
// whether the ledger saw it cancelled, answered in time, answered after the
// caller had given up (after the target's tool timeout, or after the client
// had its answer), or left running.
func cancelPropagates(h *history.History) Verdict {
	const expected = "the slow tool call cancelled on the MCP server"
	type call struct {
		start time.Duration
		tool  string
	}
	slow := map[string]call{}
	var order []string
	held := killHolds(h)
	for i, e := range h.MCP {
		if m, ok := e.FaultMeaning(); ok && m.ClientSees == wire.ClientSeesLateAnswer && !held[i] {
			key := e.RequestID + "\x00" + e.Tool
			if _, ok := slow[key]; !ok {
				slow[key] = call{start: e.At.D(), tool: e.Tool}
				order = append(order, key)
			}
		}
	}
	if len(slow) == 0 {
		return unknown(expected, "no tool call was slow")
	}
	gaveUp := func(c call, at time.Duration) bool {
		if t := h.Setup.ToolTimeout.D(); t > 0 && at-c.start > t {
			return true
		}
		i := h.ExchangeAt(c.start)
		return i >= 0 && at > h.Requests[i].End.D()
	}
	cancelled, inTime, ranOn := 0, 0, 0
	for _, e := range h.MCP {
		c, ok := slow[e.RequestID+"\x00"+e.Tool]
		if !ok {
			continue
		}
		switch {
		case e.Kind == wire.MCPCancelled:
			cancelled++
		case e.Kind == wire.MCPResult && gaveUp(c, e.At.D()):
			ranOn++
		case e.Kind == wire.MCPResult:
			inTime++
		}
	}
	running := len(slow) - cancelled - inTime - ranOn
	if inTime == len(slow) && h.Error == "" {
		return unknown(expected, "the slow call finished before the caller gave up")
	}
	tools := make([]string, len(order))
	for i, k := range order {
		tools[i] = slow[k].tool
	}
	observed := fmt.Sprintf("%d cancelled (%s)", cancelled, strings.Join(tools, ", "))
	if ranOn > 0 {
		observed += fmt.Sprintf(", %d answered after the caller had given up", ranOn)
	}
	if running > 0 {
		observed += fmt.Sprintf(", %d left running on the server", running)
	}
	return judged(ranOn == 0 && running == 0 && cancelled > 0, fmt.Sprintf("%s cancelled on the MCP server", plural(len(slow)-inTime, "slow tool call")), observed)
}
