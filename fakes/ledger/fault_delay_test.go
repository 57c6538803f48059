package ledger

import (
	"bytes"
	"context"
	"io"
	"net/http"
	"net/http/httptest"
	"slices"
	"testing"
	"time"

	"github.com/replaycheck/replaycheck/internal/wire"
)

// TestDelayCountedWhenTheLedgerIsLate: the ledger gets a delayed tools/call
// only after its client gave up (a front holds the POST until the client has
// closed it: a ledger slow to read what was sent, as on a busy machine). The
// call, the delay fault and the cancellation are counted all the same, so a
// verdict judged from them does not depend on how fast the ledger ran.
func TestDelayCountedWhenTheLedgerIsLate(t *testing.T) {
	for _, m := range modes {
		t.Run(m.name, func(t *testing.T) {
			s, err := New(Config{Stateless: m.stateless})
			if err != nil {
				t.Fatal(err)
			}
			held := make(chan struct{}, 1)
			front := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
				if r.Method == http.MethodPost {
					body, _ := io.ReadAll(r.Body)
					r.Body = io.NopCloser(bytes.NewReader(body))
					if bytes.Contains(body, []byte(`"method":"tools/call"`)) {
						held <- struct{}{}
						<-r.Context().Done() // the client gave up
					}
				}
				s.ServeHTTP(w, r)
			}))
			t.Cleanup(front.Close)
			t.Cleanup(func() { s.Close() })
			const tok = "rc00000000d2"
			mustArm(t, s, tok, "{tool: commit_write, delay: 1h}")
			cs := connect(t, front.URL, m.protocol)
			ctx, cancel := context.WithCancel(context.Background())
			errc := make(chan error, 1)
			go func() {
				_, err := cs.CallTool(ctx, &mcpCallParams{Name: ToolCommitWrite, Arguments: map[string]any{"entry": "late " + tok}})
				errc <- err
			}()
			select {
			case <-held:
			case <-time.After(testTimeout):
				t.Fatal("the call did not reach the front")
			}
			cancel()
			<-errc
			got := waitCounts(t, s, tok, func(c wire.MCPCounts) bool { return c.Cancellations == 1 })
			if got.Calls[ToolCommitWrite] != 1 {
				t.Errorf("calls %v, want one commit_write", got.Calls)
			}
			var kinds []string
			for _, e := range s.Events(tok) {
				if e.Kind == wire.MCPFault || e.Kind == wire.MCPCancelled || e.Kind == wire.MCPCall {
					kinds = append(kinds, string(e.Kind)+" "+e.Fault+e.Cause)
				}
			}
			// The client both closes its POST and, on a session, sends
			// notifications/cancelled; whichever the late ledger sees first
			// names the cause. Either way the call is cancelled exactly once.
			want := []string{string(wire.MCPCall) + " ", string(wire.MCPFault) + " delay", string(wire.MCPCancelled) + " stream closed"}
			byNotice := slices.Clone(want)
			byNotice[2] = string(wire.MCPCancelled) + " notifications/cancelled"
			if !slices.Equal(kinds, want) && (m.stateless || !slices.Equal(kinds, byNotice)) {
				t.Errorf("events %q, want %q", kinds, want)
			}
		})
	}
}
