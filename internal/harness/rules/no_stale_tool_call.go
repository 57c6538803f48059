package rules

import (
	"fmt"
	"maps"
	"slices"

	"github.com/replaycheck/replaycheck/internal/harness/history"
	"github.com/replaycheck/replaycheck/internal/toolname"
	"github.com/replaycheck/replaycheck/internal/wire"
)

func noStaleToolCallRule() Rule {
	return Rule{
		Name:    "no-stale-tool-call",
		Summary: "after tools/list_changed, later requests use the server's current tool list",
		Doc: "After the MCP server changed its tool list during a client request (a tool removed, renamed or added, " +
			"announced with notifications/tools/list_changed), the target's later client requests use the server's current list: " +
			"their model requests offer a tool the server added and do not offer one it removed, and no tools/call names a " +
			"tool the server no longer offers (the server answers such a call with the MCP unknown-tool error). Either " +
			"means the target kept a stale list: the model never learns of an added tool, and calls one that is gone. " +
			"The target must drop its cached list on the notification and list the tools again before it offers them. " +
			"A model request that offers no tools at all (a title or summary request) is not judged; a target that offers only " +
			"chosen tools of the server fails when an added tool is not among them. The notification is asynchronous, so the " +
			"request during which the list changed is not judged, nor, when the target listed the tools again after the change, " +
			"what it did before that listing. Cannot judge when the list did not change, or no later client request offered " +
			"tools or called one.",
		Seed: "004 #3: \"The tool registry is treated as immutable for the life of a subagent, while MCP servers connect " +
			"asynchronously and their tool lists can change\"; \"Re-run tools/list and update every live subagent's toolset when " +
			"the notification arrives\"",
		Fix: "On notifications/tools/list_changed, drop the cached tool list and call tools/list again before " +
			"the next model request offers tools.",
		Example: `# scenarios/mcp/tool-list-change.yaml, trimmed
name: tool renamed mid-session
requests: [{endpoint: chat}, {endpoint: chat}]
faults:
  mcp: [{tool: commit_write, change_tools: {rename: commit_write, to: record_entry}, times: once}]
expect:
  writes: 1
  mcp: {unknown_tool_calls: 0}
  rules: [no-stale-tool-call]
`,
		Check: noStaleToolCall,
	}
}

// noStaleToolCall finds the first tool list change and judges the model
// requests and tools/call requests of the client exchanges after the one it
// happened in, from the target's first tools/list after the change on when
// there is one: each model request that offers tools against the changes of
// the exchanges before its own, each call by whether the server knew its tool.
func noStaleToolCall(h *history.History) Verdict {
	const expected = "in client requests after the server's tool list changed, model requests offer the tools it added and not those it removed, " +
		"and no tools/call names a tool it no longer offers"
	first := -1
	for i, e := range h.MCP {
		if e.Kind == wire.MCPToolsChanged {
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
	relisted, listedAt := listedAfter(h, changedAt)
	for _, e := range h.MCP {
		if e.At < changedAt {
			continue
		}
		switch {
		case e.Kind == wire.MCPSession && e.Method == "tools/list":
			lists++
		case e.Kind == wire.MCPCall && h.ExchangeAt(e.At.D()) > during && (lists > 0 || !relisted):
			calls++
			if e.UnknownTool {
				stale++
				staleTools = appendNew(staleTools, e.Tool)
			}
		}
	}
	offers, staleOffers := 0, 0
	var offeredGone, missedAdded []string
	for _, u := range h.Upstream {
		ex := h.ExchangeAt(u.At.D())
		if ex <= during || len(u.Offered) == 0 || relisted && u.At < listedAt {
			continue
		}
		offers++
		ok := true
		changes := toolChangesBefore(h, ex)
		for _, tool := range slices.Sorted(maps.Keys(changes)) {
			change := changes[tool]
			offered := slices.ContainsFunc(u.Offered, func(name string) bool { return toolname.Names(name, tool) })
			switch {
			case change == wire.MCPToolRemoved && offered:
				ok = false
				offeredGone = appendNew(offeredGone, tool)
			case change == wire.MCPToolAdded && !offered:
				ok = false
				missedAdded = appendNew(missedAdded, tool)
			}
		}
		if !ok {
			staleOffers++
		}
	}
	listed := plural(lists, "tools/list request") + " after the change"
	if calls == 0 && offers == 0 {
		return unknown(expected, fmt.Sprintf("no model request of a later client request offered tools, and no tools/call was judged (%s)", listed))
	}
	if stale > 0 || staleOffers > 0 {
		var parts []string
		if staleOffers > 0 {
			part := fmt.Sprintf("%d of %s offered a stale list (", staleOffers, plural(offers, "model request"))
			switch {
			case len(offeredGone) > 0 && len(missedAdded) > 0:
				part += fmt.Sprintf("removed %s offered; added %s not offered", capped(offeredGone), capped(missedAdded))
			case len(offeredGone) > 0:
				part += fmt.Sprintf("removed %s offered", capped(offeredGone))
			default:
				part += fmt.Sprintf("added %s not offered", capped(missedAdded))
			}
			parts = append(parts, part+")")
		}
		if stale > 0 {
			parts = append(parts, fmt.Sprintf("%s of %s the server no longer offered", plural(stale, "tools/call"), capped(staleTools)))
		}
		return judged(false, expected, fmt.Sprintf("%s; %s", joinAnd(parts), listed))
	}
	return judged(true, expected, fmt.Sprintf("%s in later requests offered the current list; %s, none of a removed tool (%s)",
		plural(offers, "model request"), plural(calls, "tools/call"), listed))
}

// listedAfter reports whether the target sent a tools/list at or after at,
// and when it sent the first.
func listedAfter(h *history.History, at history.Duration) (bool, history.Duration) {
	for _, e := range h.MCP {
		if e.At >= at && e.Kind == wire.MCPSession && e.Method == "tools/list" {
			return true, e.At
		}
	}
	return false, 0
}

// toolChangesBefore returns the tools the server's list changes of the
// client exchanges before exchange ex changed, each with its last change
// (MCPToolRemoved or MCPToolAdded).
func toolChangesBefore(h *history.History, ex int) map[string]wire.MCPToolChange {
	out := map[string]wire.MCPToolChange{}
	for _, e := range h.MCP {
		if e.Kind == wire.MCPToolsChanged && h.ExchangeAt(e.At.D()) < ex {
			out[e.Tool] = e.Change
		}
	}
	return out
}
