package ledger

import (
	"context"
	"encoding/json"
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
	hs := newHidingServer(t)
	s, ledgerURL := newLedger(t, Config{Forward: &Forward{URL: hs.url}})
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
	hs.mu.Lock()
	defer hs.mu.Unlock()
	if diff := cmp.Diff(map[string]int{"hidden": 1, "nope": 1}, hs.reached); diff != "" {
		t.Errorf("calls the server got (-want +got):\n%s", diff)
	}
}

// hidingServer is a go-sdk MCP server (2025-11-25: it initializes) that
// lists the read-only tool "listed" and answers a call of "hidden", which
// it does not list, with "hidden ran".
type hidingServer struct {
	url     string
	mu      sync.Mutex
	reached map[string]int // calls the server got, by tool
}

// newHidingServer serves a hidingServer over Streamable HTTP with sessions.
func newHidingServer(t *testing.T) *hidingServer {
	t.Helper()
	hs := &hidingServer{reached: map[string]int{}}
	srv := mcp.NewServer(&mcp.Implementation{Name: "hides-a-tool", Version: "1"}, nil)
	mcp.AddTool(srv, &mcp.Tool{Name: "listed", Annotations: &mcp.ToolAnnotations{ReadOnlyHint: true}},
		func(context.Context, *mcp.CallToolRequest, struct{}) (*mcp.CallToolResult, any, error) {
			return &mcp.CallToolResult{Content: []mcp.Content{&mcp.TextContent{Text: "listed ran"}}}, nil, nil
		})
	srv.AddReceivingMiddleware(func(next mcp.MethodHandler) mcp.MethodHandler {
		return func(ctx context.Context, method string, req mcp.Request) (mcp.Result, error) {
			if p, ok := req.GetParams().(*mcp.CallToolParamsRaw); ok && method == "tools/call" {
				hs.mu.Lock()
				hs.reached[p.Name]++
				hs.mu.Unlock()
				if p.Name == "hidden" {
					return &mcp.CallToolResult{Content: []mcp.Content{&mcp.TextContent{Text: "hidden ran"}}}, nil
				}
			}
			return next(ctx, method, req)
		}
	})
	ts := httptest.NewServer(mcp.NewStreamableHTTPHandler(func(*http.Request) *mcp.Server { return srv }, nil))
	t.Cleanup(ts.Close)
	hs.url = ts.URL
	return hs
}

// TestForwardUnlistedResultType calls, at 2026-07-28, through a forwarding
// ledger, a tool a 2025-11-25 server answers without listing it: the
// answer is the server's, as a 2026-07-28 server sends it, with
// resultType "complete" (the conformance suite's wire-schema-valid check
// of input-required-result-validate-input through the forwarder).
func TestForwardUnlistedResultType(t *testing.T) {
	hs := newHidingServer(t)
	_, url := newLedger(t, Config{Forward: &Forward{URL: hs.url}})
	resp, err := post2026(t, url, "tools/call", "hidden", 1, `"name":"hidden","arguments":{}`)
	if err != nil {
		t.Fatal(err)
	}
	ans := decodeAnswer(t, resp)
	var got struct {
		ResultType string `json:"resultType"`
		Content    []struct {
			Text string `json:"text"`
		} `json:"content"`
	}
	if ans.Error != nil || json.Unmarshal(ans.Result, &got) != nil || got.ResultType != "complete" || len(got.Content) != 1 || got.Content[0].Text != "hidden ran" {
		t.Errorf("tools/call hidden answered %s (error %v), want the server's hidden ran with resultType complete", ans.Result, ans.Error)
	}
}
