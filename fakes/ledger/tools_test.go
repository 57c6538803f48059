package ledger

import (
	"encoding/json"
	"fmt"
	"testing"

	"github.com/google/go-cmp/cmp"
	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/replaycheck/replaycheck/internal/wire"
)

// modes are the transport modes every basic test runs in: stateful sessions
// at 2025-11-25 and at an older version, the default ledger with the SDK's
// default client (2026-07-28: server/discover, stateless requests), and
// the stateless-only ledger (Config.Stateless) with the SDK's default
// protocol and with an older one. protocol is connect's.
var modes = []struct {
	name      string
	stateless bool
	protocol  string
}{
	{"stateful", false, ""},
	{"stateful 2025-06-18", false, "2025-06-18"},
	{"2026-07-28", false, "default"},
	{"stateless", true, "default"},
	{"stateless 2025-06-18", true, "2025-06-18"},
}

// spoken returns the protocol version a client connect opens with protocol
// speaks to the ledger.
func spoken(protocol string) wire.MCPProtocol {
	switch protocol {
	case "":
		return wire.MCPProtocol20251125
	case "default":
		return wire.MCPProtocol20260728
	}
	return wire.MCPProtocol(protocol)
}

func TestTools(t *testing.T) {
	for _, m := range modes {
		t.Run(m.name, func(t *testing.T) {
			cfg := fileLedger(t)
			cfg.Stateless = m.stateless
			s, url := newLedger(t, cfg)
			cs := connect(t, url, m.protocol)
			const tok = "rc0000000001"

			res, err := callTool(t, cs, ToolCommitWrite, map[string]any{"entry": "alpha " + tok})
			if err != nil || res.IsError {
				t.Fatalf("commit_write: %v, %+v", err, res)
			}
			if got, want := text(res), "recorded alpha "+tok; got != want {
				t.Errorf("commit_write text = %q, want %q", got, want)
			}
			res, err = callTool(t, cs, ToolCommitWriteKeyed, map[string]any{"entry": "beta " + tok, "idempotency_key": "k-" + tok})
			if err != nil || res.IsError {
				t.Fatalf("commit_write_keyed: %v, %+v", err, res)
			}
			res, err = callTool(t, cs, ToolReadLedger, map[string]any{})
			if err != nil || res.IsError {
				t.Fatalf("read_ledger: %v, %+v", err, res)
			}
			var out readLedgerOutput
			if err := json.Unmarshal(mustJSON(t, res.StructuredContent), &out); err != nil {
				t.Fatalf("read_ledger structured content: %v", err)
			}
			wantEntries := []string{"alpha " + tok, "beta " + tok}
			if diff := cmp.Diff(wantEntries, out.Entries); diff != "" {
				t.Errorf("read_ledger entries (-want +got):\n%s", diff)
			}
			if diff := cmp.Diff(wantEntries, s.Entries()); diff != "" {
				t.Errorf("Entries (-want +got):\n%s", diff)
			}
			if diff := cmp.Diff(wantEntries, fileLines(t, cfg.Path)); diff != "" {
				t.Errorf("file lines (-want +got):\n%s", diff)
			}
			// read_ledger's arguments carry no token: it counts under "".
			want := wire.MCPCounts{Calls: map[string]int{ToolCommitWrite: 1, ToolCommitWriteKeyed: 1}, Writes: 2, Keys: 1}
			if diff := cmp.Diff(want, s.Counts(tok), ignoreProtocols); diff != "" {
				t.Errorf("Counts(tok) (-want +got):\n%s", diff)
			}
			if diff := cmp.Diff(wire.MCPCounts{Calls: map[string]int{ToolReadLedger: 1}}, s.Counts(""), ignoreMessages, ignoreProtocols); diff != "" {
				t.Errorf(`Counts("") (-want +got):`+"\n%s", diff)
			}
			wantTotal := wire.MCPCounts{Calls: map[string]int{ToolCommitWrite: 1, ToolCommitWriteKeyed: 1, ToolReadLedger: 1}, Writes: 2, Keys: 1}
			if diff := cmp.Diff(wantTotal, s.Total(), ignoreMessages, ignoreProtocols); diff != "" {
				t.Errorf("Total (-want +got):\n%s", diff)
			}
			p := spoken(m.protocol)
			wantEvents := []wire.MCPEvent{
				{Token: tok, Kind: wire.MCPCall, Tool: ToolCommitWrite, Args: `{"entry":"alpha ` + tok + `"}`, Protocol: p},
				{Token: tok, Kind: wire.MCPWrite, Tool: ToolCommitWrite, Entry: "alpha " + tok, Protocol: p},
				{Token: tok, Kind: wire.MCPResult, Tool: ToolCommitWrite, Protocol: p},
				{Token: tok, Kind: wire.MCPCall, Tool: ToolCommitWriteKeyed, Args: `{"entry":"beta ` + tok + `"}`, Key: "k-" + tok, Protocol: p},
				{Token: tok, Kind: wire.MCPWrite, Tool: ToolCommitWriteKeyed, Entry: "beta " + tok, Key: "k-" + tok, Protocol: p},
				{Token: tok, Kind: wire.MCPResult, Tool: ToolCommitWriteKeyed, Protocol: p},
			}
			if diff := cmp.Diff(wantEvents, stripEvents(s.Events(tok))); diff != "" {
				t.Errorf("Events (-want +got):\n%s", diff)
			}
		})
	}
}

