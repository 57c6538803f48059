package rules

import (
	"fmt"

	"github.com/replaycheck/replaycheck/harness/history"
)

func noStaleToolCallRule() Rule {
	return Rule{
		Name: "no-stale-tool-call",
		Doc: "After the MCP server changed its tool list during a client request (a tool removed, renamed or added, " +
			"announced with notifications/tools/list_changed), the target's later client requests call only tools the " +
			"server offers: a tools/call of a tool it removed (the server answers it with the MCP unknown-tool error) " +
			"means the target kept a stale list and offered the model a tool that is gone. The target must drop its " +
			"cached list on the notification and list the tools again before it offers them. The notification is " +
			"asynchronous, so calls in the request during which the list changed are not judged, nor, when the target " +
			"listed the tools again after the change, calls before that listing. Cannot judge when the list did not " +
			"change, or no model request followed in a later client request.",
		Seed: "004 #3: \"The tool registry is treated as immutable for the life of a subagent, while MCP servers connect " +
			"asynchronously and their tool lists can change\"; \"Re-run tools/list and update every live subagent's toolset when " +
			"the notification arrives\"",
		Check: noStaleToolCall,
	}
}

// noStaleToolCall finds the first tool list change and judges the tools/call
// requests of the client exchanges after the one it happened in, from the
// target's first tools/list after the change on when there is one.
func noStaleToolCall(h *history.History) Verdict {
	const expected = "no tools/call of a tool the server no longer offers in a client request after its tool list changed"
	first := -1
	for i, e := range h.MCP {
		if e.Kind == history.MCPToolsChanged {
			first = i
			break
		}
	}
	if first < 0 {
		return unknown(expected, "the server's tool list did not change")
	}
	changedAt := h.MCP[first].At
	during := h.ExchangeAt(changedAt.D())
	later := 0
	for _, u := range h.Upstream {
		if h.ExchangeAt(u.At.D()) > during {
			later++
		}
	}
	if later == 0 {
		return unknown(expected, fmt.Sprintf("no model request followed in a later client request than the tool list change (request %d)", during+1))
	}
	stale, calls, lists := 0, 0, 0
	var staleTools []string
	for _, e := range h.MCP {
		if e.At < changedAt {
			continue
		}
		switch {
		case e.Kind == history.MCPSession && e.Detail == "tools/list":
			lists++
		case e.Kind == history.MCPCall && h.ExchangeAt(e.At.D()) > during && (lists > 0 || !listedAfter(h, changedAt)):
			calls++
			if e.Detail == history.MCPCallUnknownTool {
				stale++
				staleTools = appendNew(staleTools, e.Tool)
			}
		}
	}
	listed := plural(lists, "tools/list request") + " after the change"
	if stale > 0 {
		return judged(false, expected, fmt.Sprintf("%s of %s the server no longer offered (%s)", plural(stale, "tools/call"), capped(staleTools), listed))
	}
	return judged(true, expected, fmt.Sprintf("%s in later requests, none of a removed tool (%s)", plural(calls, "tools/call"), listed))
}

// listedAfter reports whether the target sent a tools/list at or after at.
func listedAfter(h *history.History, at history.Duration) bool {
	for _, e := range h.MCP {
		if e.At >= at && e.Kind == history.MCPSession && e.Detail == "tools/list" {
			return true
		}
	}
	return false
}
