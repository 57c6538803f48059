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
// forwards every run to a real MCP server.
func ownTarget(s *scenario.Scenario, targets []target.Target) bool {
	if s.Isolated() {
		return true
	}
	for _, t := range targets {
		if t.Traits().Forward != nil {
			return true
		}
	}
	return false
}
