package gateway

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/replaycheck/replaycheck/fakes/ledger"
	"github.com/replaycheck/replaycheck/fakes/upstream"
	"github.com/replaycheck/replaycheck/internal/runtoken"
)

func TestParseBugs(t *testing.T) {
	all := Bugs{}
	var names []string
	for _, info := range AllBugs() {
		all[info.Bug] = true
		names = append(names, string(info.Bug))
	}
	tests := []struct {
		name    string
		mode    string
		names   []string
		want    Bugs
		wantErr string
	}{
		{name: "guarded", mode: "guarded", want: Bugs{}},
		{name: "empty mode is guarded", mode: "", want: Bugs{}},
		{name: "naive", mode: "naive", want: all},
		{name: "single switches", mode: "guarded", names: []string{"stream-splice", "retry-everything"}, want: Bugs{StreamSplice: true, RetryEverything: true}},
		{name: "unknown mode", mode: "careless", wantErr: `unknown gateway mode "careless": want naive or guarded`},
		{name: "unknown bug lists valid names", mode: "guarded", names: []string{"replay"}, wantErr: `unknown gateway bug "replay": valid names are ` + strings.Join(names, ", ")},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := ParseBugs(tt.mode, tt.names)
			if tt.wantErr != "" {
				if err == nil || err.Error() != tt.wantErr {
					t.Fatalf("err = %v, want %q", err, tt.wantErr)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if diff := cmp.Diff(tt.want, got); diff != "" {
				t.Errorf("(-want +got):\n%s", diff)
			}
		})
	}
	if got := (Bugs{FreshKeyPerAttempt: true, ReplayAfterDispatch: true}).String(); got != "replay-after-dispatch,fresh-key-per-attempt" {
		t.Errorf("String = %q", got)
	}
}

func TestNewRejectsBadConfig(t *testing.T) {
	tests := []struct {
		name string
		cfg  Config
		want string
	}{
		{"no upstream", Config{MCP: "http://127.0.0.1:1/mcp"}, "upstream URL is required"},
		{"no mcp", Config{Upstream: "http://127.0.0.1:1/v1"}, "mcp URL is required"},
		{"bad scheme", Config{Upstream: "ftp://x/v1", MCP: "http://127.0.0.1:1/mcp"}, `upstream URL "ftp://x/v1"`},
		{"bad label", Config{Upstream: "http://127.0.0.1:1/v1", MCP: "http://127.0.0.1:1/mcp", ServerLabel: "a-b"}, "server label"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, err := New(tt.cfg)
			if err == nil || !strings.Contains(err.Error(), tt.want) {
				t.Fatalf("err = %v, want it to contain %q", err, tt.want)
			}
		})
	}
}

