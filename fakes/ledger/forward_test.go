package ledger

import (
	"context"
	"testing"

	"github.com/google/go-cmp/cmp"
	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/replaycheck/replaycheck/internal/itemserver"
	"github.com/replaycheck/replaycheck/internal/wire"
)

// forwardCase is one call through a forwarding ledger and what the server,
// the client and the ledger each saw of it.
type forwardCase struct {
	name      string
	faults    []Fault
	tool      string
	args      map[string]any
	wantItems []string // the server's items after the call
	wantRan   int      // calls the server's tools ran
	wantErr   bool     // the client got no answer (a dropped or refused POST)
	wantIsErr bool     // the client got an isError answer
	want      wire.MCPCounts
	wantEntry string // the write's Entry, "" when no write
}

func forwardCases() []forwardCase {
	return []forwardCase{
		{name: "forwarded once", tool: "create_item", args: map[string]any{"name": "a"},
			wantItems: []string{"a"}, wantRan: 1,
			want: wire.MCPCounts{Calls: map[string]int{"create_item": 1}, Writes: 1}, wantEntry: `create_item {"name":"a"}`},
		{name: "read-only tool writes nothing", tool: "list_items",
			wantRan: 1,
			want:    wire.MCPCounts{Calls: map[string]int{"list_items": 1}}},
		{name: "drop_after_execute: ran once, the client lost the answer", tool: "create_item", args: map[string]any{"name": "a"},
			faults:    []Fault{{Tool: "create_item", DropAfterExecute: &DropAfterExecute{}}},
			wantItems: []string{"a"}, wantRan: 1, wantErr: true,
			want: wire.MCPCounts{Calls: map[string]int{"create_item": 1}, Writes: 1}, wantEntry: `create_item {"name":"a"}`},
		{name: "fail_before_execute: never forwarded", tool: "create_item", args: map[string]any{"name": "a"},
			faults:  []Fault{{Tool: "create_item", FailBeforeExecute: &FailBeforeExecute{}}},
			wantErr: true,
			want:    wire.MCPCounts{Calls: map[string]int{"create_item": 1}}},
		{name: "is_error fault: never forwarded", tool: "create_item", args: map[string]any{"name": "a"},
			faults:    []Fault{{IsError: &IsError{}}},
			wantIsErr: true,
			want:      wire.MCPCounts{Calls: map[string]int{"create_item": 1}}},
		{name: "the server's isError passes through: ran and failed", tool: "create_item", args: map[string]any{"name": ""},
			wantRan: 1, wantIsErr: true,
			want: wire.MCPCounts{Calls: map[string]int{"create_item": 1}}},
	}
}

// TestForwardHTTP calls a real MCP server's tools through a forwarding
// ledger over Streamable HTTP: each call reaches the server at most once,
// faults act at the forwarding point, and the writes the ledger counts are
// the server's own record.
func TestForwardHTTP(t *testing.T) {
	for _, tt := range forwardCases() {
		t.Run(tt.name, func(t *testing.T) {
			is, url, _ := itemserver.ServeHTTP(t)
			runForwardCase(t, Forward{URL: url}, tt, func() ([]string, int) { return is.Record() })
		})
	}
}

// runForwardCase runs tt through a ledger forwarding to fwd; record returns
// the server's items and calls run (nil when there is no server: a replay).
func runForwardCase(t *testing.T, fwd Forward, tt forwardCase, record func() ([]string, int)) {
	t.Helper()
	s, ledgerURL := newLedger(t, Config{Forward: &fwd})
	if err := s.Arm("", tt.faults); err != nil {
		t.Fatal(err)
	}
	cs := connect(t, ledgerURL, "")
	res, err := callTool(t, cs, tt.tool, tt.args)
	switch {
	case tt.wantErr && err == nil:
		t.Errorf("call answered %q, want no answer", text(res))
	case !tt.wantErr && err != nil:
		t.Errorf("call: %v", err)
	case err == nil && res.IsError != tt.wantIsErr:
		t.Errorf("call answered isError %v (%q), want %v", res.IsError, text(res), tt.wantIsErr)
	}
	got := waitCounts(t, s, "", func(c wire.MCPCounts) bool { return c.Calls[tt.tool] > 0 })
	if diff := cmp.Diff(tt.want, got, ignoreMessages, ignoreProtocols); diff != "" {
		t.Errorf("Counts (-want +got):\n%s", diff)
	}
	if record != nil {
		items, ran := record()
		if diff := cmp.Diff(tt.wantItems, items); diff != "" {
			t.Errorf("server items (-want +got):\n%s", diff)
		}
		if ran != tt.wantRan {
			t.Errorf("server ran %d calls, want %d", ran, tt.wantRan)
		}
		if got.Writes != len(items) {
			t.Errorf("ledger counted %d writes, the server created %d items", got.Writes, len(items))
		}
	}
	var entries []string
	for _, e := range s.Events("") {
		if e.Kind == wire.MCPWrite {
			entries = append(entries, e.Entry)
		}
	}
	var want []string
	if tt.wantEntry != "" {
		want = []string{tt.wantEntry}
	}
	if diff := cmp.Diff(want, entries); diff != "" {
		t.Errorf("write entries (-want +got):\n%s", diff)
	}
}

