package ledger

import (
	"fmt"
	"net/http"
	"net/http/httptest"
	"sync"
	"testing"

	"github.com/replaycheck/replaycheck/internal/runtoken"
	"github.com/replaycheck/replaycheck/internal/wire"
)

// ownAddress serves s at a run's own address: everything arriving there
// belongs to token.
func ownAddress(t *testing.T, s *Server, token string) string {
	t.Helper()
	mux := http.NewServeMux()
	mux.Handle("/mcp", runtoken.Handler(token, s))
	ts := httptest.NewServer(mux)
	t.Cleanup(ts.Close)
	return ts.URL + "/mcp"
}

// TestOwnAddressAttributesEverything: a client at a run's own address that
// never sends the token (read_ledger takes no arguments; commit_write gets an
// entry of its own) has every call, write and session step counted for that
// run, with fault reports, and nothing for the others.
func TestOwnAddressAttributesEverything(t *testing.T) {
	s, shared := newLedger(t, Config{})
	const a, b = "rcaaaaaaaaaa", "rcbbbbbbbbbb"
	if err := s.Arm(a, []Fault{{Tool: "commit_write", IsError: &IsError{}, Times: onceTimes}, {Tool: "read_ledger", IsError: &IsError{}}}); err != nil {
		t.Fatal(err)
	}
	urlA, urlB := ownAddress(t, s, a), ownAddress(t, s, b)
	var wg sync.WaitGroup
	for _, u := range []string{urlA, urlB} {
		wg.Add(1)
		go func() {
			defer wg.Done()
			cs := connect(t, u, "")
			for i := range 3 {
				if _, err := callTool(t, cs, "commit_write", map[string]any{"entry": fmt.Sprintf("plain-%d", i)}); err != nil {
					t.Errorf("commit_write: %v", err)
				}
			}
		}()
	}
	wg.Wait()
	csA := connect(t, urlA, "")
	if _, err := callTool(t, csA, "read_ledger", nil); err != nil {
		t.Fatalf("read_ledger: %v", err)
	}
	// A call at the shared address without a token stays unattributed.
	cs := connect(t, shared, "")
	if _, err := callTool(t, cs, "commit_write", map[string]any{"entry": "nobody"}); err != nil {
		t.Fatalf("commit_write: %v", err)
	}

	ca, cb, none := s.Counts(a), s.Counts(b), s.Counts("")
	if ca.Calls["commit_write"] != 3 || ca.Calls["read_ledger"] != 1 || ca.Writes != 2 {
		t.Errorf("run a counts = %+v, want 3 commit_write (1 is_error), 1 read_ledger, 2 writes", ca)
	}
	if cb.Calls["commit_write"] != 3 || cb.Writes != 3 {
		t.Errorf("run b counts = %+v, want 3 calls and 3 writes", cb)
	}
	if none.Calls["commit_write"] != 1 || none.Writes != 1 {
		t.Errorf("unattributed counts = %+v, want 1 call and 1 write", none)
	}
	if ca.Messages == 0 || none.Messages == 0 {
		t.Errorf("session messages: run a %d, shared %d; want both counted", ca.Messages, none.Messages)
	}
	methods := map[string]bool{}
	for _, e := range s.Events(a) {
		if e.Kind == wire.MCPSession {
			methods[e.Method] = true
		}
	}
	for _, m := range []string{"initialize", "notifications/initialized", "tools/call"} {
		if m == "tools/call" {
			if methods[m] {
				t.Errorf("tools/call recorded as a session message")
			}
			continue
		}
		if !methods[m] {
			t.Errorf("run a's session events lack %s; got %v", m, methods)
		}
	}
	for _, e := range s.Events("") {
		if e.Kind == wire.MCPSession {
			t.Errorf("shared session message recorded as an event: %+v", e)
		}
	}
	got := s.FaultReports(a)
	if len(got) != 2 || got[0].Matched != 3 || got[0].Fired != 1 || got[1].Matched != 1 || got[1].Fired != 1 {
		t.Errorf("FaultReports(a) = %+v, want [3 matched 1 fired, 1 matched 1 fired]", got)
	}
	if r := s.FaultReports(b); len(r) != 0 {
		t.Errorf("FaultReports(b) = %+v, want none", r)
	}
}