// TestAppErrors checks the gateway's own answers: master key, malformed
// bodies, unknown endpoints and methods. Nothing reaches the fakes.
func TestAppErrors(t *testing.T) {
	r := newRig(t, nil, nil)
	chat := seedBody(pathChat, seedAsk, false, false)
	tests := []struct {
		name       string
		method     string
		path       string
		key        string
		body       string
		wantStatus int
		wantMsg    string
	}{
		{"no key", "POST", pathChat, "", chat, 401, "Authentication Error"},
		{"wrong key", "POST", pathChat, "sk-wrong", chat, 401, "Authentication Error"},
		{"malformed body", "POST", pathChat, seedKey, `{"model":`, 400, "request body is not a JSON object"},
		{"not an object", "POST", pathResponses, seedKey, `[1,2]`, 400, "request body is not a JSON object"},
		{"no model", "POST", pathChat, seedKey, `{"messages":[{"role":"user","content":"hi"}]}`, 400, "model is required"},
		{"no messages", "POST", pathChat, seedKey, `{"model":"m"}`, 400, "messages is required"},
		{"no input", "POST", pathResponses, seedKey, `{"model":"m"}`, 400, "input is required"},
		{"unknown guardrail", "POST", pathChat, seedKey, `{"model":"m","messages":[{"role":"user","content":"x"}],"guardrails":["nope"]}`, 400, `unknown guardrail "nope"`},
		{"unknown server label", "POST", pathChat, seedKey, `{"model":"m","messages":[{"role":"user","content":"x"}],"tools":[{"type":"mcp","server_label":"other"}]}`, 400, `unknown MCP server_label "other"`},
		{"approval required", "POST", pathChat, seedKey, `{"model":"m","messages":[{"role":"user","content":"x"}],"tools":[{"type":"mcp","server_label":"ledger","require_approval":"always"}]}`, 400, "require_approval"},
		{"unknown endpoint", "POST", "/v1/embeddings", seedKey, chat, 404, "unknown endpoint /v1/embeddings"},
		{"wrong method", "GET", pathChat, seedKey, "", 405, "GET is not allowed"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			req, err := http.NewRequest(tt.method, r.url+tt.path, strings.NewReader(tt.body))
			if err != nil {
				t.Fatal(err)
			}
			if tt.key != "" {
				req.Header.Set("Authorization", "Bearer "+tt.key)
			}
			resp, err := r.client.Do(req)
			if err != nil {
				t.Fatal(err)
			}
			defer resp.Body.Close()
			var body json.RawMessage
			if err := json.NewDecoder(resp.Body).Decode(&body); err != nil {
				t.Fatalf("decoding the answer: %v", err)
			}
			if resp.StatusCode != tt.wantStatus {
				t.Errorf("status = %d, want %d; body %s", resp.StatusCode, tt.wantStatus, body)
			}
			if msg, _ := errorOf(t, body); !strings.Contains(msg, tt.wantMsg) {
				t.Errorf("message %q does not contain %q", msg, tt.wantMsg)
			}
		})
	}
	if got := r.upstream.Total(); got.Initial+got.FollowUp != 0 {
		t.Errorf("the upstream saw %+v, want nothing", got)
	}
	if got := r.ledger.Total().CallsTotal(); got != 0 {
		t.Errorf("the ledger saw %d calls, want 0", got)
	}
}

// TestAnswerShapes checks each endpoint's success answer.
func TestAnswerShapes(t *testing.T) {
	r := newRig(t, nil, nil)
	_, chat := r.post(pathChat, seedBody(pathChat, seedAsk, false, false))
	var cc struct {
		Object  string `json:"object"`
		Choices []struct {
			Message struct{ Content string } `json:"message"`
		} `json:"choices"`
	}
	if err := json.Unmarshal(chat, &cc); err != nil || cc.Object != "chat.completion" || len(cc.Choices) != 1 || cc.Choices[0].Message.Content != "done" {
		t.Errorf("chat answer %s (err %v)", chat, err)
	}
	_, resp := r.post(pathResponses, seedBody(pathResponses, seedAsk, false, false))
	var ro struct {
		Object string `json:"object"`
	}
	if err := json.Unmarshal(resp, &ro); err != nil || ro.Object != "response" {
		t.Errorf("responses answer %s (err %v)", resp, err)
	}
	_, msg := r.post(pathMessages, seedBody(pathMessages, seedAsk, false, false))
	var am struct {
		Type       string `json:"type"`
		Role       string `json:"role"`
		Model      string `json:"model"`
		StopReason string `json:"stop_reason"`
		Content    []struct {
			Type string `json:"type"`
			Text string `json:"text"`
		} `json:"content"`
	}
	if err := json.Unmarshal(msg, &am); err != nil {
		t.Fatal(err)
	}
	want := `{message assistant repro-model end_turn [{text done}]}`
	if got := fmt.Sprint(am); got != want {
		t.Errorf("messages answer = %s, want %s; body %s", got, want, msg)
	}
}

