package ledger

import (
	"bufio"
	"bytes"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/replaycheck/replaycheck/internal/wire"
)

// postRaw sends body to url with the headers a Streamable HTTP client sends and
// returns the status, the body, and the JSON-RPC message in it (plain JSON or
// the first SSE data line), if any.
func postRaw(t testing.TB, url string, header map[string]string, body string) (int, string, jsonrpc.Message) {
	t.Helper()
	ctx, cancel := contextT()
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, url, strings.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Accept", "application/json, text/event-stream")
	for k, v := range header {
		req.Header.Set(k, v)
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatalf("POST %s: %v", url, err)
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	if err != nil {
		t.Fatalf("reading answer: %v", err)
	}
	data := b
	if strings.HasPrefix(resp.Header.Get("Content-Type"), "text/event-stream") {
		data = nil
		sc := bufio.NewScanner(bytes.NewReader(b))
		for sc.Scan() {
			if d, ok := strings.CutPrefix(sc.Text(), "data: "); ok {
				data = []byte(d)
				break
			}
		}
	}
	msg, _ := jsonrpc.DecodeMessage(data)
	return resp.StatusCode, string(b), msg
}

// rpcErrorCode returns the JSON-RPC error code of msg, or 0.
func rpcErrorCode(msg jsonrpc.Message) int64 {
	resp, ok := msg.(*jsonrpc.Response)
	if !ok || resp.Error == nil {
		return 0
	}
	var werr *jsonrpc.Error
	if errors.As(resp.Error, &werr) {
		return werr.Code
	}
	return 0
}

// TestUnknownMethod proves that a method the server does not know, such as a
// discovery probe sent before initialize, gets a JSON-RPC "method not found"
// (-32601), in every mode and protocol version, so a client can fall back.
// For versions before 2026-07-28 the SDK alone answers a plain-text 400
// (go-sdk v1.8.0); the wrapper answers instead. From 2026-07-28 on, the SDK
// answers 404 with -32601 itself, as SEP-2575 requires.
func TestUnknownMethod(t *testing.T) {
	newProto := map[string]string{"Mcp-Protocol-Version": "2026-07-28"}
	tests := []struct {
		name       string
		stateless  bool
		header     map[string]string
		body       string
		wantStatus int
		wantCode   int64
	}{
		{"probe before initialize", false, nil, `{"jsonrpc":"2.0","id":1,"method":"rpc.discover"}`, http.StatusOK, jsonrpc.CodeMethodNotFound},
		{"probe stateless", true, nil, `{"jsonrpc":"2.0","id":"a","method":"rpc.discover","params":{}}`, http.StatusOK, jsonrpc.CodeMethodNotFound},
		{"unknown method, old protocol header", true, map[string]string{"Mcp-Protocol-Version": "2025-06-18"}, `{"jsonrpc":"2.0","id":7,"method":"tasks/list"}`, http.StatusOK, jsonrpc.CodeMethodNotFound},
		{"server/discover before initialize (SDK answers)", false, nil, `{"jsonrpc":"2.0","id":1,"method":"server/discover","params":{}}`, http.StatusOK, jsonrpc.CodeMethodNotFound},
		{"unknown method, new protocol (SDK answers)", true, newProto, `{"jsonrpc":"2.0","id":1,"method":"rpc.discover","params":{"_meta":{"io.modelcontextprotocol/protocolVersion":"2026-07-28"}}}`, http.StatusNotFound, jsonrpc.CodeMethodNotFound},
		{"unknown notification", false, nil, `{"jsonrpc":"2.0","method":"notifications/whatever"}`, http.StatusAccepted, 0},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, url := newLedger(t, Config{Stateless: tt.stateless})
			status, body, msg := postRaw(t, url, tt.header, tt.body)
			if status != tt.wantStatus {
				t.Errorf("status = %d, want %d (body %q)", status, tt.wantStatus, body)
			}
			if got := rpcErrorCode(msg); got != tt.wantCode {
				t.Errorf("JSON-RPC error code = %d, want %d (body %q)", got, tt.wantCode, body)
			}
		})
	}
}

