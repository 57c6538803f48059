package ledger

import (
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"slices"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/replaycheck/replaycheck/internal/wire"
)

// TestNegotiatedProtocolRecorded: the default ledger serves the go-sdk
// client at each version it asks for — 2026-07-28 statelessly (no
// initialize, no session), the older ones in a session — and every event of
// the run, the call, its write and its result included, carries the
// version the client was served at; an initialize's is the version the SDK
// answered. Counts.Protocols lists the versions of a run in the order first
// seen.
func TestNegotiatedProtocolRecorded(t *testing.T) {
	for _, protocol := range []string{"default", "2025-11-25", "2025-06-18", "2025-03-26", "2024-11-05"} {
		t.Run(protocol, func(t *testing.T) {
			s, _ := newLedger(t, Config{})
			const tok = "rc000000pr01"
			cs := connect(t, ownAddress(t, s, tok), protocol)
			want := spoken(protocol)
			if want.Stateless() {
				if cs.ID() != "" {
					t.Errorf("session id %q, want none at %s", cs.ID(), want)
				}
			} else if got := cs.InitializeResult().ProtocolVersion; got != string(want) {
				t.Errorf("initialize answered %s, want %s", got, want)
			}
			if _, err := callTool(t, cs, ToolCommitWrite, map[string]any{"entry": "alpha " + tok}); err != nil {
				t.Fatal(err)
			}
			evs := s.Events(tok)
			var kinds []wire.MCPKind
			for _, e := range evs {
				kinds = append(kinds, e.Kind)
				if e.Protocol != want {
					t.Errorf("event %s %s%s: protocol %q, want %q", e.Kind, e.Method, e.Tool, e.Protocol, want)
				}
				if e.Method == MethodInitialize && want.Stateless() {
					t.Errorf("a 2026-07-28 client sent initialize")
				}
			}
			for _, k := range []wire.MCPKind{wire.MCPCall, wire.MCPWrite, wire.MCPResult} {
				if !slices.Contains(kinds, k) {
					t.Errorf("events %v lack %s", kinds, k)
				}
			}
			if diff := cmp.Diff([]wire.MCPProtocol{want}, s.Counts(tok).Protocols); diff != "" {
				t.Errorf("Counts.Protocols (-want +got):\n%s", diff)
			}
		})
	}
	t.Run("both generations in one run", func(t *testing.T) {
		s, _ := newLedger(t, Config{})
		const tok = "rc000000pr02"
		url := ownAddress(t, s, tok)
		for _, protocol := range []string{"2025-06-18", "default"} {
			if _, err := callTool(t, connect(t, url, protocol), ToolCommitWrite, map[string]any{"entry": protocol + " " + tok}); err != nil {
				t.Fatal(err)
			}
		}
		want := []wire.MCPProtocol{wire.MCPProtocol20250618, wire.MCPProtocol20260728}
		if diff := cmp.Diff(want, s.Counts(tok).Protocols); diff != "" {
			t.Errorf("Counts.Protocols (-want +got):\n%s", diff)
		}
		if diff := cmp.Diff(want, s.Total().Protocols); diff != "" {
			t.Errorf("Total.Protocols (-want +got):\n%s", diff)
		}
	})
}

// TestRawStatelessRequest: a tools/call that describes itself as SEP-2575
// asks (Mcp-Protocol-Version and _meta 2026-07-28, no session) is served
// by the default ledger, counted for the token in its arguments and
// recorded at 2026-07-28; a faulted one (drop_after_execute) writes and is
// cut as on a session.
func TestRawStatelessRequest(t *testing.T) {
	cfg := fileLedger(t)
	s, url := newLedger(t, cfg)
	const tok = "rc000000pr03"
	mustArm(t, s, tok, "{drop_after_execute: {}, times: {nth: 2}}")
	for i, wantCut := range []bool{false, true} {
		resp, err := post2026(t, url, "tools/call", ToolCommitWrite, i+1, `"name":"commit_write","arguments":{"entry":"raw `+tok+`"}`)
		if wantCut {
			if err == nil {
				resp.Body.Close()
				t.Fatalf("second call answered %s, want the connection cut", resp.Status)
			}
			continue
		}
		if err != nil {
			t.Fatal(err)
		}
		b, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		if resp.StatusCode != http.StatusOK || !strings.Contains(string(b), `"recorded raw `+tok+`"`) {
			t.Fatalf("first call: %s %s, want the tool's result", resp.Status, b)
		}
	}
	c := waitCounts(t, s, tok, func(c wire.MCPCounts) bool { return c.Writes == 2 })
	if diff := cmp.Diff([]wire.MCPProtocol{wire.MCPProtocol20260728}, c.Protocols); diff != "" {
		t.Errorf("Counts.Protocols (-want +got):\n%s", diff)
	}
	for _, e := range s.Events(tok) {
		if e.Protocol != wire.MCPProtocol20260728 {
			t.Errorf("event %+v: protocol %q, want 2026-07-28", e, e.Protocol)
		}
	}
}