// TestConcurrentRequestsExactCounts sends many requests at once, half of
// them with a failing follow-up, and checks every run's counts exactly.
func TestConcurrentRequestsExactCounts(t *testing.T) {
	for _, mode := range []string{ModeGuarded, ModeNaive} {
		t.Run(mode, func(t *testing.T) {
			r := newRig(t, mustBugs(t, mode), nil)
			const n = 24
			paths := []string{pathChat, pathResponses, pathMessages}
			type result struct {
				status int
				err    string
			}
			results := make([]result, n)
			tokens := make([]string, n)
			for i := range n {
				tokens[i] = runtoken.Derive(t.Name(), fmt.Sprint(i))
				if i%2 == 1 {
					if err := r.upstream.Arm(tokens[i], nil, []upstream.Fault{followUp500()}); err != nil {
						t.Fatal(err)
					}
				}
			}
			var wg sync.WaitGroup
			for i := range n {
				wg.Go(func() {
					path := paths[i%len(paths)]
					ask := fmt.Sprintf("Call the commit_write tool exactly once with entry alpha-%s, then reply done.", tokens[i])
					status, body := r.post(path, seedBody(path, ask, false, false))
					results[i] = result{status: status}
					if status != 200 && status != 500 {
						results[i].err = string(body)
					}
				})
			}
			wg.Wait()
			if err := r.gw.Close(); err != nil {
				t.Fatal(err)
			}
			for i := range n {
				wantStatus, wantRuns := 200, 1
				if i%2 == 1 {
					wantStatus = 500
					if mode == ModeNaive {
						wantRuns = 3
					}
				}
				if results[i].status != wantStatus {
					t.Errorf("request %d: status %d, want %d (%s)", i, results[i].status, wantStatus, results[i].err)
				}
				if got := r.ledger.Counts(tokens[i]).Writes; got != wantRuns {
					t.Errorf("request %d: writes %d, want %d", i, got, wantRuns)
				}
				u := r.upstream.Counts(tokens[i])
				if u.Initial != wantRuns || u.FollowUp != wantRuns {
					t.Errorf("request %d: upstream initial %d follow-up %d, want %d each", i, u.Initial, u.FollowUp, wantRuns)
				}
			}
		})
	}
}

// TestIdempotencyKeyCarriesRunToken checks the key the gateway mints: one
// per request and tool call, with the run token, so the ledger attributes it.
func TestIdempotencyKeyCarriesRunToken(t *testing.T) {
	r := newRig(t, nil, nil)
	script := upstream.Script{Steps: []upstream.Step{{Call: "commit_write_keyed", Arguments: map[string]any{"entry": "{{entry}}"}}, {Say: "done"}}}
	tok := runtoken.Derive(t.Name())
	if err := r.upstream.Arm(tok, &script, nil); err != nil {
		t.Fatal(err)
	}
	ask := fmt.Sprintf("Call the commit_write_keyed tool exactly once with entry alpha-%s, then reply done.", tok)
	if status, body := r.post(pathChat, seedBody(pathChat, ask, false, false)); status != 200 {
		t.Fatalf("status %d: %s", status, body)
	}
	var keys []string
	for _, ev := range r.ledger.Events(tok) {
		if ev.Key != "" && !slices.Contains(keys, ev.Key) {
			keys = append(keys, ev.Key)
		}
	}
	if want := []string{tok + "-" + r.gw.instance + "-r1-c1"}; !cmp.Equal(want, keys) {
		t.Errorf("keys = %v, want %v", keys, want)
	}
}