// TestBadRequests sends malformed and oversized bodies: each gets a clean
// HTTP error naming the problem, nothing is counted as a write, nothing
// panics, and the ledger keeps serving.
func TestBadRequests(t *testing.T) {
	big := `{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"commit_write","arguments":{"entry":"` + strings.Repeat("x", 5000) + `"}}}`
	tests := []struct {
		name       string
		header     map[string]string
		body       string
		wantStatus int
		wantBody   string
	}{
		{"not JSON", nil, `{not json`, http.StatusBadRequest, "unparsable JSON-RPC body"},
		{"empty", nil, ``, http.StatusBadRequest, "unparsable JSON-RPC body: empty body"},
		{"not JSON-RPC", nil, `{"hello":"world"}`, http.StatusBadRequest, "unparsable JSON-RPC body"},
		{"bad batch", nil, `[{"jsonrpc":"2.0","id":1,"method":"ping"}, 5]`, http.StatusBadRequest, "batch message 2"},
		{"empty batch", nil, `[]`, http.StatusBadRequest, "empty batch"},
		{"oversized", nil, big, http.StatusRequestEntityTooLarge, "request body exceeds 4096 bytes"},
		{"wrong content type", map[string]string{"Content-Type": "text/plain"}, `{}`, http.StatusUnsupportedMediaType, "Content-Type"},
		{"tools/call params not an object", nil, `{"jsonrpc":"2.0","id":1,"method":"tools/call","params":5}`, http.StatusOK, `"error"`},
		{"tools/call without session", nil, `{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"commit_write","arguments":{"entry":"x"}}}`, http.StatusOK, ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			s, url := newLedger(t, Config{MaxBodyBytes: 4096})
			status, body, _ := postRaw(t, url, tt.header, tt.body)
			if status != tt.wantStatus || !strings.Contains(body, tt.wantBody) {
				t.Errorf("got %d %q, want %d with %q", status, body, tt.wantStatus, tt.wantBody)
			}
			if got := s.Total().Writes; got != 0 {
				t.Errorf("Writes = %d, want 0", got)
			}
			cs := connect(t, url, "")
			if res, err := callTool(t, cs, ToolCommitWrite, map[string]any{"entry": "still serving"}); err != nil || res.IsError {
				t.Fatalf("call after a bad request: %v, %+v", err, res)
			}
		})
	}
}

// TestPeek checks the wrapper's view of request bodies.
func TestPeek(t *testing.T) {
	tests := []struct {
		name      string
		body      string
		wantBatch bool
		want      []string // method of each message ("" for a response)
		wantErr   bool
	}{
		{"call", `{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{}}`, false, []string{"tools/call"}, false},
		{"notification", ` {"jsonrpc":"2.0","method":"notifications/cancelled","params":{"requestId":1}} `, false, []string{"notifications/cancelled"}, false},
		{"response", `{"jsonrpc":"2.0","id":1,"result":{}}`, false, []string{""}, false},
		{"batch", `[{"jsonrpc":"2.0","id":1,"method":"ping"},{"jsonrpc":"2.0","method":"notifications/initialized"}]`, true, []string{"ping", "notifications/initialized"}, false},
		{"garbage", `xyz`, false, nil, true},
		{"truncated batch", `[{"jsonrpc":"2.0","id":1,"method":"ping"}`, true, nil, true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			msgs, batch, err := peek([]byte(tt.body))
			if (err != nil) != tt.wantErr {
				t.Fatalf("peek error = %v, wantErr %v", err, tt.wantErr)
			}
			if err != nil {
				return
			}
			var got []string
			for _, m := range msgs {
				if r, ok := m.(*jsonrpc.Request); ok {
					got = append(got, r.Method)
				} else {
					got = append(got, "")
				}
			}
			if batch != tt.wantBatch {
				t.Errorf("batch = %v, want %v", batch, tt.wantBatch)
			}
			if diff := cmp.Diff(tt.want, got); diff != "" {
				t.Errorf("methods (-want +got):\n%s", diff)
			}
		})
	}
}

