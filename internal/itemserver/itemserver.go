// Package itemserver is a real MCP server (the official Go SDK) standing in,
// in tests, for a user's own server behind the ledger's forwarding mode:
// create_item appends a name to its items (an empty name is an isError
// answer, nothing appended), create_item_keyed does once per idempotency
// key (a key it has seen appends nothing: the server's own dedup), list_items (readOnlyHint) returns them, and it
// counts every call its tools ran, its own record of executions. Over HTTP
// it can close a call's connection after running it (DropAnswers). A test
// binary serves it over stdio as a process of its own with Main, which
// keeps that record in a journal file (Journal reads it back). It is for
// tests only.
package itemserver

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"slices"
	"strings"
	"sync"
	"testing"

	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// Arg makes a test binary an item server over stdio (see Main):
// os.Args[0] Arg JOURNAL.
const Arg = "forward-item-server"

// Server is the item server's state. Its methods are safe for concurrent
// use.
type Server struct {
	mu    sync.Mutex
	items []string
	ran   int
	// journal, when set, gets a line per call run ("ran") and per item
	// created ("item NAME"): the record of a server in another process.
	journal io.Writer
	// drops is how many more tools/call answers over HTTP to cut.
	drops int
	// keys are the idempotency keys create_item_keyed saw, each with the
	// name it created.
	keys map[string]string
}

// DropAnswers makes the answers to the next n tools/call requests that
// reach the server over HTTP (ServeHTTP) never arrive: each call runs, then
// its connection closes without its answer.
func (s *Server) DropAnswers(n int) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.drops = n
}

// dropNext reports whether the answer to the tools/call request being
// served is to be cut, counting it.
func (s *Server) dropNext() bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.drops == 0 {
		return false
	}
	s.drops--
	return true
}

// dropping serves next, cutting the answers DropAnswers asked for.
func (s *Server) dropping(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Method != http.MethodPost {
			next.ServeHTTP(w, r)
			return
		}
		body, err := io.ReadAll(r.Body)
		if err != nil {
			http.Error(w, err.Error(), http.StatusBadRequest)
			return
		}
		r.Body = io.NopCloser(bytes.NewReader(body))
		if bytes.Contains(body, []byte(`"tools/call"`)) && s.dropNext() {
			next.ServeHTTP(httptest.NewRecorder(), r) // the call runs; its answer goes nowhere
			panic(http.ErrAbortHandler)               // and the connection closes
		}
		next.ServeHTTP(w, r)
	})
}

// note writes line to the journal, when there is one. s.mu must be held.
func (s *Server) note(line string) {
	if s.journal != nil {
		_, _ = io.WriteString(s.journal, line+"\n")
	}
}

type createItemInput struct {
	Name string `json:"name" jsonschema:"the item's name"`
}

type createItemKeyedInput struct {
	Name string `json:"name" jsonschema:"the item's name"`
	Key  string `json:"idempotency_key" jsonschema:"one key per logical action: a key seen before creates nothing"`
}

// MCPServer returns a new MCP server whose tools work on s.
func (s *Server) MCPServer() *mcp.Server {
	srv := mcp.NewServer(&mcp.Implementation{Name: "items", Version: "1"}, nil)
	mcp.AddTool(srv, &mcp.Tool{Name: "create_item", Description: "Create an item."},
		func(_ context.Context, _ *mcp.CallToolRequest, in createItemInput) (*mcp.CallToolResult, any, error) {
			s.mu.Lock()
			defer s.mu.Unlock()
			s.ran++
			s.note("ran")
			if in.Name == "" {
				res := &mcp.CallToolResult{}
				res.SetError(errors.New("name must not be empty"))
				return res, nil, nil
			}
			s.items = append(s.items, in.Name)
			s.note("item " + in.Name)
			return text("created " + in.Name), nil, nil
		})
	mcp.AddTool(srv, &mcp.Tool{Name: "create_item_keyed", Description: "Create an item once per idempotency key."},
		func(_ context.Context, _ *mcp.CallToolRequest, in createItemKeyedInput) (*mcp.CallToolResult, any, error) {
			s.mu.Lock()
			defer s.mu.Unlock()
			s.ran++
			s.note("ran")
			if first, ok := s.keys[in.Key]; ok {
				return text("created " + first + " (deduplicated)"), nil, nil
			}
			if s.keys == nil {
				s.keys = map[string]string{}
			}
			s.keys[in.Key] = in.Name
			s.items = append(s.items, in.Name)
			s.note("item " + in.Name)
			return text("created " + in.Name), nil, nil
		})
	mcp.AddTool(srv, &mcp.Tool{Name: "list_items", Description: "List the items.", Annotations: &mcp.ToolAnnotations{ReadOnlyHint: true}},
		func(context.Context, *mcp.CallToolRequest, struct{}) (*mcp.CallToolResult, any, error) {
			s.mu.Lock()
			defer s.mu.Unlock()
			s.ran++
			s.note("ran")
			b, err := json.Marshal(s.items)
			return text(string(b)), nil, err
		})
	return srv
}

func text(s string) *mcp.CallToolResult {
	return &mcp.CallToolResult{Content: []mcp.Content{&mcp.TextContent{Text: s}}}
}

// Record returns the items created and how many calls the server ran.
func (s *Server) Record() ([]string, int) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return slices.Clone(s.items), s.ran
}

// ServeHTTP serves a new item server over Streamable HTTP until the test
// ends and returns it with its URL and MCP server (to change its tools).
func ServeHTTP(t testing.TB) (*Server, string, *mcp.Server) {
	t.Helper()
	s := &Server{}
	srv := s.MCPServer()
	ts := httptest.NewServer(s.dropping(mcp.NewStreamableHTTPHandler(func(*http.Request) *mcp.Server { return srv }, nil)))
	t.Cleanup(ts.Close)
	return s, ts.URL, srv
}

// Main serves an item server over this process's stdin and stdout, keeping
// its record in the journal file, when args are [Arg, JOURNAL], and returns
// the exit code and true; so does a stubborn server (StubbornArg) and its
// grandchild; for other args it returns false. A test binary calls it
// first thing in TestMain.
func Main(args []string) (int, bool) {
	if code, ok := stubbornMain(args); ok {
		return code, true
	}
	if len(args) != 2 || args[0] != Arg {
		return 0, false
	}
	f, err := os.OpenFile(args[1], os.O_CREATE|os.O_APPEND|os.O_WRONLY, 0o644)
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1, true
	}
	defer f.Close()
	s := &Server{journal: f}
	if err := s.MCPServer().Run(context.Background(), &mcp.StdioTransport{}); err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1, true
	}
	return 0, true
}

// Journal reads the journal of an item server Main ran: the items it
// created and the calls it ran; none when the file does not exist yet.
func Journal(t testing.TB, path string) ([]string, int) {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil && !os.IsNotExist(err) {
		t.Fatal(err)
	}
	var items []string
	ran := 0
	for line := range strings.Lines(string(b)) {
		line = strings.TrimSuffix(line, "\n")
		switch {
		case line == "ran":
			ran++
		case strings.HasPrefix(line, "item "):
			items = append(items, strings.TrimPrefix(line, "item "))
		}
	}
	return items, ran
}