// TestBackoffHonoursRetryAfter checks the guarded router's waits with a
// recorded sleep: Retry-After seconds and retry-after-ms are the minimum
// wait, computed waits stay within the cap, and retry-everything ignores
// Retry-After.
func TestBackoffHonoursRetryAfter(t *testing.T) {
	tests := []struct {
		name      string
		bugs      Bugs
		status    int
		headers   map[string]string
		wantCalls int
		wantMin   time.Duration
		wantMax   time.Duration
	}{
		{"400 stops at once", nil, 400, nil, 1, 0, 0},
		{"401 stops at once", nil, 401, nil, 1, 0, 0},
		{"403 stops at once", nil, 403, nil, 1, 0, 0},
		{"404 stops at once", nil, 404, nil, 1, 0, 0},
		{"422 stops at once", nil, 422, nil, 1, 0, 0},
		{"501 stops at once", nil, 501, nil, 1, 0, 0},
		{"429 retries", nil, 429, nil, 3, DefaultBackoffBase / 2, DefaultBackoffCap},
		{"500 retries", nil, 500, nil, 3, DefaultBackoffBase / 2, DefaultBackoffCap},
		{"502 retries", nil, 502, nil, 3, DefaultBackoffBase / 2, DefaultBackoffCap},
		{"504 retries", nil, 504, nil, 3, DefaultBackoffBase / 2, DefaultBackoffCap},
		{"529 retries", nil, 529, nil, 3, DefaultBackoffBase / 2, DefaultBackoffCap},
		{"Retry-After within the budget over two waits", nil, 429, map[string]string{"Retry-After": "1"}, 3, time.Second, time.Second},
		{"a wait past the budget on the second retry stops", nil, 429, map[string]string{"retry-after-ms": "1500"}, 2, 1500 * time.Millisecond, 1500 * time.Millisecond},
		{"Retry-After date in the past: backoff", nil, 503, map[string]string{"Retry-After": "Sun, 29 Nov 2026 23:59:00 GMT"}, 3, DefaultBackoffBase / 2, DefaultBackoffCap},
		{"unreadable Retry-After: backoff", nil, 503, map[string]string{"Retry-After": "soon"}, 3, DefaultBackoffBase / 2, DefaultBackoffCap},
		{"retry-everything retries a 404", Bugs{RetryEverything: true}, 404, nil, 3, DefaultBackoffBase / 2, DefaultBackoffCap},
		{"retry-everything ignores x-should-retry: false", Bugs{RetryEverything: true}, 503, map[string]string{"x-should-retry": "false"}, 3, DefaultBackoffBase / 2, DefaultBackoffCap},
		{"x-should-retry: true retries a 400", nil, 400, map[string]string{"x-should-retry": "true"}, 3, DefaultBackoffBase / 2, DefaultBackoffCap},
		{"x-should-retry: false stops a 503", nil, 503, map[string]string{"x-should-retry": "false"}, 1, 0, 0},
		{"408 retries", nil, 408, nil, 3, DefaultBackoffBase / 2, DefaultBackoffCap},
		{"no header: capped backoff", nil, 503, nil, 3, DefaultBackoffBase / 2, DefaultBackoffCap},
		{"Retry-After seconds", nil, 503, map[string]string{"Retry-After": "1"}, 3, time.Second, time.Second},
		{"retry-after-ms wins", nil, 503, map[string]string{"Retry-After": "1", "retry-after-ms": "250"}, 3, 250 * time.Millisecond, 250 * time.Millisecond},
		{"Retry-After as a date", nil, 503, map[string]string{"Retry-After": "Mon, 30 Nov 2026 00:00:01 GMT"}, 3, time.Second, time.Second},
		{"over budget stops", nil, 503, map[string]string{"Retry-After": "3"}, 1, 0, 0},
		{"retry-everything ignores Retry-After", Bugs{RetryEverything: true}, 503, map[string]string{"Retry-After": "3"}, 3, DefaultBackoffBase / 2, DefaultBackoffCap},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var mu sync.Mutex
			calls := 0
			up := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
				mu.Lock()
				calls++
				mu.Unlock()
				for k, v := range tt.headers {
					w.Header().Set(k, v)
				}
				w.WriteHeader(tt.status)
				fmt.Fprint(w, `{"error":{"message":"overloaded","type":"server_error"}}`)
			}))
			t.Cleanup(up.Close)
			g, err := New(Config{Upstream: up.URL + "/v1", MCP: "http://127.0.0.1:1/mcp", Bugs: tt.bugs})
			if err != nil {
				t.Fatal(err)
			}
			t.Cleanup(func() { g.Close() })
			var waits []time.Duration
			g.sleep = func(_ context.Context, d time.Duration) error { waits = append(waits, d); return nil }
			g.now = func() time.Time { return time.Date(2026, 11, 30, 0, 0, 0, 0, time.UTC) }
			w := httptest.NewRecorder()
			g.ServeHTTP(w, httptest.NewRequest("POST", pathChat, strings.NewReader(`{"model":"m","messages":[{"role":"user","content":"hi"}]}`)))
			if w.Code != tt.status {
				t.Errorf("status = %d, want %d", w.Code, tt.status)
			}
			if calls != tt.wantCalls {
				t.Errorf("upstream calls = %d, want %d", calls, tt.wantCalls)
			}
			if len(waits) != tt.wantCalls-1 {
				t.Fatalf("waits = %v, want %d", waits, tt.wantCalls-1)
			}
			for _, d := range waits {
				if d < tt.wantMin || d > tt.wantMax {
					t.Errorf("wait %v outside [%v, %v]", d, tt.wantMin, tt.wantMax)
				}
			}
		})
	}
}

