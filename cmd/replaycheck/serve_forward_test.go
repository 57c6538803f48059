package main

import (
	"context"
	"net/http"
	"net/http/httptest"
	"sync"
	"testing"

	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// TestServeMCPRelay serves with --mcp-relay in front of a real MCP server
// and --mcp-fault drop_after_execute: a client sees the server's tools, its
// call's answer is lost, and the server ran it once.
func TestServeMCPRelay(t *testing.T) {
	var mu sync.Mutex
	var items []string
	srv := mcp.NewServer(&mcp.Implementation{Name: "items", Version: "1"}, nil)
	type in struct {
		Name string `json:"name"`
	}
	mcp.AddTool(srv, &mcp.Tool{Name: "create_item"}, func(_ context.Context, _ *mcp.CallToolRequest, in in) (*mcp.CallToolResult, any, error) {
		mu.Lock()
		defer mu.Unlock()
		items = append(items, in.Name)
		return &mcp.CallToolResult{Content: []mcp.Content{&mcp.TextContent{Text: "created"}}}, nil, nil
	})
	ts := httptest.NewServer(mcp.NewStreamableHTTPHandler(func(*http.Request) *mcp.Server { return srv }, nil))
	t.Cleanup(ts.Close)

	_, mcpURL, _, _ := startServe(t, &serveOptions{MCPRelay: ts.URL, MCPFaults: []string{"{tool: create_item, drop_after_execute: {}}"}})
	ctx, cs := serveMCPClient(t, mcpURL)
	tools, err := cs.ListTools(ctx, nil)
	if err != nil {
		t.Fatal(err)
	}
	if len(tools.Tools) != 1 || tools.Tools[0].Name != "create_item" {
		t.Fatalf("tools %v, want the server's create_item only", tools.Tools)
	}
	if res, err := cs.CallTool(ctx, &mcp.CallToolParams{Name: "create_item", Arguments: map[string]any{"name": "a"}}); err == nil {
		t.Errorf("call answered %+v, want its answer lost", res)
	}
	mu.Lock()
	defer mu.Unlock()
	if len(items) != 1 {
		t.Errorf("server created %v, want one item", items)
	}
}
