package main

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/replaycheck/replaycheck/internal/itemserver"
)

// TestServeMCPRelayUnknown serves with --mcp-relay in front of a server
// whose connection closes after it ran a call, before the answer: /counts
// and the count table show the call as unknown.
func TestServeMCPRelayUnknown(t *testing.T) {
	is, url, _ := itemserver.ServeHTTP(t)
	is.DropAnswers(1)
	upURL, mcpURL, out, stop := startServe(t, &serveOptions{MCPRelay: url})
	ctx, cs := serveMCPClient(t, mcpURL)
	if res, err := cs.CallTool(ctx, &mcp.CallToolParams{Name: "create_item", Arguments: map[string]any{"name": "a"}}); err == nil && !res.IsError {
		t.Errorf("call answered %+v, want an error: its answer never came back", res)
	}
	if c := serveCounts(t, upURL).Total.MCP; c.Unknown != 1 || c.Writes != 0 {
		t.Errorf("counts %+v: want 1 unknown, no write", c)
	}
	if err := stop(); err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(out.String(), "1 (1 unknown)") {
		t.Errorf("the count table does not show the unknown call:\n%s", out.String())
	}
}

// serveMCPClient connects an MCP client to the serve's MCP endpoint until
// the test ends, and returns it with a context bounding the test's calls.
func serveMCPClient(t *testing.T, mcpURL string) (context.Context, *mcp.ClientSession) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	t.Cleanup(cancel)
	cs, err := mcp.NewClient(&mcp.Implementation{Name: "serve-test", Version: "1"}, nil).Connect(ctx, &mcp.StreamableClientTransport{Endpoint: mcpURL}, nil)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = cs.Close() })
	return ctx, cs
}
