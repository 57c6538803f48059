package matrix

import (
	"github.com/replaycheck/replaycheck/internal/harness/explore"
	"github.com/replaycheck/replaycheck/internal/wire"
)

// The mechanism families, the matrix's column groups, in column order.
const (
	// FamilyStatus: the model request fails with a status or a reset
	// (decided by the retry-policy fingerprint).
	FamilyStatus = "model request fails"
	// FamilyStream: the model's answer is cut, stalled, truncated or
	// served by another model.
	FamilyStream = "model answer breaks"
	// FamilyMCP: the MCP server over HTTP fails a session step or a
	// tools/call before or after it ran.
	FamilyMCP = "MCP over HTTP"
	// FamilyStdio: the MCP server process dies, hangs or garbles its
	// output.
	FamilyStdio = "MCP over stdio"
	// FamilyKill: the agent itself is killed at a point and resumed; only
	// targets that declare how to resume have its kinds.
	FamilyKill = "agent killed and resumed"
	// FamilyClient: the shipped client scenarios (scenarios/clients), each
	// run as `run` runs it; only client targets have them.
	FamilyClient = "client scenarios"
)

// Families lists the mechanism families in column order.
func Families() []string {
	return []string{FamilyStatus, FamilyStream, FamilyMCP, FamilyStdio, FamilyKill, FamilyClient}
}

// familyOf is the column group of fault kind k.
func familyOf(k explore.Kind) string {
	switch {
	case k.Kills():
		return FamilyKill
	case k.MCP() && k.Transport == wire.MCPTransportStdio:
		return FamilyStdio
	case k.MCP():
		return FamilyMCP
	case k.Fingerprinted():
		return FamilyStatus
	}
	return FamilyStream
}
