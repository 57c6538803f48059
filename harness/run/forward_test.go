package run

import (
	"context"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/replaycheck/replaycheck/harness/rules"
)

// itemServer is a real MCP server standing in for a user's own: create_item
// appends a name to its items, its own record of executions.
// With a journal, each item is also a line there: the record of a server in
// another process.
type itemServer struct {
	mu      sync.Mutex
	items   []string
	journal io.Writer
}

func (is *itemServer) count() int {
	is.mu.Lock()
	defer is.mu.Unlock()
	return len(is.items)
}

// itemServerArg makes the test binary an itemServer over stdio (see
// TestMain): os.Args[0] itemServerArg JOURNAL.
const itemServerArg = "forward-item-server"

func serveItemsOverStdio(journal string) int {
	f, err := os.OpenFile(journal, os.O_CREATE|os.O_APPEND|os.O_WRONLY, 0o644)
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	defer f.Close()
	is := &itemServer{journal: f}
	if err := is.mcpServer().Run(context.Background(), &mcp.StdioTransport{}); err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	return 0
}

// journalLines counts the lines of a stdio itemServer's journal.
func journalLines(t *testing.T, path string) int {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil && !os.IsNotExist(err) {
		t.Fatal(err)
	}
	return strings.Count(string(b), "\n")
}

// serveItems serves a new itemServer over Streamable HTTP and returns it
// with its URL.
func serveItems(t *testing.T) (*itemServer, string) {
	t.Helper()
	is := &itemServer{}
	ts := httptest.NewServer(mcp.NewStreamableHTTPHandler(func(*http.Request) *mcp.Server { return is.mcpServer() }, nil))
	t.Cleanup(ts.Close)
	return is, ts.URL
}

func (is *itemServer) mcpServer() *mcp.Server {
	srv := mcp.NewServer(&mcp.Implementation{Name: "items", Version: "1"}, nil)
	type in struct {
		Name string `json:"name"`
	}
	mcp.AddTool(srv, &mcp.Tool{Name: "create_item", Description: "Create an item."},
		func(_ context.Context, _ *mcp.CallToolRequest, in in) (*mcp.CallToolResult, any, error) {
			is.mu.Lock()
			defer is.mu.Unlock()
			is.items = append(is.items, in.Name)
			if is.journal != nil {
				if _, err := io.WriteString(is.journal, in.Name+"\n"); err != nil {
					return nil, nil, err
				}
			}
			return &mcp.CallToolResult{Content: []mcp.Content{&mcp.TextContent{Text: "created " + in.Name}}}, nil, nil
		})
	return srv
}

// TestForwardSeedOnTheGateway runs the seed's fault_on scenario (every
// follow-up fails with 500) with the ledger replaced by a real MCP server,
// over Streamable HTTP (mcp: {relay: URL}) and spawned over stdio (mcp:
// {command: [...]}, this test binary, see TestMain): naive re-runs the loop
// and the duplicate is found from the forwarded executions alone, each one
// the server's own; guarded runs the tool once.
func TestForwardSeedOnTheGateway(t *testing.T) {
	tests := []struct {
		target, transport string
		wantItems         int
		want              rules.Status
	}{
		{"builtin:naive", "relay", 3, rules.Fail},
		{"builtin:guarded", "relay", 1, rules.Pass},
		{"builtin:naive", "command", 3, rules.Fail},
		{"builtin:guarded", "command", 1, rules.Pass},
	}
	for _, tt := range tests {
		t.Run(tt.target+" "+tt.transport, func(t *testing.T) {
			var server string
			var items func() int
			switch tt.transport {
			case "relay":
				is, url := serveItems(t)
				server, items = `{relay: "`+url+`"}`, is.count
			case "command":
				journal := filepath.Join(t.TempDir(), "items.log")
				server = fmt.Sprintf("{command: [%q, %s, %q]}", self(t), itemServerArg, journal)
				items = func() int { return journalLines(t, journal) }
			}
			hs := runSource(t, `
name: seed chat fault_on, forwarded
request: {endpoint: chat}
mcp: `+server+`
model: [{call: create_item, arguments: {name: "{{entry}}"}}, {say: done}]
faults:
  upstream: [{on: follow_up, respond: {status: 500}, times: always}]
expect: {rules: [no-replay-after-dispatch]}
`, tt.target, 1)
			h := hs[0]
			if got := items(); got != tt.wantItems || len(h.Writes()) != got {
				t.Errorf("server created %d items, history has %d writes: want %d and %d", got, len(h.Writes()), tt.wantItems, tt.wantItems)
			}
			vs := rules.Check(h)
			if len(vs) != 1 || vs[0].Status != tt.want {
				t.Fatalf("verdicts %+v: want no-replay-after-dispatch %s", vs, tt.want)
			}
		})
	}
}

// TestForwardParallelCountsMatchServer runs the forwarded seed 8 times in
// parallel on naive against one shared server: every run has a ledger of
// its own, and the writes of all the runs are exactly the server's items.
func TestForwardParallelCountsMatchServer(t *testing.T) {
	is, url := serveItems(t)
	hs := runSource(t, `
name: seed chat fault_on, forwarded, repeated
repeat: 8
request: {endpoint: chat}
mcp: {relay: "`+url+`"}
model: [{call: create_item, arguments: {name: "{{entry}}"}}, {say: done}]
faults:
  upstream: [{on: follow_up, respond: {status: 500}, times: always}]
expect: {rules: [no-replay-after-dispatch]}
`, "builtin:naive", 8)
	writes := 0
	for _, h := range hs {
		writes += len(h.Writes())
	}
	if len(hs) != 8 || writes != is.count() || writes != 8*3 {
		t.Errorf("%d runs with %d writes, the server created %d items: want 8 runs, 24 and 24", len(hs), writes, is.count())
	}
}

// TestForwardFaultNamesServerTool arms a fault on one of the forwarded
// server's tools by name (drop_after_execute on create_item, once): the
// server runs the call once, guarded does not send it again, and
// no-replay-ambiguous-mcp judges (it would be unknown had the fault not
// fired).
func TestForwardFaultNamesServerTool(t *testing.T) {
	is, url := serveItems(t)
	hs := runSource(t, `
name: drop after execute on the server's tool
request: {endpoint: chat}
mcp: {relay: "`+url+`"}
model: [{call: create_item, arguments: {name: "{{entry}}"}}, {say: done}]
faults:
  mcp: [{tool: create_item, drop_after_execute: {}, times: once}]
expect: {rules: [no-replay-ambiguous-mcp]}
`, "builtin:guarded", 1)
	h := hs[0]
	if is.count() != 1 || len(h.Writes()) != 1 {
		t.Errorf("server created %d items, history has %d writes: want 1 and 1", is.count(), len(h.Writes()))
	}
	vs := rules.Check(h)
	if len(vs) != 1 || vs[0].Status != rules.Pass {
		t.Fatalf("verdicts %+v: want no-replay-ambiguous-mcp pass", vs)
	}
}
