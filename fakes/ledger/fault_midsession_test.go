package ledger

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/modelcontextprotocol/go-sdk/mcp"
	"golang.org/x/oauth2"

	"github.com/replaycheck/replaycheck/internal/wire"
)

// statefulModes are the modes with MCP sessions (connect's protocol):
// 2025-11-25 and 2025-06-18.
func statefulModes() []string { return []string{"", "2025-06-18"} }

// TestChangeToolsNotifiesTheClient: change_tools renames commit_write after
// the call ran; the go-sdk client is sent notifications/tools/list_changed,
// lists the new tools, and a call of the old name gets the MCP unknown-tool
// error, runs nothing, and is recorded as a call of an unknown tool.
func TestChangeToolsNotifiesTheClient(t *testing.T) {
	for _, protocol := range statefulModes() {
		t.Run("protocol "+protocol, func(t *testing.T) {
			s, url := newLedger(t, Config{})
			const tok = "rc00000000c1"
			mustArm(t, s, tok, "{tool: commit_write, change_tools: {rename: commit_write, to: record_entry}, times: once}")
			changed := make(chan struct{}, 4)
			var relisted sync.WaitGroup
			var cs *mcp.ClientSession
			c := mcp.NewClient(&mcp.Implementation{Name: "ledger-test", Version: "1"}, &mcp.ClientOptions{
				// Like the gateway, list the tools again on the notification.
				ToolListChangedHandler: func(ctx context.Context, req *mcp.ToolListChangedRequest) {
					changed <- struct{}{}
					relisted.Add(1)
					go func() {
						defer relisted.Done()
						lctx, cancel := contextT()
						defer cancel()
						_, _ = req.Session.ListTools(lctx, nil)
					}()
				},
			})
			ctx, cancel := contextT()
			defer cancel()
			var err error
			cs, err = c.Connect(ctx, &mcp.StreamableClientTransport{Endpoint: url}, sessionOptions(protocol))
			if err != nil {
				t.Fatal(err)
			}
			t.Cleanup(func() { _ = cs.Close(); relisted.Wait() })

			if _, err := callTool(t, cs, ToolCommitWrite, map[string]any{"entry": "one " + tok}); err != nil {
				t.Fatalf("the call that changes the list: %v", err)
			}
			// The answer waited for the client's tools/list after the notification.
			s.mu.Lock()
			listed := s.listed[cs.ID()]
			s.mu.Unlock()
			if listed == 0 {
				t.Error("the call was answered before the client listed the tools again")
			}
			select {
			case <-changed:
			case <-ctx.Done():
				t.Fatal("the client was not sent notifications/tools/list_changed")
			}
			if diff := cmp.Diff([]string{ToolCommitWriteKeyed, ToolReadLedger, "record_entry"}, listedNames(t, cs)); diff != "" {
				t.Errorf("tools after the rename (-want +got):\n%s", diff)
			}
			_, err = callTool(t, cs, ToolCommitWrite, map[string]any{"entry": "two " + tok})
			if err == nil || !strings.Contains(err.Error(), `unknown tool "commit_write"`) {
				t.Errorf("calling the old name: err = %v, want the unknown-tool error", err)
			}
			if _, err := callTool(t, cs, "record_entry", map[string]any{"entry": "three " + tok}); err != nil {
				t.Errorf("calling the new name: %v", err)
			}
			got := s.Counts(tok)
			if got.Writes != 2 {
				t.Errorf("writes = %d, want 2 (the first call and the renamed tool's)", got.Writes)
			}
			var calls, changes []string
			for _, e := range s.Events(tok) {
				switch e.Kind {
				case wire.MCPCall:
					calls = append(calls, fmt.Sprintf("%s unknown:%t", e.Tool, e.UnknownTool))
				case wire.MCPToolsChanged:
					changes = append(changes, string(e.Change)+" "+e.Tool)
				}
			}
			if diff := cmp.Diff([]string{"commit_write unknown:false", "commit_write unknown:true", "record_entry unknown:false"}, calls); diff != "" {
				t.Errorf("call events (-want +got):\n%s", diff)
			}
			if diff := cmp.Diff([]string{"removed commit_write", "added record_entry"}, changes); diff != "" {
				t.Errorf("tools_changed events (-want +got):\n%s", diff)
			}
			s.Reset()
			if diff := cmp.Diff(toolNames(), listedNames(t, cs)); diff != "" {
				t.Errorf("after Reset: tools (-want +got):\n%s", diff)
			}
		})
	}
}

// listedNames lists the tools of cs and returns their names, in order.
func listedNames(t *testing.T, cs *mcp.ClientSession) []string {
	t.Helper()
	ctx, cancel := contextT()
	defer cancel()
	res, err := cs.ListTools(ctx, nil)
	if err != nil {
		t.Fatal(err)
	}
	var names []string
	for _, tool := range res.Tools {
		names = append(names, tool.Name)
	}
	return names
}