// TestBatchCalls sends two tool calls in one JSON-RPC batch (protocol
// 2025-03-26): both are counted, executed and answered.
func TestBatchCalls(t *testing.T) {
	s, url := newLedger(t, Config{Stateless: true})
	const tok = "rc00000000e1"
	body := fmt.Sprintf(`[{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"commit_write","arguments":{"entry":"one %[1]s"}}},`+
		`{"jsonrpc":"2.0","id":2,"method":"tools/call","params":{"name":"commit_write","arguments":{"entry":"two %[1]s"}}}]`, tok)
	status, answer, _ := postRaw(t, url, map[string]string{"Mcp-Protocol-Version": "2025-03-26"}, body)
	if status != http.StatusOK || strings.Count(answer, `"result"`) != 2 {
		t.Errorf("batch answer %d %q, want 200 with two results", status, answer)
	}
	want := wire.MCPCounts{Calls: map[string]int{ToolCommitWrite: 2}, Writes: 2}
	if diff := cmp.Diff(want, s.Counts(tok), ignoreProtocols); diff != "" {
		t.Errorf("Counts (-want +got):\n%s", diff)
	}
}

// TestConcurrentTokensIsolated runs many runs at once against one ledger,
// each with its own token and faults, over shared and separate sessions:
// counts and events never mix, and one token's `once` is not another's.
func TestConcurrentTokensIsolated(t *testing.T) {
	for _, stateless := range []bool{false, true} {
		t.Run(fmt.Sprintf("stateless=%v", stateless), func(t *testing.T) {
			cfg := fileLedger(t)
			cfg.Stateless = stateless
			s, url := newLedger(t, cfg)
			const runs, calls = 12, 10
			shared := connect(t, url, "")
			var wg sync.WaitGroup
			errs := make(chan error, runs*calls)
			for i := range runs {
				tok := fmt.Sprintf("rc%010d", i)
				mustArm(t, s, tok,
					"{tool: commit_write, is_error: {}, times: once}",
					"{tool: commit_write, drop_after_execute: {}, times: {nth: 3}}")
				cs := shared
				if i%2 == 1 {
					cs = connect(t, url, "")
				}
				wg.Add(1)
				go func() {
					defer wg.Done()
					for j := range calls {
						res, err := callTool(t, cs, ToolCommitWrite, map[string]any{"entry": fmt.Sprintf("%s #%d", tok, j)})
						wantDrop, wantIsError := j == 2, j == 0
						switch {
						case wantDrop && err == nil:
							errs <- fmt.Errorf("%s call %d: no error, want the dropped connection's", tok, j)
						case !wantDrop && err != nil:
							errs <- fmt.Errorf("%s call %d: %v", tok, j, err)
						case err == nil && res.IsError != wantIsError:
							errs <- fmt.Errorf("%s call %d: IsError = %v, want %v", tok, j, res.IsError, wantIsError)
						}
					}
				}()
			}
			wg.Wait()
			close(errs)
			for err := range errs {
				t.Error(err)
			}
			want := wire.MCPCounts{Calls: map[string]int{ToolCommitWrite: calls}, Writes: calls - 1}
			for i := range runs {
				tok := fmt.Sprintf("rc%010d", i)
				if diff := cmp.Diff(want, s.Counts(tok), ignoreProtocols); diff != "" {
					t.Errorf("Counts(%s) (-want +got):\n%s", tok, diff)
				}
				for _, e := range s.Events(tok) {
					if e.Token != tok || (e.Entry != "" && !strings.HasPrefix(e.Entry, tok)) {
						t.Errorf("Events(%s) holds %+v", tok, e)
					}
				}
			}
			total := wire.MCPCounts{Calls: map[string]int{ToolCommitWrite: runs * calls}, Writes: runs * (calls - 1)}
			// Session messages (initialize, tools/list…) vary with the SDK.
			if diff := cmp.Diff(total, s.Total(), ignoreMessages, ignoreProtocols); diff != "" {
				t.Errorf("Total (-want +got):\n%s", diff)
			}
			if got := len(fileLines(t, cfg.Path)); got != total.Writes {
				t.Errorf("file lines = %d, want %d", got, total.Writes)
			}
		})
	}
}

