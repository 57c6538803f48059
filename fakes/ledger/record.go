package ledger

import "github.com/replaycheck/replaycheck/internal/wire"

// Counts are what the ledger counted for one run token or in total.
type Counts = wire.MCPCounts // transitional: removed after the issue-19 merge

// Event kinds (see wire.MCPKind).
const (
	EventCall           = wire.MCPCall           // transitional: removed after the issue-19 merge
	EventWrite          = wire.MCPWrite          // transitional: removed after the issue-19 merge
	EventResult         = wire.MCPResult         // transitional: removed after the issue-19 merge
	EventFault          = wire.MCPFault          // transitional: removed after the issue-19 merge
	EventCancelled      = wire.MCPCancelled      // transitional: removed after the issue-19 merge
	EventSession        = wire.MCPSession        // transitional: removed after the issue-19 merge
	EventSessionRefused = wire.MCPSessionRefused // transitional: removed after the issue-19 merge
	EventToolsChanged   = wire.MCPToolsChanged   // transitional: removed after the issue-19 merge
)

// The Detail of an EventToolsChanged, of an EventCall of a tool the server
// did not offer, and of an EventFault (see wire).
const (
	ToolRemoved                    = wire.MCPToolRemoved                    // transitional: removed after the issue-19 merge
	ToolAdded                      = wire.MCPToolAdded                      // transitional: removed after the issue-19 merge
	CallUnknownTool                = wire.MCPCallUnknownTool                // transitional: removed after the issue-19 merge
	FaultChangeTools               = wire.MCPFaultChangeTools               // transitional: removed after the issue-19 merge
	FaultExpireSession             = wire.MCPFaultExpireSession             // transitional: removed after the issue-19 merge
	FaultExpireSessionAfterExecute = wire.MCPFaultExpireSessionAfterExecute // transitional: removed after the issue-19 merge
	FaultUnauthorized              = wire.MCPFaultUnauthorized              // transitional: removed after the issue-19 merge
	FaultWriteFailed               = wire.MCPFaultWriteFailed               // transitional: removed after the issue-19 merge
)

// Event is one thing the ledger saw.
type Event = wire.MCPEvent // transitional: removed after the issue-19 merge

// run is what the ledger keeps for one run token. Guarded by Server.mu.
type run struct {
	counts Counts
	keys   map[string]struct{}
	events []Event
	faults []*armed
}

func newRun() *run {
	return &run{counts: Counts{Calls: map[string]int{}}, keys: map[string]struct{}{}}
}
