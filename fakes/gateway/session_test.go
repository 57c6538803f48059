package gateway

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/replaycheck/replaycheck/fakes/fault"
	"github.com/replaycheck/replaycheck/fakes/ledger"
	"github.com/replaycheck/replaycheck/internal/wire"
)

// methodLog is an http.Handler in front of an MCP server that records the
// JSON-RPC method of each POST and can hold chosen methods back for a while
// before passing them on (a slow session setup).
type methodLog struct {
	next  http.Handler
	delay map[string]time.Duration

	mu      sync.Mutex
	methods []string
}

func (m *methodLog) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	if r.Method == http.MethodPost {
		body, _ := io.ReadAll(r.Body)
		r.Body = io.NopCloser(bytes.NewReader(body))
		var msg struct {
			Method string `json:"method"`
		}
		_ = json.Unmarshal(body, &msg)
		m.mu.Lock()
		m.methods = append(m.methods, msg.Method)
		m.mu.Unlock()
		if d := m.delay[msg.Method]; d > 0 {
			select {
			case <-time.After(d):
			case <-r.Context().Done():
				return
			}
		}
	}
	m.next.ServeHTTP(w, r)
}

// count returns how many POSTs carried method.
func (m *methodLog) count(method string) int {
	m.mu.Lock()
	defer m.mu.Unlock()
	n := 0
	for _, got := range m.methods {
		if got == method {
			n++
		}
	}
	return n
}

// sessionRig is a gateway in front of a swappable ledger (as a restarted
// server at the same address) and the toolResultModel stub.
type sessionRig struct {
	gw     *Gateway
	model  *toolResultModel
	log    *methodLog
	ledger atomic.Pointer[ledger.Server]
}

func newSessionRig(t *testing.T, delay map[string]time.Duration, toolTimeout time.Duration) *sessionRig {
	t.Helper()
	r := &sessionRig{model: &toolResultModel{}}
	r.swapLedger(t)
	r.log = &methodLog{next: http.HandlerFunc(func(w http.ResponseWriter, req *http.Request) { r.ledger.Load().ServeHTTP(w, req) }), delay: delay}
	ls := httptest.NewServer(r.log)
	us := httptest.NewServer(r.model)
	g, err := New(Config{Upstream: us.URL + "/v1", MCP: ls.URL + "/mcp", ToolTimeout: toolTimeout})
	if err != nil {
		t.Fatal(err)
	}
	r.gw = g
	t.Cleanup(func() {
		g.Close()
		ls.Close()
		us.Close()
	})
	return r
}

// swapLedger puts a new ledger behind the MCP address; it knows none of
// the old one's sessions.
func (r *sessionRig) swapLedger(t *testing.T) *ledger.Server {
	t.Helper()
	l, err := ledger.New(sessionLedger)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { l.Close() })
	r.ledger.Store(l)
	return l
}

// chat sends the seed's chat request and returns what the model was told
// about its tool call.
func (r *sessionRig) chat(t *testing.T) string {
	t.Helper()
	w := httptest.NewRecorder()
	r.gw.ServeHTTP(w, httptest.NewRequest("POST", pathChat, strings.NewReader(seedBody(pathChat, seedAsk, false, false))))
	if w.Code != http.StatusOK {
		t.Fatalf("status %d: %s", w.Code, w.Body)
	}
	r.model.mu.Lock()
	defer r.model.mu.Unlock()
	return r.model.results[len(r.model.results)-1]
}

// TestToolListCachedPerSession: the tool list is fetched once per MCP
// session, not once per app request; a list_changed notification drops it.
func TestToolListCachedPerSession(t *testing.T) {
	r := newSessionRig(t, nil, 0)
	for range 3 {
		if got := r.chat(t); got != "recorded alpha" {
			t.Fatalf("the model was told %q", got)
		}
	}
	if n := r.log.count("tools/list"); n != 1 {
		t.Errorf("tools/list sent %d times for 3 requests on one session, want 1", n)
	}
	// What the SDK calls on notifications/tools/list_changed (sent by the
	// ledger itself in ledger.TestGatewayOffersTheChangedToolList).
	r.gw.pool.cur.toolsChanged()
	r.chat(t)
	if n := r.log.count("tools/list"); n != 2 {
		t.Errorf("tools/list sent %d times after list_changed, want 2", n)
	}
}