// TestManyConcurrentWrites: 2,000 commit_write calls from 32 concurrent
// clients give exactly 2,000 writes, 2,000 distinct entries and 2,000 file lines.
func TestManyConcurrentWrites(t *testing.T) {
	const clients, total = 32, 2000
	cfg := fileLedger(t)
	s, url := newLedger(t, cfg)
	sessions := make([]*mcpClientSession, clients)
	for i := range sessions {
		sessions[i] = connect(t, url, "")
	}
	var wg sync.WaitGroup
	errs := make(chan error, total)
	for i := range clients {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for n := i; n < total; n += clients {
				res, err := callTool(t, sessions[i], ToolCommitWrite, map[string]any{"entry": fmt.Sprintf("entry %04d", n)})
				if err != nil || res.IsError {
					errs <- fmt.Errorf("call %d: %v, %+v", n, err, res)
				}
			}
		}()
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Error(err)
	}
	if got := s.Total(); got.Writes != total || got.Calls[ToolCommitWrite] != total {
		t.Errorf("Total = %+v, want %d calls and writes", got, total)
	}
	lines := fileLines(t, cfg.Path)
	if len(lines) != total {
		t.Errorf("file has %d lines, want %d", len(lines), total)
	}
	seen := map[string]bool{}
	for _, l := range lines {
		seen[l] = true
	}
	if len(seen) != total {
		t.Errorf("file has %d distinct lines, want %d", len(seen), total)
	}
	if diff := cmp.Diff(lines, s.Entries()); diff != "" {
		t.Errorf("Entries differ from the file (-file +entries):\n%s", diff)
	}
}

// TestSDKMethodsAreKnownToSDK checks the wrapper's list of SDK methods
// against the SDK itself: none of them gets the SDK's "unsupported" refusal,
// which an unlisted method does.
func TestSDKMethodsAreKnownToSDK(t *testing.T) {
	_, url := newLedger(t, Config{Stateless: true})
	h := map[string]string{"Mcp-Protocol-Version": "2025-06-18"}
	for _, m := range sdkMethods() {
		body := fmt.Sprintf(`{"jsonrpc":"2.0","id":1,"method":%q,"params":{}}`, m)
		if strings.HasPrefix(m, "notifications/") {
			body = fmt.Sprintf(`{"jsonrpc":"2.0","method":%q,"params":{}}`, m)
		}
		if _, answer, _ := postRaw(t, url, h, body); strings.Contains(answer, "unsupported") {
			t.Errorf("the SDK does not know %s: %q", m, answer)
		}
	}
	// The check can fail: the SDK alone refuses an unlisted method so.
	sdk := mcp.NewStreamableHTTPHandler(func(*http.Request) *mcp.Server {
		return mcp.NewServer(&mcp.Implementation{Name: "bare", Version: "1"}, nil)
	}, &mcp.StreamableHTTPOptions{Stateless: true})
	ts := httptest.NewServer(sdk)
	defer ts.Close()
	if _, answer, _ := postRaw(t, ts.URL, h, `{"jsonrpc":"2.0","id":1,"method":"rpc.discover","params":{}}`); !strings.Contains(answer, "unsupported") {
		t.Errorf("bare SDK answer to an unknown method = %q, want its \"unsupported\" refusal", answer)
	}
}

// TestCloseEndsStreams: a client's session keeps its standalone SSE stream
// (a GET) open; closing the ledger ends it, so an HTTP server shut down after
// the ledger does not wait for the client to go.
func TestCloseEndsStreams(t *testing.T) {
	s, err := New(Config{})
	if err != nil {
		t.Fatal(err)
	}
	mux := http.NewServeMux()
	mux.Handle("/mcp", s)
	ts := httptest.NewServer(mux)
	cs := connect(t, ts.URL+"/mcp", "2025-11-25") // a protocol with the GET stream
	if _, err := callTool(t, cs, ToolReadLedger, nil); err != nil {
		t.Fatal(err)
	}
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
	closed := make(chan struct{})
	go func() {
		ts.Close() // waits for every request in progress
		close(closed)
	}()
	select {
	case <-closed:
	case <-time.After(testTimeout):
		cs.Close() // ends the stream from the client's side, so ts.Close returns
		t.Fatalf("the HTTP server was still waiting for a request %s after the ledger closed", testTimeout)
	}
}
