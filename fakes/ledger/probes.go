package ledger

import "github.com/replaycheck/replaycheck/fakes/fault"

// Probes returns the ledger's fault kinds as explore sweeps them, in sweep
// order. The slice is new on every call.
func Probes() []fault.Probe[Fault] {
	return []fault.Probe[Fault]{
		{Name: "mcp-session-fail", Doc: "refuse the session step (initialize, tools/list) with 503, as a server still starting does", At: fault.AtSessionStep, Build: func(fault.Spot, fault.Settings) Fault {
			return Fault{FailBeforeExecute: &FailBeforeExecute{Status: 503}}
		}},
		{Name: "mcp-session-reset", Doc: "reset the connection of the session step (initialize, tools/list)", At: fault.AtSessionStep, Build: func(fault.Spot, fault.Settings) Fault {
			return Fault{FailBeforeExecute: &FailBeforeExecute{Reset: true}}
		}},
		{Name: "mcp-fail", Doc: "refuse the tools/call with 503 before it executes", At: fault.AtToolCall, Build: func(fault.Spot, fault.Settings) Fault {
			return Fault{FailBeforeExecute: &FailBeforeExecute{Status: 503}}
		}},
		{Name: "mcp-reset", Doc: "reset the tools/call connection before it executes", At: fault.AtToolCall, Build: func(fault.Spot, fault.Settings) Fault {
			return Fault{FailBeforeExecute: &FailBeforeExecute{Reset: true}}
		}},
		{Name: "mcp-drop", Doc: "execute the tools/call, then drop the connection before the answer", At: fault.AtToolCall, Build: func(fault.Spot, fault.Settings) Fault {
			return Fault{DropAfterExecute: &DropAfterExecute{}}
		}},
		{Name: "mcp-drop-mid", Doc: "execute the tools/call, send the answer's status line and headers, then drop the connection before the result", At: fault.AtToolCall, Build: func(fault.Spot, fault.Settings) Fault {
			return Fault{DropAfterExecute: &DropAfterExecute{After: DropAfterHeaders}}
		}},
		{Name: "mcp-is-error", Doc: "answer the tools/call with isError instead of executing it", At: fault.AtToolCall, Build: func(fault.Spot, fault.Settings) Fault {
			return Fault{IsError: &IsError{Message: "replaycheck explore: injected tool error"}}
		}},
		{Name: "mcp-slow", Doc: "execute the tools/call, then hold the answer back for --slow", At: fault.AtToolCall, Build: func(_ fault.Spot, s fault.Settings) Fault {
			d := fault.Duration(s.Slow)
			return Fault{Delay: &d}
		}},
		{Name: "mcp-expire", Doc: "forget the tools/call's MCP session before it executes (404 on its session id)", At: fault.AtToolCall, Build: func(fault.Spot, fault.Settings) Fault {
			return Fault{ExpireSession: &ExpireSession{}}
		}},
		{Name: "mcp-expire-after", Doc: "execute the tools/call, then forget its MCP session and close the connection before the answer", At: fault.AtToolCall, Build: func(fault.Spot, fault.Settings) Fault {
			return Fault{ExpireSession: &ExpireSession{After: ExpireAfterExecute}}
		}},
		{Name: "mcp-unauthorized", Doc: "refuse the tools/call with 401 and WWW-Authenticate (an expired token) before it executes", At: fault.AtToolCall, Build: func(fault.Spot, fault.Settings) Fault {
			return Fault{Unauthorized: &Unauthorized{}}
		}},
		{Name: "mcp-rename", Doc: "execute the tools/call, then rename its tool (TOOL_v2) and notify tools/list_changed before the answer", At: fault.AtToolCall, Build: func(p fault.Spot, _ fault.Settings) Fault {
			return Fault{ChangeTools: &ChangeTools{Rename: p.Tool, To: p.Tool + "_v2"}}
		}},
	}
}
