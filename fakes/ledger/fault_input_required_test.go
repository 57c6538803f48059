package ledger

import (
	"context"
	"net/http"
	"net/http/httptest"
	"sync/atomic"
	"testing"

	"github.com/google/go-cmp/cmp"
	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/replaycheck/replaycheck/internal/wire"
)

// TestInputRequired calls commit_write through go-sdk clients of both
// generations that accept every elicitation, with input_required armed: the
// first delivery is answered input-required (MRTR) and the client's retry,
// carrying its answer and the request state, is answered by the tool. Before
// execute the call writes once; after execute it writes twice, one logical
// call executed on the first delivery and again on the retry (a 2026-07-28
// client's retry is a tools/call of its own; an older session's is the
// SDK's second call of the tool within the one tools/call).
func TestInputRequired(t *testing.T) {
	for _, tt := range []struct {
		name       string
		protocol   string // connect's
		fault      string
		wantCalls  int
		wantWrites int
	}{
		{"2026-07-28 before execute", "default", "{tool: commit_write, input_required: {}}", 2, 1},
		{"2026-07-28 after execute", "default", "{tool: commit_write, input_required: {after: execute}}", 2, 2},
		{"2025-11-25 before execute", "", "{tool: commit_write, input_required: {}}", 1, 1},
		{"2025-11-25 after execute", "", "{tool: commit_write, input_required: {after: execute}}", 1, 2},
	} {
		t.Run(tt.name, func(t *testing.T) {
			cfg := fileLedger(t)
			s, url := newLedger(t, cfg)
			const tok = "rc00000000f1"
			mustArm(t, s, tok, tt.fault)
			var asked atomic.Int32
			c := mcp.NewClient(&mcp.Implementation{Name: "confirms", Version: "1"}, &mcp.ClientOptions{
				ElicitationHandler: func(context.Context, *mcp.ElicitRequest) (*mcp.ElicitResult, error) {
					asked.Add(1)
					return &mcp.ElicitResult{Action: "accept"}, nil
				},
			})
			cs := connectClient(t, c, url, tt.protocol)
			res, err := callTool(t, cs, ToolCommitWrite, map[string]any{"entry": "alpha " + tok})
			if err != nil || res.IsError || text(res) != "recorded alpha "+tok {
				t.Fatalf("commit_write: %q (isError %v), %v; want the tool's answer", text(res), res != nil && res.IsError, err)
			}
			if n := asked.Load(); n != 1 {
				t.Errorf("the client was asked %d times, want once", n)
			}
			got := waitCounts(t, s, tok, func(c wire.MCPCounts) bool { return c.Writes >= tt.wantWrites })
			want := wire.MCPCounts{Calls: map[string]int{ToolCommitWrite: tt.wantCalls}, Writes: tt.wantWrites}
			if diff := cmp.Diff(want, got, ignoreMessages, ignoreProtocols); diff != "" {
				t.Errorf("Counts (-want +got):\n%s", diff)
			}
			if n := len(fileLines(t, cfg.Path)); n != tt.wantWrites {
				t.Errorf("file has %d lines, want %d", n, tt.wantWrites)
			}
		})
	}
}

// TestInputRequiredForwarded arms input_required on a forwarding ledger: the
// forwarder asks the client before forwarding, and the call reaches the
// server once, on the retry.
func TestInputRequiredForwarded(t *testing.T) {
	srv := mcp.NewServer(&mcp.Implementation{Name: "one-tool", Version: "1"}, nil)
	reached := make(chan struct{}, 4)
	mcp.AddTool(srv, &mcp.Tool{Name: "deploy"}, func(context.Context, *mcp.CallToolRequest, struct{}) (*mcp.CallToolResult, any, error) {
		reached <- struct{}{}
		return &mcp.CallToolResult{Content: []mcp.Content{&mcp.TextContent{Text: "deployed"}}}, nil, nil
	})
	ts := httptest.NewServer(mcp.NewStreamableHTTPHandler(func(*http.Request) *mcp.Server { return srv }, nil))
	t.Cleanup(ts.Close)
	s, url := newLedger(t, Config{Forward: &Forward{URL: ts.URL}})
	mustArm(t, s, "", "{input_required: {}}")
	rc := connectRelayClient(t, url)
	res, err := callTool(t, rc.cs, "deploy", nil)
	if err != nil || res.IsError || text(res) != "deployed" {
		t.Fatalf("deploy: %q (isError %v), %v; want deployed", text(res), res != nil && res.IsError, err)
	}
	if n := len(reached); n != 1 {
		t.Errorf("the server ran deploy %d times, want once", n)
	}
}