// TestProtocolPin: Config.Protocol pins the ledger to one release. Pinned
// to 2025-06-18 the ledger refuses server/discover with the SDK's
// unsupported-version error listing 2025-06-18 and the older versions, so
// the go-sdk client (which asks for 2026-07-28) falls back to initialize
// and is answered 2025-06-18, while a client that asks for an older
// version (2024-11-05) is answered with it, as a server of 2025-06-18 does;
// a newer one (2025-11-25) is answered with the pin. Pinned to 2026-07-28
// it answers initialize 404 with "method not found", so a session client
// cannot connect, and serves the default client statelessly. An unknown
// version is refused by New.
func TestProtocolPin(t *testing.T) {
	t.Run("2025-06-18", func(t *testing.T) {
		s, url := newLedger(t, Config{Protocol: wire.MCPProtocol20250618})
		resp, err := post2026(t, url, "server/discover", "", 1, "")
		if err != nil {
			t.Fatal(err)
		}
		ans := decodeAnswer(t, resp)
		var data struct {
			Supported []string `json:"supported"`
		}
		var werr *jsonrpc.Error
		want := []string{"2025-06-18", "2025-03-26", "2024-11-05"}
		if !errors.As(ans.Error, &werr) || werr.Code != mcp.CodeUnsupportedProtocolVersion || json.Unmarshal(werr.Data, &data) != nil || !slices.Equal(data.Supported, want) {
			t.Errorf("server/discover answered %v (data %s), want -32022 listing %v", ans.Error, werr.Data, want)
		}
		for i, tt := range []struct{ ask, want string }{
			{"default", "2025-06-18"},
			{"2025-11-25", "2025-06-18"},
			{"2024-11-05", "2024-11-05"},
		} {
			tok := fmt.Sprintf("rc00000pin%02d", i)
			cs := connect(t, ownAddress(t, s, tok), tt.ask)
			if got := cs.InitializeResult().ProtocolVersion; got != tt.want {
				t.Errorf("asked %s: initialize answered %s, want %s", tt.ask, got, tt.want)
			}
			if _, err := callTool(t, cs, ToolCommitWrite, map[string]any{"entry": "pinned " + tok}); err != nil {
				t.Fatal(err)
			}
			if diff := cmp.Diff([]wire.MCPProtocol{wire.MCPProtocol(tt.want)}, s.Counts(tok).Protocols); diff != "" {
				t.Errorf("asked %s: Counts.Protocols (-want +got):\n%s", tt.ask, diff)
			}
		}
	})
	t.Run("2026-07-28", func(t *testing.T) {
		s, url := newLedger(t, Config{Protocol: wire.MCPProtocol20260728})
		resp, err := postMessage(t.Context(), url, "", `{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-11-25","capabilities":{},"clientInfo":{"name":"t","version":"1"}}}`)
		if err != nil {
			t.Fatal(err)
		}
		if status := resp.StatusCode; status != http.StatusNotFound {
			t.Errorf("initialize: status %d, want 404", status)
		}
		var werr *jsonrpc.Error
		if ans := decodeAnswer(t, resp); !errors.As(ans.Error, &werr) || werr.Code != jsonrpc.CodeMethodNotFound {
			t.Errorf("initialize answered %v, want method not found", ans.Error)
		}
		ctx, cancel := contextT()
		defer cancel()
		c := mcp.NewClient(&mcp.Implementation{Name: "session-only", Version: "1"}, nil)
		if cs, err := c.Connect(ctx, &mcp.StreamableClientTransport{Endpoint: url, MaxRetries: -1}, sessionOptions("")); err == nil {
			cs.Close()
			t.Errorf("a 2025-11-25 client connected to a ledger pinned to 2026-07-28")
		}
		const tok = "rc000000pr05"
		cs := connect(t, ownAddress(t, s, tok), "default")
		if _, err := callTool(t, cs, ToolCommitWrite, map[string]any{"entry": "pinned " + tok}); err != nil {
			t.Fatal(err)
		}
		if diff := cmp.Diff([]wire.MCPProtocol{wire.MCPProtocol20260728}, s.Counts(tok).Protocols); diff != "" {
			t.Errorf("Counts.Protocols (-want +got):\n%s", diff)
		}
	})
	t.Run("unknown", func(t *testing.T) {
		_, err := New(Config{Protocol: "2025-01-01"})
		if err == nil || !strings.Contains(err.Error(), `"2025-01-01"`) || !strings.Contains(err.Error(), "2026-07-28") {
			t.Errorf("New: %v, want an error naming the version and those it speaks", err)
		}
	})
}