// TestMCPUnreachable checks that an unreachable MCP server fails the
// attempt before any dispatch (retried), with a 502 naming the server.
func TestMCPUnreachable(t *testing.T) {
	up, err := upstream.New(upstream.Config{})
	if err != nil {
		t.Fatal(err)
	}
	upSrv := httptest.NewServer(up)
	t.Cleanup(upSrv.Close)
	dead := httptest.NewServer(http.NotFoundHandler())
	deadURL := dead.URL + "/mcp"
	dead.Close()
	g, err := New(Config{Upstream: upSrv.URL + "/v1", MCP: deadURL, ToolTimeout: 2 * time.Second})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { g.Close() })
	w := httptest.NewRecorder()
	g.ServeHTTP(w, httptest.NewRequest("POST", pathChat, strings.NewReader(seedBody(pathChat, seedAsk, false, false))))
	if w.Code != http.StatusBadGateway {
		t.Errorf("status = %d, want 502; body %s", w.Code, w.Body)
	}
	if msg, _ := errorOf(t, w.Body.Bytes()); !strings.Contains(msg, "MCP server 'ledger' did not list its tools") {
		t.Errorf("message = %q", msg)
	}
	if got := up.Total(); got.Initial != 0 {
		t.Errorf("upstream initial = %d, want 0 (the tools are listed first)", got.Initial)
	}
}

// BenchmarkChatRequest measures one non-streamed chat request through the
// gateway and the fakes (initial model call, commit_write, follow-up) side by
// side with the reference: the round trips the gateway must make, made
// straight by a client — the same two model calls to the upstream fake (the
// bodies the gateway sent, recorded on a first request, so both offer the
// model the ledger's three tools) and one tools/call on an open MCP session
// to the ledger. Each iteration runs both, so the ratio compares them under
// the same load; ns/op is their sum.
func BenchmarkChatRequest(b *testing.B) {
	r := newBenchRig(b)
	client := &http.Client{Transport: &http.Transport{MaxIdleConnsPerHost: 16}}
	post := func(url, body string) {
		req, _ := http.NewRequest(http.MethodPost, url, strings.NewReader(body))
		req.Header.Set("Authorization", "Bearer "+seedKey)
		resp, err := client.Do(req)
		if err != nil {
			b.Fatal(err)
		}
		_, _ = io.Copy(io.Discard, resp.Body)
		resp.Body.Close()
		if resp.StatusCode != http.StatusOK {
			b.Fatalf("POST %s: %d", url, resp.StatusCode)
		}
	}
	ctx := context.Background()
	cs, err := mcp.NewClient(&mcp.Implementation{Name: "bench-reference", Version: "1"}, nil).Connect(ctx,
		&mcp.StreamableClientTransport{Endpoint: r.mcpURL, HTTPClient: client, MaxRetries: -1, DisableStandaloneSSE: true}, nil)
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() { cs.Close() })
	body := seedBody(pathChat, seedAsk, false, false)
	gateway := func() { post(r.url+pathChat, body) }
	r.model.record(true)
	gateway() // warms the gateway's connections and MCP session
	sent := r.model.record(false)
	if len(sent) != 2 {
		b.Fatalf("the gateway made %d model calls, want 2", len(sent))
	}
	initial, follow := sent[0], sent[1]
	reference := func() {
		post(r.upstreamURL+"/chat/completions", initial)
		res, err := cs.CallTool(ctx, &mcp.CallToolParams{Name: "commit_write", Arguments: map[string]any{"entry": "alpha"}})
		if err != nil || res.IsError {
			b.Fatalf("reference tools/call: %v %+v", err, res)
		}
		post(r.upstreamURL+"/chat/completions", follow)
	}
	reference() // warms the reference's connections
	var ref, gw time.Duration
	for b.Loop() {
		t0 := time.Now()
		reference()
		t1 := time.Now()
		gateway()
		gw += time.Since(t1)
		ref += t1.Sub(t0)
	}
	n := float64(b.N)
	b.ReportMetric(float64(ref.Microseconds())/n, "µs/reference")
	b.ReportMetric(float64(gw.Microseconds())/n, "µs/gateway")
	b.ReportMetric(float64(gw)/float64(ref), "gateway/reference")
}

