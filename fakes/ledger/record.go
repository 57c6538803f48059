package ledger

import (
	"time"

	"github.com/replaycheck/replaycheck/internal/wire"
)

// run is what the ledger keeps for one run token. Guarded by Server.mu.
type run struct {
	counts wire.MCPCounts
	keys   orderedSet // idempotency keys seen, oldest first
	events []wire.MCPEvent
	// stdioEnded are the sessions of the ledger-stdio processes whose end
	// was recorded for the run (Server.stdioEnded), oldest first.
	stdioEnded []string
	// active is when the run was last armed or seen (LastActive).
	active time.Time
}

func newRun() *run {
	return &run{counts: wire.MCPCounts{Calls: map[string]int{}}}
}
