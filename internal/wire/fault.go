package wire

import "encoding/json"

// Fault sides, for FaultReport.Side.
const (
	FaultUpstream = "upstream"
	FaultMCP      = "mcp"
)

// FaultReport is what became of one armed fault in a run.
type FaultReport struct {
	// Side is FaultUpstream or FaultMCP; Index the fault's place in the
	// scenario's list for that side, from 1 as a person counts (upstream
	// fault 1 is faults.upstream[0]), as every report numbers it.
	Side  string `json:"side"`
	Index int    `json:"index"`
	// Fault is the fault as armed.
	Fault json.RawMessage `json:"fault"`
	// Method is the MCP session step an mcp fault applies to (initialize,
	// tools/list); "" for tools/call and for upstream faults.
	Method string `json:"method,omitempty"`
	// Matched counts the requests (tool calls, or the method's requests)
	// the fault matched; Fired how many of them it acted on.
	Matched int `json:"matched"`
	Fired   int `json:"fired"`
}
