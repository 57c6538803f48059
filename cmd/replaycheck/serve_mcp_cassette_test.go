package main

import (
	"context"
	"errors"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/replaycheck/replaycheck/internal/itemserver"
)

// authHeader sets Authorization on every request.
type authHeader string

func (a authHeader) RoundTrip(r *http.Request) (*http.Response, error) {
	r = r.Clone(r.Context())
	r.Header.Set("Authorization", string(a))
	return http.DefaultTransport.RoundTrip(r)
}

// TestServeMCPRecordReplay records what serve --mcp-relay --record DIR
// forwards to a real MCP server into DIR/mcp/ (and no model cassette),
// without the client's bearer token; then, with the server gone, serve
// --mcp-cassette DIR/mcp answers the recorded call as the server did, and a
// call never recorded with an MCP error, counted as a cassette miss.
func TestServeMCPRecordReplay(t *testing.T) {
	const bearer = "Bearer tok-0a1b2c3d4e"
	_, serverURL, stopServer := itemserver.ServeHTTPStoppable(t)
	dir := t.TempDir()

	_, mcpURL, _, stop := startServe(t, &serveOptions{MCPRelay: serverURL, RecordDir: dir})
	cs := connectServe(t, mcpURL, bearer)
	for _, name := range []string{"a", "tok-0a1b2c3d4e"} {
		if _, err := callServe(t, cs, name); err != nil {
			t.Fatalf("recording create_item %s: %v", name, err)
		}
	}
	_ = cs.Close()
	if err := stop(); err != nil {
		t.Fatalf("serve: %v", err)
	}
	stopServer()
	if model, _ := filepath.Glob(filepath.Join(dir, "*.jsonl")); len(model) != 0 {
		t.Errorf("model cassettes %v, want none: nothing was relayed", model)
	}
	files, _ := filepath.Glob(filepath.Join(dir, "mcp", "session-*.jsonl"))
	if len(files) != 1 {
		t.Fatalf("MCP cassettes %v, want one", files)
	}
	b, err := os.ReadFile(files[0])
	if err != nil {
		t.Fatal(err)
	}
	if strings.Contains(string(b), "tok-0a1b2c3d4e") || !strings.Contains(string(b), `"name":"a"`) {
		t.Errorf("cassette holds the bearer token, or lacks the call:\n%s", b)
	}

	upURL, mcpURL, out, _ := startServe(t, &serveOptions{MCPCassette: filepath.Join(dir, "mcp")})
	if !strings.Contains(out.String(), "MCP cassette: "+filepath.Join(dir, "mcp")) {
		t.Errorf("banner lacks the MCP cassette:\n%s", out)
	}
	cs = connectServe(t, mcpURL, "")
	if res, err := callServe(t, cs, "a"); err != nil || res.IsError || res.Content[0].(*mcp.TextContent).Text != "created a" {
		t.Errorf("replayed create_item a: %+v, %v; want the recorded answer", res, err)
	}
	if _, err := callServe(t, cs, "b"); err == nil || !strings.Contains(err.Error(), `no recorded answer for tools/call create_item {"name":"b"}`) {
		t.Errorf("create_item b, never recorded: %v, want an MCP error naming it", err)
	}
	counts := getBody(t, strings.TrimSuffix(upURL, "/v1")+"/_replaycheck/counts")
	for _, want := range []string{`"writes": 1`, `"cassette_misses": 1`} {
		if !strings.Contains(counts, want) {
			t.Errorf("counts lack %s: %s", want, counts)
		}
	}
}

// TestServeMCPFlags: a wrong use of the flags that forward, record or
// replay the MCP side is a usage error that says what to do.
func TestServeMCPFlags(t *testing.T) {
	dir := t.TempDir()
	tests := []struct {
		name string
		opts serveOptions
		want string
	}{
		{"relay and command", serveOptions{MCPRelay: "http://127.0.0.1:1/mcp", MCPCommand: "my-server"}, "--mcp-relay and --mcp-command: set one"},
		{"writes alone", serveOptions{MCPWrites: []string{"create_item"}}, "--mcp-writes needs --mcp-relay, --mcp-command or --mcp-cassette"},
		{"cassette and relay", serveOptions{MCPCassette: dir, MCPRelay: "http://127.0.0.1:1/mcp"}, "not with --mcp-relay or --mcp-command"},
		{"missing cassette", serveOptions{MCPCassette: filepath.Join(dir, "none.jsonl")}, "--mcp-cassette: mcp cassette: "},
		{"empty directory", serveOptions{MCPCassette: dir}, "no tools/list recorded in it"},
		{"record without anything to record", serveOptions{RecordDir: dir}, "--record needs --relay, --mcp-relay or --mcp-command"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			opts := tt.opts
			opts.UpstreamAddr, opts.MCPAddr, opts.Out, opts.ErrOut = "127.0.0.1:0", "127.0.0.1:0", io.Discard, io.Discard
			ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
			defer cancel()
			err := runServe(ctx, &opts)
			var usage usageError
			if !errors.As(err, &usage) || !strings.Contains(err.Error(), tt.want) {
				t.Fatalf("runServe: %v, want a usage error with %q", err, tt.want)
			}
		})
	}
}

// connectServe connects an MCP client to serve's ledger, its requests
// carrying Authorization: auth unless it is "".
func connectServe(t *testing.T, url, auth string) *mcp.ClientSession {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	tr := &mcp.StreamableClientTransport{Endpoint: url}
	if auth != "" {
		tr.HTTPClient = &http.Client{Transport: authHeader(auth)}
	}
	cs, err := mcp.NewClient(&mcp.Implementation{Name: "serve-test", Version: "1"}, nil).Connect(ctx, tr, nil)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = cs.Close() })
	return cs
}

// callServe calls create_item with name.
func callServe(t *testing.T, cs *mcp.ClientSession, name string) (*mcp.CallToolResult, error) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	return cs.CallTool(ctx, &mcp.CallToolParams{Name: "create_item", Arguments: map[string]any{"name": name}})
}

// getBody returns the body of a GET of url.
func getBody(t *testing.T, url string) string {
	t.Helper()
	resp, err := http.Get(url)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(io.LimitReader(resp.Body, 1<<20))
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}