// TestChangeToolsAddAndRemove: add offers a tool working like another; remove
// takes one away; a change of a tool not offered changes nothing.
func TestChangeToolsAddAndRemove(t *testing.T) {
	s, url := newLedger(t, Config{})
	const tok = "rc00000000c2"
	mustArm(t, s, tok,
		"{change_tools: {add: audit_note, like: read_ledger}, times: {nth: 1}}",
		"{change_tools: {remove: read_ledger}, times: {nth: 2}}",
		"{change_tools: {remove: read_ledger}, times: {nth: 3}}")
	cs := connect(t, url, "")
	for i := range 3 {
		if _, err := callTool(t, cs, ToolCommitWrite, map[string]any{"entry": "e " + tok}); err != nil {
			t.Fatalf("call %d: %v", i+1, err)
		}
	}
	if diff := cmp.Diff([]string{"audit_note", ToolCommitWrite, ToolCommitWriteKeyed}, listedNames(t, cs)); diff != "" {
		t.Errorf("tools (-want +got):\n%s", diff)
	}
	r, err := callTool(t, cs, "audit_note", nil)
	if err != nil || r.IsError || !strings.Contains(text(r), "e "+tok) {
		t.Errorf("audit_note works like read_ledger: %v %v", text(r), err)
	}
	var changes []string
	for _, e := range s.Events(tok) {
		if e.Kind == wire.MCPToolsChanged {
			changes = append(changes, string(e.Change)+" "+e.Tool)
		}
	}
	if diff := cmp.Diff([]string{"added audit_note", "removed read_ledger"}, changes); diff != "" {
		t.Errorf("tools_changed events (-want +got):\n%s", diff)
	}
}

// TestExpireSession: the go-sdk client sees the spec's 404 for a session the
// server forgot. Before execute, the call itself gets it
// (mcp.ErrSessionMissing) and nothing runs; after execute, the call ran and
// its connection closed, and the session's next request gets the 404. Either
// way a new session works.
func TestExpireSession(t *testing.T) {
	tests := []struct {
		name       string
		fault      string
		wantWrites int
		wantFault  string
	}{
		{"before execute", "{tool: commit_write, expire_session: {}, times: once}", 0, wire.MCPFaultExpireSession},
		{"after execute", "{tool: commit_write, expire_session: {after: execute}, times: once}", 1, wire.MCPFaultExpireSessionAfterExecute},
	}
	for _, protocol := range statefulModes() {
		for _, tt := range tests {
			t.Run(tt.name+" protocol "+protocol, func(t *testing.T) {
				s, url := newLedger(t, Config{})
				const tok = "rc00000000e1"
				mustArm(t, s, tok, tt.fault)
				cs := connect(t, url, protocol)
				_, err := callTool(t, cs, ToolCommitWrite, map[string]any{"entry": "one " + tok})
				if err == nil {
					t.Fatal("the call on the expiring session succeeded")
				}
				if tt.wantWrites == 0 && !errors.Is(err, mcp.ErrSessionMissing) {
					t.Errorf("before execute: err = %v, want mcp.ErrSessionMissing", err)
				}
				if got := s.Counts(tok).Writes; got != tt.wantWrites {
					t.Errorf("writes = %d, want %d", got, tt.wantWrites)
				}
				if tt.wantWrites > 0 {
					if _, err := callTool(t, cs, ToolReadLedger, nil); err == nil {
						t.Error("the forgotten session's next call succeeded")
					}
				}
				var faults []string
				for _, e := range s.Events(tok) {
					if e.Kind == wire.MCPFault {
						faults = append(faults, e.Fault)
					}
				}
				if diff := cmp.Diff([]string{tt.wantFault}, faults); diff != "" {
					t.Errorf("fault events (-want +got):\n%s", diff)
				}
				ctx, cancel := contextT()
				defer cancel()
				for ss := range s.mcp.Sessions() {
					if ss.ID() == cs.ID() {
						t.Errorf("the ledger still holds session %s", cs.ID())
					}
				}
				resp := rawPost(t, url, cs.ID(), `{"jsonrpc":"2.0","id":9,"method":"tools/list"}`)
				if resp.StatusCode != http.StatusNotFound {
					t.Errorf("a request with the forgotten session id: status %d, want 404", resp.StatusCode)
				}
				cs2 := connect(t, url, protocol)
				if _, err := cs2.CallTool(ctx, &mcp.CallToolParams{Name: ToolCommitWrite, Arguments: map[string]any{"entry": "two " + tok}}); err != nil {
					t.Errorf("a call on a new session: %v", err)
				}
			})
		}
	}
}

// reauth is an auth.OAuthHandler that counts Authorize calls and has no
// token: what the go-sdk client does on a 401 is the test's subject.
type reauth struct{ authorized atomic.Int32 }

func (r *reauth) TokenSource(context.Context) (oauth2.TokenSource, error) { return nil, nil }

func (r *reauth) Authorize(_ context.Context, _ *http.Request, resp *http.Response) error {
	r.authorized.Add(1)
	_, _ = io.Copy(io.Discard, resp.Body)
	return resp.Body.Close()
}

