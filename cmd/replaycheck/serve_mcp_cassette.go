package main

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"time"

	"github.com/replaycheck/replaycheck/fakes/ledger"
	"github.com/replaycheck/replaycheck/fakes/ledger/mcpcassette"
)

// mcpCassetteDir is the subdirectory of --record that gets the MCP side's
// cassettes, so that a model cassette directory (--cassette DIR reads its
// *.jsonl) holds model exchanges only.
const mcpCassetteDir = "mcp"

// forwardsMCP reports whether serve forwards the MCP side to a real server
// (--mcp-relay or --mcp-command).
func (opts *serveOptions) forwardsMCP() bool {
	return opts.MCPRelay != "" || strings.TrimSpace(opts.MCPCommand) != ""
}

// mcpCassetteFlags checks serve's MCP record and replay flags
// (--mcp-cassette, and --record while forwarding) and returns the forward
// they make of fwd, the server --mcp-relay or --mcp-command names (nil for
// none): with --mcp-cassette a replay of it, and with --record a recorder
// of what is forwarded, in DIR/mcp/session-TIME.jsonl. Every error is the
// user's. The caller closes the recorder (nil when nothing is recorded)
// after the ledger.
func mcpCassetteFlags(opts *serveOptions, fwd *ledger.Forward, now time.Time) (*ledger.Forward, *mcpcassette.Recorder, error) {
	if opts.MCPCassette != "" {
		if fwd != nil {
			return nil, nil, errors.New("--mcp-cassette replays a recorded MCP server in place of a real one: not with --mcp-relay or --mcp-command")
		}
		c, err := mcpcassette.Load(opts.MCPCassette)
		if err != nil {
			return nil, nil, fmt.Errorf("--mcp-cassette: %w", err)
		}
		return &ledger.Forward{Cassette: c, Writes: opts.MCPWrites}, nil, nil
	}
	if opts.RecordDir == "" || fwd == nil {
		return fwd, nil, nil
	}
	if st, err := os.Stat(opts.RecordDir); err == nil && !st.IsDir() {
		return nil, nil, fmt.Errorf("--record %s: not a directory", opts.RecordDir)
	}
	rec, err := newSessionFile(filepath.Join(opts.RecordDir, mcpCassetteDir), now, mcpcassette.Create)
	if err != nil {
		return nil, nil, fmt.Errorf("--record: %w", err)
	}
	fwd.Record = rec
	return fwd, rec, nil
}

// mcpCassetteBanner describes the MCP record and replay settings for
// serve's banner; "" when there are none.
func mcpCassetteBanner(opts *serveOptions, fk *servedFakes) string {
	s := ""
	if opts.MCPCassette != "" {
		s += fmt.Sprintf("  MCP cassette: %s (replay; a miss: an MCP error, counted)\n", opts.MCPCassette)
	}
	if fk.mcpRecorder != nil {
		s += fmt.Sprintf("  MCP recording to: %s\n", fk.mcpRecorder.Path())
	}
	return s
}
