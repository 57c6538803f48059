package ledger

import (
	"context"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
	"github.com/modelcontextprotocol/go-sdk/mcp"
)

const initializeBody = `{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-06-18","capabilities":{},"clientInfo":{"name":"sessions-test","version":"1"}}}`

// TestSessionCap: past MaxSessions an initialize is refused with 503 and a
// JSON-RPC error saying why, however many come, so the open sessions stay
// bounded; a session that ends makes room for a new one.
func TestSessionCap(t *testing.T) {
	const max = 3
	s, url := newLedger(t, Config{MaxSessions: max})
	var open []*mcp.ClientSession
	for range max {
		open = append(open, connect(t, url, ""))
	}
	const extra = 20
	for i := range extra {
		status, body, msg := postRaw(t, url, nil, initializeBody)
		resp, _ := msg.(*jsonrpc.Response)
		if status != http.StatusServiceUnavailable || resp == nil || resp.Error == nil || !strings.Contains(body, "3 MCP sessions are open, the most it keeps") {
			t.Fatalf("initialize %d past the cap: %d %s, want 503 with a JSON-RPC error naming the cap", i, status, body)
		}
	}
	if got := s.Sessions(); got.Live != max || got.Refused != extra || got.Max != max {
		t.Errorf("sessions %+v, want %d live, %d refused, max %d", got, max, extra, max)
	}
	// The go-sdk client takes a 503 as transient and says only its status.
	// (A 2026-07-28 client opens no session: the cap is not its.)
	ctx, cancel := context.WithTimeout(context.Background(), testTimeout)
	defer cancel()
	_, err := mcp.NewClient(&mcp.Implementation{Name: "one-too-many", Version: "1"}, nil).Connect(ctx, &mcp.StreamableClientTransport{Endpoint: url, MaxRetries: -1}, sessionOptions(""))
	if err == nil || !strings.Contains(err.Error(), "Service Unavailable") {
		t.Errorf("connecting past the cap: %v, want the refusal", err)
	}
	if err := open[0].Close(); err != nil { // DELETE: the session ends
		t.Fatal(err)
	}
	waitSessions(t, s, func(got Sessions) bool { return got.Live < max })
	cs := connect(t, url, "")
	cs.Close()
}

// waitSessions waits until cond holds for the ledger's sessions.
func waitSessions(t *testing.T, s *Server, cond func(Sessions) bool) {
	t.Helper()
	deadline := time.After(testTimeout)
	for {
		s.mu.Lock()
		changed := s.changed
		s.mu.Unlock()
		got := s.Sessions()
		if cond(got) {
			return
		}
		select {
		case <-changed:
		case <-deadline:
			t.Fatalf("sessions %+v: the condition never held", got)
		}
	}
}

// TestSessionIdleTimeout: a session that gets no request for
// SessionTimeout is closed (sessions opened and abandoned, as 30,000
// initialize calls in a loop leave them, do not pile up).
func TestSessionIdleTimeout(t *testing.T) {
	s, url := newLedger(t, Config{SessionTimeout: time.Millisecond})
	const n = 50
	for i := range n {
		if status, body, _ := postRaw(t, url, nil, initializeBody); status != http.StatusOK {
			t.Fatalf("initialize %d: %d %s", i, status, body)
		}
	}
	waitSessions(t, s, func(got Sessions) bool { return got.Live == 0 })
	if got := s.Sessions(); got.IdleTimeout != "1ms" {
		t.Errorf("sessions %+v, want idle timeout 1ms", got)
	}
}
