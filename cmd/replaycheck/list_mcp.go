package main

import (
	"fmt"
	"os"
	"strings"

	"github.com/replaycheck/replaycheck/internal/harness/scenario"
	"github.com/replaycheck/replaycheck/internal/harness/target"
	"github.com/replaycheck/replaycheck/internal/secret"
)

// mcpSide says which MCP server s's runs on targets use: the scenario's own
// when it names one (mcp.relay, mcp.command or mcp.cassette), else each
// target's (a target file's mcp forwards every run), else replaycheck's
// ledger. With targets that differ, each is named: "forwarded to
// http://127.0.0.1:3001/mcp (t1); ledger (t2)".
func mcpSide(s *scenario.Scenario, targets []target.Target) string {
	if m := s.MCP; m != nil {
		switch {
		case m.Cassette != "":
			return "cassette " + m.Cassette
		case m.Relay != "" || len(m.Command) > 0:
			return forwardedTo(m.Relay, m.Command)
		}
	}
	var parts []string
	forwards := false
	for _, t := range targets {
		side := "ledger"
		if f := t.Traits().Forward; f != nil {
			forwards = true
			side = forwardedTo(f.Relay, f.Command)
		}
		parts = append(parts, fmt.Sprintf("%s (%s)", side, t.Name()))
	}
	if !forwards {
		return "ledger"
	}
	return strings.Join(parts, "; ")
}

// forwardedTo names the real MCP server a forwarder stands in front of:
// "forwarded to URL" (Streamable HTTP, its password and query values
// hidden) or "forwarded to command CMD ARGS" (spawned over stdio, its
// credentials hidden: see secret.Argv).
func forwardedTo(relay string, command []string) string {
	if relay != "" {
		return "forwarded to " + redactURL(relay)
	}
	return "forwarded to command " + strings.Join(secret.Argv(command, secret.Environ(os.Environ()), secret.Mark), " ")
}

// ownTarget reports whether s runs on fakes and a target of its own on
// targets: it needs them itself (scenario.Scenario.Isolated), or a target
// forwards every run to a real MCP server or chooses ledger settings.
func ownTarget(s *scenario.Scenario, targets []target.Target) bool {
	if s.Isolated() {
		return true
	}
	for _, t := range targets {
		if tr := t.Traits(); tr.Forward != nil || tr.Ledger != (scenario.LedgerSettings{}) {
			return true
		}
	}
	return false
}

// negotiated is what mcpProtocol says of runs whose protocol is not pinned.
const negotiated = "negotiated"

// mcpProtocol says which MCP protocol version s's runs on targets speak:
// the scenario's mcp.protocol when it pins one, else each target's (a
// target file's mcp.protocol), else "negotiated" (the client's choice). With
// targets that differ, each is named: "2026-07-28 (t1); negotiated (t2)".
func mcpProtocol(s *scenario.Scenario, targets []target.Target) string {
	if p := s.MCP.Ledger().Protocol; p != "" {
		return string(p)
	}
	var parts []string
	pinned := false
	for _, t := range targets {
		side := negotiated
		if p := t.Traits().Ledger.Protocol; p != "" {
			pinned, side = true, string(p)
		}
		parts = append(parts, fmt.Sprintf("%s (%s)", side, t.Name()))
	}
	if !pinned {
		return negotiated
	}
	return strings.Join(parts, "; ")
}