func TestKeyedDedup(t *testing.T) {
	s, url := newLedger(t, Config{})
	cs := connect(t, url, "")
	const tok = "rc0000000002"
	key := "order-42-" + tok

	first, err := callTool(t, cs, ToolCommitWriteKeyed, map[string]any{"entry": "first " + tok, "idempotency_key": key})
	if err != nil || first.IsError {
		t.Fatalf("first call: %v, %+v", err, first)
	}
	second, err := callTool(t, cs, ToolCommitWriteKeyed, map[string]any{"entry": "second " + tok, "idempotency_key": key})
	if err != nil || second.IsError {
		t.Fatalf("second call: %v, %+v", err, second)
	}
	if diff := cmp.Diff(string(mustJSON(t, first)), string(mustJSON(t, second))); diff != "" {
		t.Errorf("second result differs from the first (-first +second):\n%s", diff)
	}
	other, err := callTool(t, cs, ToolCommitWriteKeyed, map[string]any{"entry": "third " + tok, "idempotency_key": "other-" + tok})
	if err != nil || other.IsError {
		t.Fatalf("other key: %v, %+v", err, other)
	}
	want := wire.MCPCounts{Calls: map[string]int{ToolCommitWriteKeyed: 3}, Writes: 2, Keys: 2}
	if diff := cmp.Diff(want, s.Counts(tok), ignoreProtocols); diff != "" {
		t.Errorf("Counts (-want +got):\n%s", diff)
	}
	if diff := cmp.Diff([]string{"first " + tok, "third " + tok}, s.Entries()); diff != "" {
		t.Errorf("Entries (-want +got):\n%s", diff)
	}
	var dedup []bool
	for _, e := range s.Events(tok) {
		if e.Kind == wire.MCPResult {
			dedup = append(dedup, e.Dedup)
		}
	}
	if diff := cmp.Diff([]bool{false, true, false}, dedup); diff != "" {
		t.Errorf("result details (-want +got):\n%s", diff)
	}

	res, err := callTool(t, cs, ToolCommitWriteKeyed, map[string]any{"entry": "x", "idempotency_key": ""})
	if err != nil || !res.IsError {
		t.Errorf("empty key: got %v, %+v; want an isError result", err, res)
	}
}

func TestAnnotations(t *testing.T) {
	yes, no := true, false
	s, url := newLedger(t, Config{Annotations: map[string]Annotations{
		// Misleading: commit_write claims to be read-only and idempotent.
		ToolCommitWrite: {ReadOnly: &yes, Idempotent: &yes},
	}})
	cs := connect(t, url, "")
	list := func() map[string]mcp.ToolAnnotations {
		t.Helper()
		ctx, cancel := contextT()
		defer cancel()
		res, err := cs.ListTools(ctx, nil)
		if err != nil {
			t.Fatalf("tools/list: %v", err)
		}
		out := map[string]mcp.ToolAnnotations{}
		for _, tool := range res.Tools {
			out[tool.Name] = *tool.Annotations
		}
		return out
	}
	want := map[string]mcp.ToolAnnotations{
		ToolCommitWrite:      {ReadOnlyHint: true, IdempotentHint: true, DestructiveHint: &no, OpenWorldHint: &no},
		ToolCommitWriteKeyed: {IdempotentHint: true, DestructiveHint: &no, OpenWorldHint: &no},
		ToolReadLedger:       {ReadOnlyHint: true, IdempotentHint: true, DestructiveHint: &no, OpenWorldHint: &no},
	}
	if diff := cmp.Diff(want, list()); diff != "" {
		t.Errorf("tools/list annotations (-want +got):\n%s", diff)
	}

	s.SetAnnotations(ToolReadLedger, Annotations{ReadOnly: &no, Destructive: &yes})
	want[ToolReadLedger] = mcp.ToolAnnotations{IdempotentHint: true, DestructiveHint: &yes, OpenWorldHint: &no}
	if diff := cmp.Diff(want, list()); diff != "" {
		t.Errorf("tools/list after SetAnnotations (-want +got):\n%s", diff)
	}

	if _, err := New(Config{Annotations: map[string]Annotations{"comit_write": {}}}); err == nil {
		t.Error("New accepted annotations for an unknown tool")
	}
}

// stripEvents clears the fields of events that vary between runs.
func stripEvents(evs []wire.MCPEvent) []wire.MCPEvent {
	out := make([]wire.MCPEvent, len(evs))
	for i, e := range evs {
		e.Time = timeZero
		e.RequestID = ""
		out[i] = e
	}
	return out
}

func mustJSON(t testing.TB, v any) []byte {
	t.Helper()
	b, err := json.Marshal(v)
	if err != nil {
		t.Fatal(fmt.Errorf("marshaling %T: %w", v, err))
	}
	return b
}