// TestRestartedServerGetsTheCallOnce: a server that no longer knows the
// gateway's session (it restarted at the same address) refuses the call
// with 404 before running it; the gateway lists the new server's tools on
// a new session and sends the call there, once.
func TestRestartedServerGetsTheCallOnce(t *testing.T) {
	r := newSessionRig(t, nil, 0)
	r.chat(t)
	l2 := r.swapLedger(t)
	if got := r.chat(t); got != "recorded alpha" {
		t.Errorf("the model was told %q, want the call's result", got)
	}
	got := l2.Total()
	if diff := cmp.Diff(map[string]int{ledger.ToolCommitWrite: 1}, got.Calls); diff != "" || got.Writes != 1 {
		t.Errorf("new ledger: writes %d, calls (-want +got):\n%s", got.Writes, diff)
	}
	if n := r.log.count("tools/list"); n != 2 {
		t.Errorf("tools/list sent %d times, want 2 (one per session)", n)
	}
}

// TestToolTimeoutBoundsOnlyTheCall: opening the MCP session and listing its
// tools take longer than the tool timeout; they are bounded by their own
// timeout, so the call is still made, and times out on its own (the tool
// is slower still) and is cancelled.
func TestToolTimeoutBoundsOnlyTheCall(t *testing.T) {
	const toolTimeout = 50 * time.Millisecond
	setup := 4 * toolTimeout
	r := newSessionRig(t, map[string]time.Duration{"initialize": setup, "tools/list": setup}, toolTimeout)
	slow := fault.Duration(time.Minute)
	l := r.ledger.Load()
	if err := l.Arm("", []ledger.Fault{{Tool: ledger.ToolCommitWrite, Delay: &slow}}); err != nil {
		t.Fatal(err)
	}
	if got, want := r.chat(t), "timed out after 50ms and was cancelled"; !strings.Contains(got, want) {
		t.Errorf("the model was told %q, want it to contain %q", got, want)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	c, err := l.WaitFor(ctx, "", func(c wire.MCPCounts) bool { return c.Cancellations == 1 })
	if err != nil {
		t.Fatal(err)
	}
	if c.Calls[ledger.ToolCommitWrite] != 1 {
		t.Errorf("calls %v, want one commit_write", c.Calls)
	}
}

// TestUnansweredStreamIsBounded: an MCP server that never answers the GET
// of a session's standalone SSE stream (the SDK opens it inside Connect, on
// a context no caller's deadline reaches) holds neither the app request nor
// Close beyond the session timeout.
func TestUnansweredStreamIsBounded(t *testing.T) {
	l, err := ledger.New(sessionLedger)
	if err != nil {
		t.Fatal(err)
	}
	release := make(chan struct{})
	ls := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Method == http.MethodGet {
			select {
			case <-r.Context().Done():
			case <-release:
			}
			return
		}
		l.ServeHTTP(w, r)
	}))
	model := &toolResultModel{}
	us := httptest.NewServer(model)
	g, err := New(Config{Upstream: us.URL + "/v1", MCP: ls.URL + "/mcp", SessionTimeout: 100 * time.Millisecond})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		close(release) // only needed when the test failed
		ls.Close()
		l.Close()
		us.Close()
	})
	done := make(chan *httptest.ResponseRecorder, 1)
	go func() {
		w := httptest.NewRecorder()
		g.ServeHTTP(w, httptest.NewRequest("POST", pathChat, strings.NewReader(seedBody(pathChat, seedAsk, false, false))))
		done <- w
	}()
	select {
	case w := <-done:
		if want := "did not answer the GET of its SSE stream within 100ms"; !strings.Contains(w.Body.String(), want) {
			t.Errorf("status %d: %s\nwant the answer to contain %q", w.Code, w.Body, want)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("the app request is still waiting for the MCP session after 10s")
	}
	closed := make(chan error, 1)
	go func() { closed <- g.Close() }()
	select {
	case <-closed:
	case <-time.After(10 * time.Second):
		t.Fatal("Close still waiting after 10s")
	}
}

// logSignal is a slog.Handler that sends on ch each time a record with
// message msg is logged (and drops it when nobody is listening).
type logSignal struct {
	msg string
	ch  chan struct{}
}

func (h logSignal) Enabled(context.Context, slog.Level) bool { return true }
func (h logSignal) WithAttrs([]slog.Attr) slog.Handler       { return h }
func (h logSignal) WithGroup(string) slog.Handler            { return h }
func (h logSignal) Handle(_ context.Context, r slog.Record) error {
	if r.Message == h.msg {
		select {
		case h.ch <- struct{}{}:
		default:
		}
	}
	return nil
}

