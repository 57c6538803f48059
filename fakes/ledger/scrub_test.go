package ledger

import (
	"context"
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/replaycheck/replaycheck/fakes/ledger/mcpcassette"
	"github.com/replaycheck/replaycheck/internal/secret/secrettest"
)

// echoServer serves an MCP server whose echo tool answers with its
// arguments, as text and as structured content.
func echoServer(t *testing.T) string {
	t.Helper()
	srv := mcp.NewServer(&mcp.Implementation{Name: "echo", Version: "1"}, nil)
	mcp.AddTool(srv, &mcp.Tool{Name: "echo", Description: "Answer with the arguments."},
		func(_ context.Context, _ *mcp.CallToolRequest, in map[string]any) (*mcp.CallToolResult, any, error) {
			b, err := json.Marshal(in)
			if err != nil {
				return nil, nil, err
			}
			return &mcp.CallToolResult{Content: []mcp.Content{&mcp.TextContent{Text: string(b)}}}, in, nil
		})
	hs := httptest.NewServer(mcp.NewStreamableHTTPHandler(func(*http.Request) *mcp.Server { return srv }, nil))
	t.Cleanup(hs.Close)
	return hs.URL
}

// TestMCPCassetteScrubsLeaks: a recording of calls whose arguments and
// answers carry each credential of the shared table (in a nested field,
// in text, from the environment) keeps none of them.
func TestMCPCassetteScrubsLeaks(t *testing.T) {
	secrettest.Setenv(t)
	path := filepath.Join(t.TempDir(), "mcp", "session.jsonl")
	rec, err := mcpcassette.Create(path)
	if err != nil {
		t.Fatal(err)
	}
	s, err := New(Config{Forward: &Forward{URL: echoServer(t), Record: rec}})
	if err != nil {
		t.Fatal(err)
	}
	ls := httptest.NewServer(owned("", s))
	cs := connect(t, ls.URL+"/mcp", "")
	var leaks []secrettest.Leak
	for _, l := range secrettest.Leaks {
		args := map[string]any{}
		switch {
		case l.JSON != "":
			if err := json.Unmarshal([]byte(l.JSON), &args); err != nil {
				t.Fatal(err)
			}
		case l.Arg != "":
			args["note"] = "server started with " + l.Arg
		default:
			continue
		}
		if _, err := callTool(t, cs, "echo", args); err != nil {
			t.Fatalf("%s: %v", l.Name, err)
		}
		leaks = append(leaks, l)
	}
	_ = cs.Close()
	ls.Close()
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
	if err := rec.Close(); err != nil {
		t.Fatal(err)
	}
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	secrettest.Check(t, "the MCP cassette", string(b), leaks)
}

// TestForwardStartErrorScrubsLeaks: the error of a forwarded server that
// cannot start or be reached names it (its command, its host) without the
// credentials of the shared table in its arguments or URL.
func TestForwardStartErrorScrubsLeaks(t *testing.T) {
	secrettest.Setenv(t)
	for _, l := range secrettest.With("arg") {
		t.Run(l.Name+" in the command", func(t *testing.T) {
			_, err := New(Config{Forward: &Forward{Command: []string{"/nonexistent/mcp-server", l.Arg}}})
			if err == nil {
				t.Fatal("New: no error, want the server's start failing")
			}
			secrettest.Check(t, "the start error", err.Error(), []secrettest.Leak{l})
			if !strings.Contains(err.Error(), "/nonexistent/mcp-server") {
				t.Errorf("the start error %q does not name the command", err)
			}
		})
	}
	for _, l := range secrettest.With("url") {
		t.Run(l.Name+" in the URL", func(t *testing.T) {
			_, err := New(Config{Forward: &Forward{URL: l.URL, ConnectTimeout: testTimeout}})
			if err == nil {
				t.Fatal("New: no error, want connecting failing")
			}
			secrettest.Check(t, "the connect error", err.Error(), []secrettest.Leak{l})
			if !strings.Contains(err.Error(), "127.0.0.1:1") {
				t.Errorf("the connect error %q does not name the host", err)
			}
		})
	}
}
