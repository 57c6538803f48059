package ledger

import (
	"bufio"
	"context"
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp/cmpopts"
	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/replaycheck/replaycheck/fakes/fault"
	"github.com/replaycheck/replaycheck/internal/wire"
)

// ignoreMessages leaves session messages out of a wire.MCPCounts comparison: how
// many a client sends (server/discover, GETs) depends on the SDK.
var ignoreMessages = cmpopts.IgnoreFields(wire.MCPCounts{}, "Messages")

// ignoreProtocols leaves the protocol versions a run used out of a
// wire.MCPCounts comparison, for the tests that count calls and writes
// (TestNegotiatedProtocolRecorded holds the versions).
var ignoreProtocols = cmpopts.IgnoreFields(wire.MCPCounts{}, "Protocols")

// testTimeout bounds every wait in a test.
const testTimeout = 20 * time.Second

// newLedger starts a ledger with cfg behind a real HTTP server and returns it
// with its /mcp URL. The server is closed after the test.
func newLedger(t testing.TB, cfg Config) (*Server, string) {
	t.Helper()
	s, err := New(cfg)
	if err != nil {
		t.Fatalf("New: %v", err)
	}
	mux := http.NewServeMux()
	mux.Handle("/mcp", s)
	ts := httptest.NewServer(mux)
	// Cleanups run last-registered first: clients, then s.Close (which ends
	// pending delays), then the HTTP server.
	t.Cleanup(ts.Close)
	t.Cleanup(func() {
		if err := s.Close(); err != nil {
			t.Errorf("Close: %v", err)
		}
	})
	return s, ts.URL + "/mcp"
}

// fileLedger returns a Config with a ledger file in a temporary directory.
func fileLedger(t testing.TB) Config {
	return Config{Path: filepath.Join(t.TempDir(), "ledger.txt")}
}

// connect opens an SDK client session to url at protocol; "" is a session
// (2025-11-25: initialize and Mcp-Session-Id, what the session tests need),
// "default" the SDK's default (2026-07-28: server/discover, stateless
// requests, where the ledger serves it).
func connect(t testing.TB, url, protocol string) *mcp.ClientSession {
	t.Helper()
	return connectClient(t, mcp.NewClient(&mcp.Implementation{Name: "ledger-test", Version: "1"}, nil), url, protocol)
}

// connectClient connects c to url at protocol, as connect does, and
// closes the session when the test ends.
func connectClient(t testing.TB, c *mcp.Client, url, protocol string) *mcp.ClientSession {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), testTimeout)
	defer cancel()
	cs, err := c.Connect(ctx, &mcp.StreamableClientTransport{Endpoint: url}, sessionOptions(protocol))
	if err != nil {
		t.Fatalf("connecting to %s: %v", url, err)
	}
	t.Cleanup(func() { _ = cs.Close() })
	return cs
}

// sessionOptions are the SDK client's options for connect's protocol.
func sessionOptions(protocol string) *mcp.ClientSessionOptions {
	if protocol == "default" {
		return nil
	}
	return &mcp.ClientSessionOptions{ProtocolVersion: string(spoken(protocol))}
}

// callTool calls tool with args, bounded by testTimeout.
func callTool(t testing.TB, cs *mcp.ClientSession, tool string, args map[string]any) (*mcp.CallToolResult, error) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), testTimeout)
	defer cancel()
	return cs.CallTool(ctx, &mcp.CallToolParams{Name: tool, Arguments: args})
}

// text returns the text of a tool result's first content block.
func text(res *mcp.CallToolResult) string {
	if res == nil || len(res.Content) == 0 {
		return ""
	}
	if tc, ok := res.Content[0].(*mcp.TextContent); ok {
		return tc.Text
	}
	return ""
}

// fileLines returns the lines of the file at path.
func fileLines(t testing.TB, path string) []string {
	t.Helper()
	f, err := os.Open(path)
	if err != nil {
		t.Fatalf("opening ledger file: %v", err)
	}
	defer f.Close()
	var lines []string
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		lines = append(lines, sc.Text())
	}
	if err := sc.Err(); err != nil {
		t.Fatalf("reading ledger file: %v", err)
	}
	return lines
}

// waitCounts waits until cond holds for token's counts.
func waitCounts(t testing.TB, s *Server, token string, cond func(wire.MCPCounts) bool) wire.MCPCounts {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), testTimeout)
	defer cancel()
	c, err := s.WaitFor(ctx, token, cond)
	if err != nil {
		t.Fatalf("%v (last counts %+v)", err, c)
	}
	return c
}

var timeZero time.Time

// contextT returns a context bounded by testTimeout.
func contextT() (context.Context, context.CancelFunc) {
	return context.WithTimeout(context.Background(), testTimeout)
}

type (
	mcpCallParams    = mcp.CallToolParams
	mcpClientSession = mcp.ClientSession
	faultDuration    = fault.Duration
)

var onceTimes = fault.Once

func countTimes(n int) fault.Times { return fault.Times{Count: n} }

// reportKind returns the kind of the fault r reports.
func reportKind(t *testing.T, r wire.FaultReport) string {
	t.Helper()
	var f Fault
	if err := json.Unmarshal(r.Fault, &f); err != nil {
		t.Fatalf("fault report %s: %v", r.Fault, err)
	}
	return f.Kind()
}
