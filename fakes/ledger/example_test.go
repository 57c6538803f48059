package ledger_test

import (
	"context"
	"fmt"
	"net/http/httptest"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/replaycheck/replaycheck/fakes/ledger"
)

// The ledger is a real MCP server: the SDK's own client calls commit_write,
// and the ledger counts the write under the run token in its arguments.
func ExampleServer() {
	l, err := ledger.New(ledger.Config{}) // in memory
	if err != nil {
		fmt.Println(err)
		return
	}
	defer l.Close()
	srv := httptest.NewServer(l)
	defer srv.Close()

	ctx := context.Background()
	client := mcp.NewClient(&mcp.Implementation{Name: "example", Version: "1"}, nil)
	session, err := client.Connect(ctx, &mcp.StreamableClientTransport{Endpoint: srv.URL}, nil)
	if err != nil {
		fmt.Println(err)
		return
	}
	defer session.Close()
	res, err := session.CallTool(ctx, &mcp.CallToolParams{Name: "commit_write", Arguments: map[string]any{"entry": "alpha-rc0123456789"}})
	if err != nil || res.IsError {
		fmt.Println("commit_write failed:", err)
		return
	}
	fmt.Println(l.Counts("rc0123456789").Writes, "write")
	fmt.Println(l.Entries())
	// Output:
	// 1 write
	// [alpha-rc0123456789]
}
