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
	// listSent counts the notifications/tools/list_changed sent on the
	// run's subscriptions/listen streams (2026-07-28, no session); listed
	// its tools/list requests without a session. A stateless change_tools
	// answer waits on them (relister).
	listSent, listed uint64
}

func newRun() *run {
	return &run{counts: wire.MCPCounts{Calls: map[string]int{}}}
}
