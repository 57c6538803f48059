package ledger

import (
	"context"
	"net/http"
	"net/http/httptest"
	"slices"
	"testing"

	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// TestForwardListChangedWhileConnecting forwards to a server that announces
// notifications/tools/list_changed as soon as the forwarder's session is
// initialized (as @modelcontextprotocol/server-everything 2026.8.31 does),
// while New is still connecting: New returns, and the ledger offers the tool
// the announcement was about.
func TestForwardListChangedWhileConnecting(t *testing.T) {
	var srv *mcp.Server
	srv = mcp.NewServer(&mcp.Implementation{Name: "announcer", Version: "1"}, &mcp.ServerOptions{
		InitializedHandler: func(context.Context, *mcp.InitializedRequest) {
			mcp.AddTool(srv, &mcp.Tool{Name: "late_tool"}, func(context.Context, *mcp.CallToolRequest, struct{}) (*mcp.CallToolResult, any, error) {
				return textResult("late"), nil, nil
			})
		},
	})
	mcp.AddTool(srv, &mcp.Tool{Name: "first_tool"}, func(context.Context, *mcp.CallToolRequest, struct{}) (*mcp.CallToolResult, any, error) {
		return textResult("first"), nil, nil
	})
	hs := httptest.NewServer(mcp.NewStreamableHTTPHandler(func(*http.Request) *mcp.Server { return srv }, nil))
	t.Cleanup(hs.Close)
	_, ledgerURL := newLedger(t, Config{Forward: &Forward{URL: hs.URL}})
	ctx, cancel := contextT()
	defer cancel()
	cs, changed := watchTools(ctx, t, ledgerURL)
	for {
		res, err := cs.ListTools(ctx, nil)
		if err != nil {
			t.Fatal(err)
		}
		if slices.ContainsFunc(res.Tools, func(tool *mcp.Tool) bool { return tool.Name == "late_tool" }) {
			return
		}
		select {
		case <-changed:
		case <-ctx.Done():
			t.Fatalf("the ledger offers %d tools, not late_tool", len(res.Tools))
		}
	}
}
