package gateway

import (
	"context"
	"net/http"
	"net/http/httptest"
	"runtime"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/replaycheck/replaycheck/fakes/fault"
	"github.com/replaycheck/replaycheck/fakes/ledger"
	"github.com/replaycheck/replaycheck/fakes/upstream"
	"github.com/replaycheck/replaycheck/internal/wire"
)

// TestStatelessLedger runs the seed's requests against a ledger that serves
// stateless Streamable HTTP (no MCP session ids).
func TestStatelessLedger(t *testing.T) {
	l, err := ledger.New(ledger.Config{Stateless: true})
	if err != nil {
		t.Fatal(err)
	}
	mux := http.NewServeMux()
	mux.Handle("/mcp", l)
	ls := httptest.NewServer(mux)
	t.Cleanup(func() { ls.Close(); l.Close() })
	up, err := upstream.New(upstream.Config{})
	if err != nil {
		t.Fatal(err)
	}
	us := httptest.NewServer(up)
	t.Cleanup(us.Close)
	g, err := New(Config{Upstream: us.URL + "/v1", MCP: ls.URL + "/mcp"})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { g.Close() })
	for _, path := range []string{pathChat, pathResponses, pathMessages} {
		w := httptest.NewRecorder()
		g.ServeHTTP(w, httptest.NewRequest("POST", path, strings.NewReader(seedBody(path, seedAsk, false, false))))
		if w.Code != http.StatusOK {
			t.Errorf("POST %s: status %d: %s", path, w.Code, w.Body)
		}
	}
	if got := l.Total().Writes; got != 3 {
		t.Errorf("writes = %d, want 3", got)
	}
}

// TestSessionReplacedWhenItEnds closes the shared MCP session behind the
// gateway's back; the next request connects a new one.
func TestSessionReplacedWhenItEnds(t *testing.T) {
	r := newRig(t, nil, nil)
	if status, body := r.post(pathChat, seedBody(pathChat, seedAsk, false, false)); status != 200 {
		t.Fatalf("first request: %d %s", status, body)
	}
	s, err := r.gw.pool.session(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	if err := s.cs.Close(); err != nil {
		t.Fatal(err)
	}
	select { // the watcher notices the end
	case <-s.dead:
	case <-time.After(10 * time.Second):
		t.Fatal("the session's watcher did not see it end")
	}
	if status, body := r.post(pathChat, seedBody(pathChat, seedAsk, false, false)); status != 200 {
		t.Fatalf("request after the session ended: %d %s", status, body)
	}
	s2, err := r.gw.pool.session(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	if s2 == s {
		t.Error("the ended session was reused")
	}
	if got := r.ledgerLines(); got != 2 {
		t.Errorf("writes = %d, want 2", got)
	}
}

// TestCloseLeavesNoGoroutines runs requests that open the shared session, a
// resend session and a detached call, closes everything and checks that no
// goroutine of the gateway or of the SDK's client is left.
func TestCloseLeavesNoGoroutines(t *testing.T) {
	func() {
		r := newRig(t, mustBugs(t, ModeNaive), func(c *Config) { c.ToolTimeout = 50 * time.Millisecond })
		d := fault.Duration(200 * time.Millisecond)
		armLedger(t, r,
			ledger.Fault{Tool: ledger.ToolCommitWrite, Times: fault.Times{Nth: 1}, DropAfterExecute: &ledger.DropAfterExecute{}},
			ledger.Fault{Tool: ledger.ToolCommitWrite, Times: fault.Times{Nth: 3}, Delay: &d},
		)
		for range 2 {
			if status, body := r.post(pathChat, seedBody(pathChat, seedAsk, false, false)); status != 200 {
				t.Fatalf("status %d: %s", status, body)
			}
		}
		if err := r.gw.Close(); err != nil {
			t.Fatal(err)
		}
	}()
	// t.Cleanup of the rig runs at the end of the test; close the rest here.
	deadline := time.Now().Add(10 * time.Second)
	for {
		leaked := clientGoroutines()
		if leaked == "" {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("goroutines left after Close:\n%s", leaked)
		}
		runtime.Gosched()
		time.Sleep(10 * time.Millisecond)
	}
}

// clientGoroutines returns the stacks of goroutines running gateway or MCP
// client code.
func clientGoroutines() string {
	buf := make([]byte, 1<<20)
	buf = buf[:runtime.Stack(buf, true)]
	var out []string
	for _, g := range strings.Split(string(buf), "\n\n") {
		if strings.Contains(g, "TestCloseLeavesNoGoroutines") || strings.Contains(g, "testing.") && !strings.Contains(g, "fakes/gateway.") {
			continue
		}
		if strings.Contains(g, "fakes/gateway.(*") || strings.Contains(g, "streamableClientConn") || strings.Contains(g, "mcp.(*ClientSession)") {
			out = append(out, g)
		}
	}
	return strings.Join(out, "\n\n")
}

// TestCloseDuringRequests closes the gateway while requests are in flight,
// some with tool calls left running (naive): Close returns, every request
// gets an answer, and the race detector sees nothing.
func TestCloseDuringRequests(t *testing.T) {
	r := newRig(t, mustBugs(t, ModeNaive), func(c *Config) { c.ToolTimeout = 50 * time.Millisecond })
	d := fault.Duration(300 * time.Millisecond)
	armLedger(t, r, ledger.Fault{Tool: ledger.ToolCommitWrite, Delay: &d})
	const n = 8
	var wg sync.WaitGroup
	statuses := make([]int, n)
	for i := range n {
		wg.Go(func() {
			statuses[i], _ = r.post(pathChat, seedBody(pathChat, seedAsk, false, false))
		})
	}
	r.waitLedger(func(c wire.MCPCounts) bool { return c.CallsTotal() > 0 })
	closed := make(chan error, 1)
	go func() { closed <- r.gw.Close() }()
	wg.Wait()
	select {
	case err := <-closed:
		if err != nil {
			t.Errorf("Close: %v", err)
		}
	case <-time.After(30 * time.Second):
		t.Fatal("Close did not return")
	}
	for i, s := range statuses {
		if s == 0 {
			t.Errorf("request %d got no answer", i)
		}
	}
}