type benchRig struct {
	url         string
	upstreamURL string
	mcpURL      string
	model       *bodyRecorder
}

// bodyRecorder is an http.Handler in front of the upstream fake that keeps
// the bodies of the requests it passes on while recording.
type bodyRecorder struct {
	next http.Handler

	mu     sync.Mutex
	on     bool
	bodies []string
}

func (rec *bodyRecorder) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	rec.mu.Lock()
	on := rec.on
	rec.mu.Unlock()
	if on {
		body, _ := io.ReadAll(r.Body)
		r.Body = io.NopCloser(bytes.NewReader(body))
		rec.mu.Lock()
		rec.bodies = append(rec.bodies, string(body))
		rec.mu.Unlock()
	}
	rec.next.ServeHTTP(w, r)
}

// record turns recording on or off and returns what was recorded since it
// was last turned on.
func (rec *bodyRecorder) record(on bool) []string {
	rec.mu.Lock()
	defer rec.mu.Unlock()
	got := rec.bodies
	rec.on, rec.bodies = on, nil
	return got
}

func newBenchRig(b *testing.B) *benchRig {
	b.Helper()
	l, err := ledger.New(sessionLedger)
	if err != nil {
		b.Fatal(err)
	}
	mux := http.NewServeMux()
	mux.Handle("/mcp", l)
	ls := httptest.NewServer(mux)
	up, err := upstream.New(upstream.Config{})
	if err != nil {
		b.Fatal(err)
	}
	model := &bodyRecorder{next: up}
	us := httptest.NewServer(model)
	g, err := New(Config{Upstream: us.URL + "/v1", MCP: ls.URL + "/mcp", MasterKey: seedKey,
		HTTPClient: &http.Client{Transport: &http.Transport{MaxIdleConnsPerHost: 16}}})
	if err != nil {
		b.Fatal(err)
	}
	gs := httptest.NewServer(g)
	b.Cleanup(func() {
		gs.Close()
		g.Close()
		us.Close()
		ls.Close()
		l.Close()
	})
	return &benchRig{url: gs.URL, upstreamURL: us.URL + "/v1", mcpURL: ls.URL + "/mcp", model: model}
}

// TestChatStreamBounded: a streamed chat answer longer than maxUpstreamBody
// is cut off with an error event instead of being read (and its text kept)
// without end.
func TestChatStreamBounded(t *testing.T) {
	chunk := `data: {"choices":[{"delta":{"content":"` + strings.Repeat("x", 1<<20) + `"}}]}` + "\n\n"
	up := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "text/event-stream")
		for range maxUpstreamBody/(1<<20) + 4 {
			if _, err := io.WriteString(w, chunk); err != nil {
				return
			}
		}
	}))
	t.Cleanup(up.Close)
	g, err := New(Config{Upstream: up.URL + "/v1", MCP: "http://127.0.0.1:1/mcp"})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { g.Close() })
	w := httptest.NewRecorder()
	g.ServeHTTP(w, httptest.NewRequest("POST", pathChat, strings.NewReader(`{"model":"m","stream":true,"messages":[{"role":"user","content":"hi"}]}`)))
	errLines := grepLines(w.Body.Bytes(), `data: {"error"`)
	if len(errLines) != 1 {
		t.Fatalf("error events = %d, want 1", len(errLines))
	}
	if want := fmt.Sprintf("exceeds %d bytes", maxUpstreamBody); !strings.Contains(errLines[0], want) {
		t.Errorf("error event %.300s lacks %q", errLines[0], want)
	}
}
