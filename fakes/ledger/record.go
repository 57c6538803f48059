package ledger

import (
	"time"

	"github.com/replaycheck/replaycheck/internal/wire"
)

// run is what the ledger keeps for one run token. Guarded by Server.mu.
type run struct {
	counts wire.MCPCounts
	keys   map[string]struct{}
	events []wire.MCPEvent
	// active is when the run was last armed or seen (LastActive).
	active time.Time
}

func newRun() *run {
	return &run{counts: wire.MCPCounts{Calls: map[string]int{}}, keys: map[string]struct{}{}}
}
