package ledgerstdio

import (
	"context"
	"errors"
	"io"
	"slices"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/replaycheck/replaycheck/fakes/fault"
	"github.com/replaycheck/replaycheck/fakes/ledger"
	"github.com/replaycheck/replaycheck/internal/wire"
)

// TestLedgerStdioProtocols: go-sdk clients of both protocol generations
// list the tools of ledger-stdio and call commit_write through it; the
// ledger records on the call the version the stdio client negotiated (not
// the version of the process's own session with the ledger). A ledger that
// pins a version (Config.Protocol) makes the process serve only that one.
func TestLedgerStdioProtocols(t *testing.T) {
	for _, tt := range []struct {
		name string
		pin  wire.MCPProtocol // the ledger's Config.Protocol
		ask  wire.MCPProtocol // the client's ClientSessionOptions.ProtocolVersion
		want wire.MCPProtocol // negotiated; "" refused
	}{
		{"2026-07-28", "", wire.MCPProtocol20260728, wire.MCPProtocol20260728},
		{"2025-11-25", "", wire.MCPProtocol20251125, wire.MCPProtocol20251125},
		{"2025-06-18", "", wire.MCPProtocol20250618, wire.MCPProtocol20250618},
		{"pinned 2025-11-25, asked 2026-07-28", wire.MCPProtocol20251125, wire.MCPProtocol20260728, wire.MCPProtocol20251125},
		{"pinned 2025-11-25, asked 2025-06-18", wire.MCPProtocol20251125, wire.MCPProtocol20250618, wire.MCPProtocol20250618},
		{"pinned 2026-07-28, asked 2026-07-28", wire.MCPProtocol20260728, wire.MCPProtocol20260728, wire.MCPProtocol20260728},
		{"pinned 2026-07-28, asked 2025-11-25", wire.MCPProtocol20260728, wire.MCPProtocol20251125, ""},
	} {
		t.Run(tt.name, func(t *testing.T) {
			const token = "rc0stdioP001"
			l, url, _ := stdioLedgerWith(t, token, ledger.Config{Protocol: tt.pin})
			ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
			defer cancel()
			transport, done := servePipes(ctx, &Options{URL: url, ErrOut: io.Discard})
			client := mcp.NewClient(&mcp.Implementation{Name: "test", Version: "1"}, nil)
			cs, err := client.Connect(ctx, transport, &mcp.ClientSessionOptions{ProtocolVersion: string(tt.ask)})
			if tt.want == "" {
				var rpcErr *jsonrpc.Error
				if err == nil || !errors.As(err, &rpcErr) || rpcErr.Code != mcp.CodeUnsupportedProtocolVersion {
					t.Fatalf("Connect at %s to a ledger pinned to %s = %v, want refused with %d", tt.ask, tt.pin, err, mcp.CodeUnsupportedProtocolVersion)
				}
				_ = transport.Writer.Close()
				if err := <-done; err != nil {
					t.Errorf("Serve after a refused client: %v", err)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if got := wire.MCPProtocol(cs.InitializeResult().ProtocolVersion); got != tt.want {
				t.Errorf("negotiated %s, want %s", got, tt.want)
			}
			if names := toolNames(listTools(t, ctx, cs)); len(names) != len(stdioToolNames) {
				t.Errorf("tools %v, want %v", names, stdioToolNames)
			}
			commitWrite(t, ctx, cs, "entry-"+token)
			_ = cs.Close()
			if err := <-done; err != nil {
				t.Fatalf("Serve: %v", err)
			}
			var calls []wire.MCPProtocol
			for _, e := range l.Events(token) {
				if e.Kind == wire.MCPCall {
					calls = append(calls, e.Protocol)
				}
			}
			if len(calls) != 1 || calls[0] != tt.want {
				t.Errorf("the ledger's call events' protocols = %v, want [%s]", calls, tt.want)
			}
			if c := l.Counts(token); c.Writes != 1 || c.Spawns != 1 {
				t.Errorf("ledger counts %+v, want 1 write, 1 spawn", c)
			}
		})
	}
}

// TestLedgerStdioCancellationHonoured: a stdio client cancels a keyed write
// while a delay holds it, on a ledger that honours cancellation: the
// cancellation crosses the process (the client's notice over stdio ends the
// forwarded call, whose stream to the ledger closes) and nothing is written,
// at both protocol generations.
func TestLedgerStdioCancellationHonoured(t *testing.T) {
	for _, protocol := range []wire.MCPProtocol{wire.MCPProtocol20260728, wire.MCPProtocol20251125} {
		t.Run(string(protocol), func(t *testing.T) {
			const token = "rc0stdioC001"
			d := fault.Duration(time.Hour)
			l, url, path := stdioLedgerWith(t, token, ledger.Config{HonourCancellation: true}, ledger.Fault{Tool: ledger.ToolCommitWriteKeyed, Delay: &d})
			ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
			defer cancel()
			p := mustSpawn(t, ctx, url, protocol)
			callCtx, cancelCall := context.WithCancel(ctx)
			errc := make(chan error, 1)
			go func() {
				_, err := p.cs.CallTool(callCtx, &mcp.CallToolParams{Name: ledger.ToolCommitWriteKeyed, Arguments: map[string]any{"entry": "entry-" + token, "idempotency_key": "k-" + token}})
				errc <- err
			}()
			// The tool runs (it saw the key) and the delay holds its commit.
			waitLedger(t, l, token, func(c wire.MCPCounts) bool { return c.Keys == 1 })
			cancelCall()
			if err := <-errc; err == nil {
				t.Fatal("CallTool with a cancelled context succeeded")
			}
			waitLedger(t, l, token, func(wire.MCPCounts) bool {
				return slices.ContainsFunc(l.Events(token), func(e wire.MCPEvent) bool { return e.IsFault(wire.MCPFaultCancelledBeforeCommit) })
			})
			if c := l.Counts(token); c.Writes != 0 || c.Cancellations != 1 {
				t.Errorf("ledger counts %+v, want no write and 1 cancellation", c)
			}
			if got := fileLines(t, path); len(got) != 0 {
				t.Errorf("ledger file %q, want empty", got)
			}
		})
	}
}