// TestUnauthorized: the ledger refuses a tools/call with 401 and a
// WWW-Authenticate challenge, running nothing; the go-sdk client with an
// OAuth handler re-authorizes once and sends the request again, once.
func TestUnauthorized(t *testing.T) {
	resp := func() *http.Response {
		s, url := newLedger(t, Config{})
		mustArm(t, s, "", "{unauthorized: {}}")
		cs := connect(t, url, "2025-06-18")
		return rawPost(t, url, cs.ID(), `{"jsonrpc":"2.0","id":7,"method":"tools/call","params":{"name":"commit_write","arguments":{"entry":"x"}}}`)
	}()
	if resp.StatusCode != http.StatusUnauthorized || !strings.HasPrefix(resp.Header.Get("WWW-Authenticate"), `Bearer error="invalid_token"`) {
		t.Errorf("status %d, WWW-Authenticate %q; want 401 with a Bearer invalid_token challenge", resp.StatusCode, resp.Header.Get("WWW-Authenticate"))
	}
	tests := []struct {
		times      string
		wantErr    bool
		wantCalls  int
		wantWrites int
	}{
		{"once", false, 2, 1},
		{"always", true, 2, 0},
	}
	for _, tt := range tests {
		t.Run(tt.times, func(t *testing.T) {
			s, url := newLedger(t, Config{})
			const tok = "rc00000000a1"
			mustArm(t, s, tok, "{tool: commit_write, unauthorized: {}, times: "+tt.times+"}")
			h := &reauth{}
			ctx, cancel := contextT()
			defer cancel()
			c := mcp.NewClient(&mcp.Implementation{Name: "ledger-test", Version: "1"}, nil)
			cs, err := c.Connect(ctx, &mcp.StreamableClientTransport{Endpoint: url, OAuthHandler: h}, nil)
			if err != nil {
				t.Fatal(err)
			}
			t.Cleanup(func() { _ = cs.Close() })
			_, err = cs.CallTool(ctx, &mcp.CallToolParams{Name: ToolCommitWrite, Arguments: map[string]any{"entry": "e " + tok}})
			if (err != nil) != tt.wantErr {
				t.Errorf("err = %v, wantErr %v", err, tt.wantErr)
			}
			got := s.Counts(tok)
			if got.CallsTotal() != tt.wantCalls || got.Writes != tt.wantWrites || h.authorized.Load() != 1 {
				t.Errorf("calls %d, writes %d, Authorize called %d times; want %d, %d, 1", got.CallsTotal(), got.Writes, h.authorized.Load(), tt.wantCalls, tt.wantWrites)
			}
		})
	}
}

// TestChangeToolsAnswersAClientThatDoesNotRelist: a client that keeps its
// tool list has read the notification once it answers a ping sent behind
// it, so the change_tools answer goes a few round trips later, not after
// the whole relist wait (here an hour: without the ping the call would
// block until the test's deadline). The client saw list_changed before the
// ping, and the call ran once.
func TestChangeToolsAnswersAClientThatDoesNotRelist(t *testing.T) {
	s, url := newLedger(t, Config{})
	s.mu.Lock()
	s.relistWait = time.Hour
	s.mu.Unlock()
	const tok = "rc00000000c2"
	mustArm(t, s, tok, "{tool: commit_write, change_tools: {rename: commit_write, to: record_entry}, times: once}")
	var mu sync.Mutex
	var received []string
	c := mcp.NewClient(&mcp.Implementation{Name: "ledger-test", Version: "1"}, nil)
	c.AddReceivingMiddleware(func(next mcp.MethodHandler) mcp.MethodHandler {
		return func(ctx context.Context, method string, req mcp.Request) (mcp.Result, error) {
			mu.Lock()
			received = append(received, method)
			mu.Unlock()
			return next(ctx, method, req)
		}
	})
	ctx, cancel := contextT()
	defer cancel()
	cs, err := c.Connect(ctx, &mcp.StreamableClientTransport{Endpoint: url}, sessionOptions(""))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = cs.Close() })
	if _, err := callTool(t, cs, ToolCommitWrite, map[string]any{"entry": "one " + tok}); err != nil {
		t.Fatalf("the call that changes the list: %v", err)
	}
	mu.Lock()
	got := slices.Clone(received)
	mu.Unlock()
	// The SDK may notify the removal and the addition apart (a busy
	// machine spreads them over its 10ms debounce): a second notice may
	// follow the ping.
	if len(got) > 2 && !slices.ContainsFunc(got[2:], func(m string) bool { return m != methodToolListChanged }) {
		got = got[:2]
	}
	if diff := cmp.Diff([]string{methodToolListChanged, "ping"}, got); diff != "" {
		t.Errorf("methods the client received (-want +got):\n%s", diff)
	}
	if c := s.Counts(tok); c.Writes != 1 {
		t.Errorf("writes = %d, want 1", c.Writes)
	}
}