// TestEndedSessionGetsNoCall: the server ends the session's standalone
// stream (it closed, and a new one took its address), so the session ends;
// while its end is still under way (its DELETE unanswered) the gateway still
// hands it out, and the SDK refuses the call on it before sending anything.
// The call did not run, so it goes once on a new session to the new server,
// and the model gets its result rather than an unknown outcome.
func TestEndedSessionGetsNoCall(t *testing.T) {
	old, err := ledger.New(sessionLedger)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { old.Close() })
	var cur atomic.Pointer[ledger.Server]
	cur.Store(old)
	deleteSeen, release := make(chan struct{}, 1), make(chan struct{})
	var releaseOnce sync.Once
	t.Cleanup(func() { releaseOnce.Do(func() { close(release) }) }) // when the test failed early
	ls := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Method == http.MethodDelete {
			select {
			case deleteSeen <- struct{}{}:
			default:
			}
			select {
			case <-release:
			case <-r.Context().Done():
				return
			}
		}
		cur.Load().ServeHTTP(w, r)
	}))
	model := &toolResultModel{}
	us := httptest.NewServer(model)
	sending := make(chan struct{}, 1)
	g, err := New(Config{
		Upstream: us.URL + "/v1", MCP: ls.URL + "/mcp",
		Logger: slog.New(logSignal{msg: "mcp call sending", ch: sending}),
	})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		g.Close()
		ls.Close()
		us.Close()
	})
	chat := func() string {
		w := httptest.NewRecorder()
		g.ServeHTTP(w, httptest.NewRequest("POST", pathChat, strings.NewReader(seedBody(pathChat, seedAsk, false, false))))
		if w.Code != http.StatusOK {
			return fmt.Sprintf("status %d: %s", w.Code, w.Body)
		}
		model.mu.Lock()
		defer model.mu.Unlock()
		return model.results[len(model.results)-1]
	}

	if got := chat(); got != "recorded alpha" {
		t.Fatalf("first request: the model was told %q", got)
	}
	<-sending // the first request's call
	l2, err := ledger.New(sessionLedger)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { l2.Close() })
	cur.Store(l2)
	old.Close() // ends the session's standalone stream
	select {
	case <-deleteSeen: // the session has failed and is closing; it ends when its DELETE is answered
	case <-time.After(10 * time.Second):
		t.Fatal("no DELETE of the ended session after 10s")
	}

	told := make(chan string, 1)
	go func() { told <- chat() }()
	select {
	case <-sending: // the gateway took the ended session for the call
	case <-time.After(10 * time.Second):
		t.Fatal("no tools/call attempted after 10s")
	}
	releaseOnce.Do(func() { close(release) })
	if got := <-told; got != "recorded alpha" {
		t.Errorf("the model was told %q, want the call's result", got)
	}
	got := l2.Total()
	if diff := cmp.Diff(map[string]int{ledger.ToolCommitWrite: 1}, got.Calls); diff != "" || got.Writes != 1 {
		t.Errorf("new ledger: writes %d, calls (-want +got):\n%s", got.Writes, diff)
	}
	if n := old.Total().Calls[ledger.ToolCommitWrite]; n != 1 {
		t.Errorf("old ledger: %d commit_write calls, want the first request's 1", n)
	}
}

// TestNotRun: a failed call is marked as not run only when no request
// carried it or the server answered 404; a request that went out and got
// any other answer, or none, leaves the outcome unknown, and a timeout stays
// a timeout.
func TestNotRun(t *testing.T) {
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		switch r.URL.Path {
		case "/gone":
			http.Error(w, "session not found", http.StatusNotFound)
		case "/drop":
			panic(http.ErrAbortHandler)
		}
	}))
	t.Cleanup(srv.Close)
	client := &http.Client{Transport: sendRecorder{next: http.DefaultTransport}}
	callErr := errors.New("connection closed")
	tests := []struct {
		name    string
		path    string // "": no request made
		err     error
		wantRun bool // false: the result wraps errNotRun
	}{
		{name: "nothing sent", err: callErr},
		{name: "answered 404", path: "/gone", err: callErr},
		{name: "answered 200", path: "/ok", err: callErr, wantRun: true},
		{name: "connection dropped", path: "/drop", err: callErr, wantRun: true},
		{name: "timeout before sending", err: context.DeadlineExceeded, wantRun: true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			ctx, mark := withSendMark(context.Background())
			if tt.path != "" {
				req, _ := http.NewRequestWithContext(ctx, http.MethodPost, srv.URL+tt.path, nil)
				if resp, err := client.Do(req); err == nil {
					resp.Body.Close()
				}
			}
			got := notRun(tt.err, mark)
			if !errors.Is(got, tt.err) {
				t.Errorf("notRun(%v) = %v, which lost the call's error", tt.err, got)
			}
			if run := !errors.Is(got, errNotRun); run != tt.wantRun {
				t.Errorf("notRun(%v) = %v; may have run %v, want %v", tt.err, got, run, tt.wantRun)
			}
		})
	}
}
