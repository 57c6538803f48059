package rules

import (
	"github.com/replaycheck/replaycheck/internal/harness/history"
	"github.com/replaycheck/replaycheck/internal/wire"
)

// duplicateOwner says, for a duplicate execution of a tools/call whose
// answer was lost (its response stream broke after the tool ran), who must
// prevent it under p, the protocol the call was served at: on a stateless
// protocol (2026-07-28 and later) the client must re-issue such a call, so
// the duplicate is the server's or the gateway's to prevent; on 2025-xx it
// is the client's replay. With no version recorded it says nothing ("").
func duplicateOwner(p wire.MCPProtocol) string {
	if p.Stateless() {
		return "on MCP " + string(p) + " a re-issue after a broken stream is what the spec asks of the client; " +
			"the duplicate is the server's to prevent (an idempotency key it honours, or cancellation honoured " +
			"before it commits: ledger honour_cancellation) or the gateway's (hold non-idempotent tools)"
	}
	if p == "" {
		return ""
	}
	return "on MCP " + string(p) + " the client replayed a call whose outcome was unknown"
}

// servedAt returns the protocol recorded on h.MCP[i], or, when it has none,
// on the nearest event before it that has one ("" when none does).
func servedAt(mcp []wire.MCPEvent, i int) wire.MCPProtocol {
	for j := i; j >= 0; j-- {
		if mcp[j].Protocol != "" {
			return mcp[j].Protocol
		}
	}
	return ""
}

// reissueOwner says who must prevent g's duplicates (duplicateOwner) when
// they re-ran a call after an execution of it whose answer a fault lost
// (see ambiguous), under the protocol that execution was served at; ""
// when none did, or when the model asked for the call again (the client's
// report caused the re-run, which reaskText says).
func reissueOwner(h *history.History, g *callGroup) string {
	if g.reasks > 0 || g.replays() == 0 {
		return ""
	}
	lost := callsWith(h, ambiguous)
	for _, i := range g.execs[:len(g.execs)-1] {
		if lost[i] {
			return duplicateOwner(servedAt(h.MCP, i))
		}
	}
	return ""
}
