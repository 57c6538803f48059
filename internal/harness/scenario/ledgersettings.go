package scenario

import (
	"github.com/replaycheck/replaycheck/fakes/ledger"
	"github.com/replaycheck/replaycheck/internal/wire"
)

// LedgerSettings are the ledger-global settings a scenario's mcp (or a
// target file's) may choose; the zero value chooses nothing.
type LedgerSettings struct {
	// Protocol is ledger.Config.Protocol; "" chooses nothing.
	Protocol wire.MCPProtocol
	// HonourCancellation is ledger.Config.HonourCancellation; nil chooses
	// nothing.
	HonourCancellation *bool
}

// Ledger returns the ledger settings m chooses (mcp.protocol,
// mcp.honour_cancellation); the zero value when m is nil.
func (m *MCP) Ledger() LedgerSettings {
	if m == nil {
		return LedgerSettings{}
	}
	return LedgerSettings{Protocol: m.Protocol, HonourCancellation: m.HonourCancellation}
}

// Over returns l with what it leaves unchosen taken from base: the
// scenario's choice wins over its target's.
func (l LedgerSettings) Over(base LedgerSettings) LedgerSettings {
	if l.Protocol == "" {
		l.Protocol = base.Protocol
	}
	if l.HonourCancellation == nil {
		l.HonourCancellation = base.HonourCancellation
	}
	return l
}

// Config returns ledger cfg with l's choices applied.
func (l LedgerSettings) Config(cfg ledger.Config) ledger.Config {
	cfg.Protocol = l.Protocol
	if l.HonourCancellation != nil {
		cfg.HonourCancellation = *l.HonourCancellation
	}
	return cfg
}
