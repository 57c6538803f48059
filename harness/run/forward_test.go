package run

import (
	"context"
	"net/http"
	"net/http/httptest"
	"sync"
	"testing"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/replaycheck/replaycheck/harness/rules"
	"github.com/replaycheck/replaycheck/harness/scenario"
	"github.com/replaycheck/replaycheck/harness/target"
)

// itemServer is a real MCP server standing in for a user's own: create_item
// appends a name to its items, its own record of executions.
type itemServer struct {
	mu    sync.Mutex
	items []string
}

func (is *itemServer) count() int {
	is.mu.Lock()
	defer is.mu.Unlock()
	return len(is.items)
}

// serveItems serves a new itemServer over Streamable HTTP and returns it
// with its URL.
func serveItems(t *testing.T) (*itemServer, string) {
	t.Helper()
	is := &itemServer{}
	srv := mcp.NewServer(&mcp.Implementation{Name: "items", Version: "1"}, nil)
	type in struct {
		Name string `json:"name"`
	}
	mcp.AddTool(srv, &mcp.Tool{Name: "create_item", Description: "Create an item."},
		func(_ context.Context, _ *mcp.CallToolRequest, in in) (*mcp.CallToolResult, any, error) {
			is.mu.Lock()
			defer is.mu.Unlock()
			is.items = append(is.items, in.Name)
			return &mcp.CallToolResult{Content: []mcp.Content{&mcp.TextContent{Text: "created " + in.Name}}}, nil, nil
		})
	ts := httptest.NewServer(mcp.NewStreamableHTTPHandler(func(*http.Request) *mcp.Server { return srv }, nil))
	t.Cleanup(ts.Close)
	return is, ts.URL
}

// TestForwardSeedOnTheGateway runs the seed's fault_on scenario (every
// follow-up fails with 500) with the ledger replaced by a real MCP server
// (mcp: {relay: URL}): naive re-runs the loop and the duplicate is found
// from the forwarded executions alone, each one the server's own; guarded
// runs the tool once.
func TestForwardSeedOnTheGateway(t *testing.T) {
	tests := []struct {
		target    string
		wantItems int
		want      rules.Status
	}{
		{"builtin:naive", 3, rules.Fail},
		{"builtin:guarded", 1, rules.Pass},
	}
	for _, tt := range tests {
		t.Run(tt.target, func(t *testing.T) {
			is, url := serveItems(t)
			ss, errs := scenario.Parse("forward.yaml", []byte(`
name: seed chat fault_on, forwarded
request: {endpoint: chat}
mcp: {relay: "`+url+`"}
model: [{call: create_item, arguments: {name: "{{entry}}"}}, {say: done}]
faults:
  upstream: [{on: follow_up, respond: {status: 500}, times: always}]
expect: {rules: [no-replay-after-dispatch]}
`))
			if len(errs) > 0 {
				t.Fatal(errs)
			}
			tg, err := target.ParseTarget(tt.target)
			if err != nil {
				t.Fatal(err)
			}
			hs, err := Run(ctxFor(t), ss, Options{Targets: []target.Target{tg}, Parallel: 1})
			if err != nil {
				t.Fatal(err)
			}
			h := hs[0]
			if h.Error != "" {
				t.Fatalf("run error: %s", h.Error)
			}
			if got := is.count(); got != tt.wantItems || len(h.Writes()) != got {
				t.Errorf("server created %d items, history has %d writes: want %d and %d", got, len(h.Writes()), tt.wantItems, tt.wantItems)
			}
			vs := rules.Check(h)
			if len(vs) != 1 || vs[0].Status != tt.want {
				t.Fatalf("verdicts %+v: want no-replay-after-dispatch %s", vs, tt.want)
			}
		})
	}
}