// post2026 posts one request of method (id, params fields; name, the tool
// a tools/call names) as SEP-2575 asks: Mcp-Protocol-Version, Mcp-Method,
// Mcp-Name and _meta 2026-07-28, no session.
func post2026(t *testing.T, url, method, name string, id int, params string) (*http.Response, error) {
	t.Helper()
	if params != "" {
		params += ","
	}
	body := `{"jsonrpc":"2.0","id":` + jsonInt(id) + `,"method":"` + method + `","params":{` + params +
		`"_meta":{"io.modelcontextprotocol/protocolVersion":"2026-07-28","io.modelcontextprotocol/clientCapabilities":{}}}}`
	req, err := http.NewRequestWithContext(t.Context(), http.MethodPost, url, strings.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Accept", "application/json, text/event-stream")
	req.Header.Set("Mcp-Protocol-Version", "2026-07-28")
	req.Header.Set("Mcp-Method", method)
	if name != "" {
		req.Header.Set("Mcp-Name", name)
	}
	return http.DefaultClient.Do(req)
}

func jsonInt(i int) string {
	b, _ := json.Marshal(i)
	return string(b)
}

// decodeAnswer reads the one JSON-RPC response of resp, plain JSON or an
// SSE event, and closes its body.
func decodeAnswer(t *testing.T, resp *http.Response) *jsonrpc.Response {
	t.Helper()
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	if err != nil {
		t.Fatal(err)
	}
	text := string(b)
	if i := strings.Index(text, "data: "); i >= 0 {
		text, _, _ = strings.Cut(text[i+len("data: "):], "\n")
	}
	msg, err := jsonrpc.DecodeMessage([]byte(text))
	if err != nil {
		t.Fatalf("answer %q: %v", b, err)
	}
	r, ok := msg.(*jsonrpc.Response)
	if !ok {
		t.Fatalf("answer %q is not a response", b)
	}
	return r
}

// TestPromptsDeclared: the ledger answers prompts/list (an empty list), so
// its server/discover result declares prompts, as a client may then rely
// on.
func TestPromptsDeclared(t *testing.T) {
	_, url := newLedger(t, Config{})
	resp, err := post2026(t, url, "server/discover", "", 1, "")
	if err != nil {
		t.Fatal(err)
	}
	var res mcp.DiscoverResult
	if ans := decodeAnswer(t, resp); ans.Error != nil || json.Unmarshal(ans.Result, &res) != nil || res.Capabilities == nil || res.Capabilities.Prompts == nil {
		t.Errorf("server/discover answered %s (error %v), want the prompts capability declared", ans.Result, ans.Error)
	}
	ctx, cancel := contextT()
	defer cancel()
	for _, protocol := range []string{"default", ""} {
		prompts, err := connect(t, url, protocol).ListPrompts(ctx, nil)
		if err != nil || len(prompts.Prompts) != 0 {
			t.Errorf("prompts/list at %s: %+v, %v; want an empty list", spoken(protocol), prompts, err)
		}
	}
}

// TestExpireSessionWithoutSession: expire_session acts on a call's session;
// a 2026-07-28 call has none, so the fault does not fire (its report says
// it matched nothing) and the call runs as if none were armed.
func TestExpireSessionWithoutSession(t *testing.T) {
	s, _ := newLedger(t, Config{})
	const tok = "rc000000pr06"
	mustArm(t, s, tok, "{tool: commit_write, expire_session: {}}")
	cs := connect(t, ownAddress(t, s, tok), "default")
	res, err := callTool(t, cs, ToolCommitWrite, map[string]any{"entry": "alpha " + tok})
	if err != nil || res.IsError {
		t.Fatalf("commit_write: %v %+v, want it to run", err, res)
	}
	if got := s.Counts(tok).Writes; got != 1 {
		t.Errorf("writes = %d, want 1", got)
	}
	reps := s.FaultReports(tok)
	if len(reps) != 1 || reps[0].Matched != 0 || reps[0].Fired != 0 {
		t.Errorf("reports %+v, want one that matched and fired nothing", reps)
	}
}
