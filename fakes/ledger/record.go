package ledger

import "github.com/replaycheck/replaycheck/internal/wire"

// run is what the ledger keeps for one run token. Guarded by Server.mu.
type run struct {
	counts wire.MCPCounts
	keys   map[string]struct{}
	events []wire.MCPEvent
	faults []*armed
}

func newRun() *run {
	return &run{counts: wire.MCPCounts{Calls: map[string]int{}}, keys: map[string]struct{}{}}
}
