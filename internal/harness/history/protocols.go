package history

import "github.com/replaycheck/replaycheck/internal/wire"

// MCPProtocols returns the MCP protocol versions the run's sessions
// negotiated and its stateless requests used (wire.MCPEvent.Protocol), each
// once, in the order first seen, as the ledger counts them
// (wire.MCPCounts.AddProtocol); a version only asked for in a refused
// request (wire.MCPSessionRefused) is not one. Nil when no event says one
// (a history that predates them, or a ledger that could not tell).
func (h *History) MCPProtocols() []wire.MCPProtocol {
	var c wire.MCPCounts
	for _, e := range h.MCP {
		c.AddProtocol(e)
	}
	return c.Protocols
}