// TestForwardMirrorsTools checks that a forwarding ledger offers the
// server's tools with their annotations, and follows the server's
// tools/list_changed.
func TestForwardMirrorsTools(t *testing.T) {
	_, url, srv := itemserver.ServeHTTP(t)
	_, ledgerURL := newLedger(t, Config{Forward: &Forward{URL: url}})
	ctx, cancel := contextT()
	defer cancel()
	cs, changed := watchTools(ctx, t, ledgerURL)

	list := func() map[string]bool {
		t.Helper()
		res, err := cs.ListTools(ctx, nil)
		if err != nil {
			t.Fatal(err)
		}
		m := map[string]bool{}
		for _, tool := range res.Tools {
			m[tool.Name] = tool.Annotations != nil && tool.Annotations.ReadOnlyHint
		}
		return m
	}
	if diff := cmp.Diff(map[string]bool{"create_item": false, "create_item_keyed": false, "list_items": true}, list()); diff != "" {
		t.Errorf("tools (name → readOnlyHint) (-want +got):\n%s", diff)
	}

	srv.RemoveTools("list_items")
	mcp.AddTool(srv, &mcp.Tool{Name: "delete_item", Annotations: &mcp.ToolAnnotations{DestructiveHint: new(true)}},
		func(context.Context, *mcp.CallToolRequest, struct {
			Name string `json:"name"`
		}) (*mcp.CallToolResult, any, error) {
			return textResult("deleted"), nil, nil
		})
	want := map[string]bool{"create_item": false, "create_item_keyed": false, "delete_item": false}
	for {
		if cmp.Equal(want, list()) {
			break
		}
		select {
		case <-changed:
		case <-ctx.Done():
			t.Fatalf("the ledger did not follow the server's list_changed: tools %v, want %v", list(), want)
		}
	}
}

// watchTools connects a client to the ledger at ledgerURL, closed when the
// test ends; changed gets a value at each tools/list_changed it receives.
func watchTools(ctx context.Context, t *testing.T, ledgerURL string) (cs *mcp.ClientSession, changed <-chan struct{}) {
	t.Helper()
	ch := make(chan struct{}, 8)
	c := mcp.NewClient(&mcp.Implementation{Name: "ledger-test", Version: "1"}, &mcp.ClientOptions{
		ToolListChangedHandler: func(context.Context, *mcp.ToolListChangedRequest) {
			select {
			case ch <- struct{}{}:
			default: // one pending change is enough to list again
			}
		},
	})
	cs, err := c.Connect(ctx, &mcp.StreamableClientTransport{Endpoint: ledgerURL}, nil)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = cs.Close() })
	return cs, ch
}

// TestForwardUnknown breaks the server's connection after it ran a call,
// before its answer: the ledger records the call's outcome as unknown
// (forward_unknown), counts no write, and the client gets an error answer.
func TestForwardUnknown(t *testing.T) {
	is, url, _ := itemserver.ServeHTTP(t)
	is.DropAnswers(1)
	s, ledgerURL := newLedger(t, Config{Forward: &Forward{URL: url}})
	cs := connect(t, ledgerURL, "")
	res, err := callTool(t, cs, "create_item", map[string]any{"name": "explode"})
	if err == nil && !res.IsError {
		t.Errorf("call answered %q, want an error", text(res))
	}
	if items, _ := is.Record(); !cmp.Equal([]string{"explode"}, items) {
		t.Errorf("server items %v, want [explode]: the call ran", items)
	}
	got := waitCounts(t, s, "", func(c wire.MCPCounts) bool { return c.Calls["create_item"] > 0 })
	if got.Writes != 0 || got.Unknown != 1 {
		t.Errorf("ledger counted %d writes, %d unknown: want 0 and 1, the forwarder never saw the answer", got.Writes, got.Unknown)
	}
	var details []string
	for _, e := range s.Events("") {
		if e.Kind == wire.MCPFault {
			details = append(details, e.Fault)
		}
	}
	if diff := cmp.Diff([]string{wire.MCPFaultForwardUnknown}, details); diff != "" {
		t.Errorf("fault events (-want +got):\n%s", diff)
	}
}
