package ledger

import (
	"context"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"

	"github.com/google/go-cmp/cmp"
	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/replaycheck/replaycheck/internal/wire"
)

// TestForwardUnlistedTool calls, through a forwarding ledger, a tool the
// server answers without listing it, and one it does not know: both reach
// the server and come back as it answered them (issue 36 item 4: the
// conformance suite's test_simple_text on server-everything), never the
// forwarder's own "unknown tool". The answered call counts as a write: the
// server ran it, and nothing says it is read-only.
func TestForwardUnlistedTool(t *testing.T) {
	srv := mcp.NewServer(&mcp.Implementation{Name: "hides-a-tool", Version: "1"}, nil)
	mcp.AddTool(srv, &mcp.Tool{Name: "listed", Annotations: &mcp.ToolAnnotations{ReadOnlyHint: true}},
		func(context.Context, *mcp.CallToolRequest, struct{}) (*mcp.CallToolResult, any, error) {
			return &mcp.CallToolResult{Content: []mcp.Content{&mcp.TextContent{Text: "listed ran"}}}, nil, nil
		})
	var mu sync.Mutex
	reached := map[string]int{} // calls the server got, by tool
	srv.AddReceivingMiddleware(func(next mcp.MethodHandler) mcp.MethodHandler {
		return func(ctx context.Context, method string, req mcp.Request) (mcp.Result, error) {
			if p, ok := req.GetParams().(*mcp.CallToolParamsRaw); ok && method == "tools/call" {
				mu.Lock()
				reached[p.Name]++
				mu.Unlock()
				if p.Name == "hidden" {
					return &mcp.CallToolResult{Content: []mcp.Content{&mcp.TextContent{Text: "hidden ran"}}}, nil
				}
			}
			return next(ctx, method, req)
		}
	})
	ts := httptest.NewServer(mcp.NewStreamableHTTPHandler(func(*http.Request) *mcp.Server { return srv }, nil))
	t.Cleanup(ts.Close)

	s, ledgerURL := newLedger(t, Config{Forward: &Forward{URL: ts.URL}})
	cs := connect(t, ledgerURL, "")
	res, err := callTool(t, cs, "hidden", map[string]any{"entry": "a"})
	if err != nil || text(res) != "hidden ran" {
		t.Errorf("hidden: answered %q, %v; want the server's answer, hidden ran", text(res), err)
	}
	_, err = callTool(t, cs, "nope", nil)
	if want := `unknown tool "nope"`; err == nil || !strings.Contains(err.Error(), want) {
		t.Errorf("nope: error %v, want the server's %s", err, want)
	}
	got := waitCounts(t, s, "", func(c wire.MCPCounts) bool { return c.Calls["nope"] > 0 })
	want := wire.MCPCounts{Calls: map[string]int{"hidden": 1, "nope": 1}, Writes: 1}
	if diff := cmp.Diff(want, got, ignoreMessages, ignoreProtocols); diff != "" {
		t.Errorf("Counts (-want +got):\n%s", diff)
	}
	for _, e := range s.Events("") {
		if e.Kind == wire.MCPCall && e.UnknownTool {
			// An unknown_tool call ran nothing, to the rules; these were
			// the server's to answer.
			t.Errorf("call of %s recorded as an unknown tool", e.Tool)
		}
	}
	mu.Lock()
	defer mu.Unlock()
	if diff := cmp.Diff(map[string]int{"hidden": 1, "nope": 1}, reached); diff != "" {
		t.Errorf("calls the server got (-want +got):\n%s", diff)
	}
}
