package upstream

import (
	"context"
	"encoding/json"
	"errors"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/replaycheck/replaycheck/internal/syncbuf"
	"github.com/replaycheck/replaycheck/internal/wire"

	"github.com/jarcoal/httpmock"
	"github.com/openai/openai-go/v3"

	"github.com/anthropics/anthropic-sdk-go/v2"
)

const provider = "https://api.provider.test"

// providerAnswer renders what a scripted fake answers to body on path, so
// the mocked provider speaks each dialect exactly.
func providerAnswer(t *testing.T, path, body string) (string, string) {
	t.Helper()
	_, srv, _ := newFake(t, Config{})
	resp, err := http.Post(srv.URL+path, "application/json", strings.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	if err != nil {
		t.Fatal(err)
	}
	return string(b), resp.Header.Get("Content-Type")
}

// relayFake starts a relaying fake whose provider is the mock transport.
func relayFake(t *testing.T, mt *httpmock.MockTransport) (*Server, string, *syncbuf.Buffer) {
	t.Helper()
	s, srv, log := newFake(t, Config{Relay: provider, Client: &http.Client{Transport: mt}})
	return s, srv.URL, log
}

// stubProvider answers path like the scripted fake, checking that the
// caller's credentials and body arrived; seen receives each body.
func stubProvider(t *testing.T, mt *httpmock.MockTransport, path, header, want string) {
	mt.RegisterResponder("POST", provider+path, func(req *http.Request) (*http.Response, error) {
		if got := req.Header.Get(header); got != want {
			t.Errorf("provider got %s %q, want %q", header, got, want)
		}
		b, err := io.ReadAll(req.Body)
		if err != nil {
			return nil, err
		}
		out, ct := providerAnswer(t, path, string(b))
		resp := httpmock.NewStringResponse(http.StatusOK, out)
		resp.Header.Set("Content-Type", ct)
		resp.Header.Set("X-Request-Id", "req_provider")
		return resp, nil
	})
}

// checkStubs fails unless each stub was called exactly as often as wanted.
func checkStubs(t *testing.T, mt *httpmock.MockTransport, want map[string]int) {
	t.Helper()
	got, w := map[string]int{}, map[string]int{}
	for k, n := range mt.GetCallCountInfo() {
		if n > 0 {
			got[k] = n
		}
	}
	for k, n := range want {
		if n > 0 {
			w[k] = n
		}
	}
	diff(t, "provider calls", w, got)
}

func TestRelay(t *testing.T) {
	const secret = "sk-relay-secret-123"
	mt := httpmock.NewMockTransport()
	stubProvider(t, mt, "/v1/chat/completions", "Authorization", "Bearer "+secret)
	stubProvider(t, mt, "/v1/responses", "Authorization", "Bearer "+secret)
	stubProvider(t, mt, "/v1/messages", "X-Api-Key", secret)
	s, url, log := relayFake(t, mt)
	tok := token(t)
	ctx := context.Background()
	oc := openai.NewClient(openaiOpts(url, secret)...)
	ac := anthropic.NewClient(append(anthropicOpts(url, secret), anthropicHeader("x-api-key", secret))...)

	resp, err := oc.Chat.Completions.New(ctx, chatParams(tok, "commit_write"))
	if err != nil {
		t.Fatalf("chat: %v", err)
	}
	diff(t, "chat tool", "commit_write", resp.Choices[0].Message.ToolCalls[0].Function.Name)

	stream := oc.Chat.Completions.NewStreaming(ctx, chatParams(tok, "commit_write"))
	var acc openai.ChatCompletionAccumulator
	for stream.Next() {
		acc.AddChunk(stream.Current())
	}
	if err := stream.Err(); err != nil {
		t.Fatalf("chat stream: %v", err)
	}
	diff(t, "streamed arguments", `{"entry":"alpha-`+tok+`"}`, acc.Choices[0].Message.ToolCalls[0].Function.Arguments)

	r, err := oc.Responses.New(ctx, responsesParams(tok, functionTool("commit_write")))
	if err != nil {
		t.Fatalf("responses: %v", err)
	}
	diff(t, "responses call", "commit_write", r.Output[0].AsFunctionCall().Name)

	m, err := ac.Messages.New(ctx, messagesParams(tok, "commit_write"))
	if err != nil {
		t.Fatalf("messages: %v", err)
	}
	diff(t, "messages tool", "commit_write", m.Content[0].AsToolUse().Name)

	checkStubs(t, mt, map[string]int{
		"POST " + provider + "/v1/chat/completions": 2,
		"POST " + provider + "/v1/responses":        1,
		"POST " + provider + "/v1/messages":         1,
	})
	diff(t, "log", "/v1/chat/completions initial forwarded\n/v1/chat/completions initial forwarded\n/v1/responses initial forwarded\n/v1/messages initial forwarded\n", log.String())
	recs, _ := json.Marshal(s.Requests(tok))
	if strings.Contains(log.String()+string(recs), secret) {
		t.Errorf("credentials leaked into the log or records")
	}
}

func openaiOpts(url, key string) []openaiOption {
	return []openaiOption{openaiBaseURL(url + "/v1"), openaiKey(key), openaiRetries(0)}
}

func anthropicOpts(url, key string) []anthropicOption {
	return []anthropicOption{anthropicBaseURL(url + "/"), anthropicKey(key), anthropicRetries(0)}
}

// relayBranch is one way the relay reaches its provider: through a
// configured client over httpmock, or through the client users get (New
// without Config.Client) to a real provider on loopback. Both providers
// answer /v1/chat/completions as the scripted fake does and check the
// caller's key ("Bearer sk").
type relayBranch struct {
	name string
	// start returns the relay's config and the count of chat calls the
	// provider got.
	start func(t *testing.T) (Config, func() int)
}

var relayBranches = []relayBranch{
	{"httpmock", func(t *testing.T) (Config, func() int) {
		mt := httpmock.NewMockTransport()
		stubProvider(t, mt, "/v1/chat/completions", "Authorization", "Bearer sk")
		calls := func() int { return mt.GetCallCountInfo()["POST "+provider+"/v1/chat/completions"] }
		return Config{Relay: provider, Client: &http.Client{Transport: mt}}, calls
	}},
	{"default client", func(t *testing.T) (Config, func() int) {
		backend, calls := realProvider(t, "Bearer sk")
		return Config{Relay: backend.URL}, func() int { return int(calls.Load()) }
	}},
}

// realProvider is a provider on loopback that is itself a scripted fake (as
// providerAnswer); it counts model calls and checks each carries
// Authorization want.
func realProvider(t *testing.T, want string) (*httptest.Server, *atomic.Int64) {
	t.Helper()
	inner, err := New(Config{Clock: fixedClock})
	if err != nil {
		t.Fatal(err)
	}
	var calls atomic.Int64
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		calls.Add(1)
		if got := r.Header.Get("Authorization"); got != want {
			t.Errorf("provider got Authorization %q, want %q", got, want)
		}
		inner.ServeHTTP(w, r)
	}))
	t.Cleanup(srv.Close)
	return srv, &calls
}

// Faults apply before relaying: an injected status never reaches the
// provider; a drop after the headers, as forwarder.py's drop_stream, does not
// either; the other drops cut the relayed stream. Each case runs on both
// relay branches.
func TestRelayFaults(t *testing.T) {
	tests := []struct {
		name       string
		fault      string
		stream     bool
		wantCalls  int
		wantEvents int
		wantLog    string
		wantFired  int
		wantLinger time.Duration // the linger the cut waited, 0 = none
	}{
		{"respond", "{respond: {status: 503}}", false, 0, 0, "initial injected_503", 1, 0},
		{"drop headers", "{drop: {after: headers}}", true, 0, 0, "initial dropped_stream", 1, 0},
		{"drop events", "{drop: {after: events, events: 3}}", true, 1, 3, "initial dropped_stream", 1, 0},
		{"drop tool_call", "{drop: {after: tool_call}}", true, 1, 6, "initial dropped_stream", 1, 0},
		{"drop headers linger", "{drop: {after: headers, linger: 2s}}", true, 0, 0, "initial dropped_stream", 1, 2 * time.Second},
		{"drop events linger", "{drop: {after: events, events: 3, linger: 3s}}", true, 1, 3, "initial dropped_stream", 1, 3 * time.Second},
		{"drop tool_call linger", "{drop: {after: tool_call, linger: 4s}}", true, 1, 6, "initial dropped_stream", 1, 4 * time.Second},
		{"events beyond the stream", "{drop: {after: events, events: 50, linger: 5s}}", true, 1, 7, "initial forwarded", 0, 0},
		{"reset", "{reset: true}", true, 0, 0, "initial reset", 1, 0},
	}
	for _, br := range relayBranches {
		for _, tt := range tests {
			t.Run(br.name+"/"+tt.name, func(t *testing.T) {
				cfg, calls := br.start(t)
				s, srv, log := newFake(t, cfg)
				tok := token(t)
				if err := s.Arm(tok, nil, []Fault{mustFault(t, tt.fault)}); err != nil {
					t.Fatal(err)
				}
				lingered := make(chan time.Duration, 1)
				s.lingerWait = func(_ context.Context, d time.Duration) bool { lingered <- d; return true }
				oc := openai.NewClient(openaiOpts(srv.URL, "sk")...)
				var err error
				events := 0
				if tt.stream {
					stream := oc.Chat.Completions.NewStreaming(context.Background(), chatParams(tok, "commit_write"))
					for stream.Next() {
						events++
					}
					err = stream.Err()
				} else {
					_, err = oc.Chat.Completions.New(context.Background(), chatParams(tok, "commit_write"))
				}
				wantErr := tt.wantLog != "initial forwarded"
				if (err != nil) != wantErr {
					t.Fatalf("err = %v, wantErr %v", err, wantErr)
				}
				diff(t, "events", tt.wantEvents, events)
				diff(t, "provider calls", tt.wantCalls, calls())
				diff(t, "log", "/v1/chat/completions "+tt.wantLog+"\n", log.String())
				diff(t, "fired", tt.wantFired, s.FaultReports(tok)[0].Fired)
				var linger time.Duration
				select {
				case linger = <-lingered: // waited before the cut, which the client has seen
				default:
				}
				diff(t, "linger", tt.wantLinger, linger)
			})
		}
	}
}

// An unreachable provider is a 502 in the dialect's shape, logged relay_failed.
func TestRelayProviderDown(t *testing.T) {
	mt := httpmock.NewMockTransport()
	mt.RegisterResponder("POST", provider+"/v1/messages", httpmock.NewErrorResponder(errors.New("connection refused")))
	_, url, log := relayFake(t, mt)
	ac := anthropic.NewClient(anthropicOpts(url, "sk")...)
	_, err := ac.Messages.New(context.Background(), messagesParams(token(t), "commit_write"))
	var ae *anthropic.Error
	if !errors.As(err, &ae) || ae.StatusCode != http.StatusBadGateway {
		t.Fatalf("err = %v, want a 502", err)
	}
	checkStubs(t, mt, map[string]int{"POST " + provider + "/v1/messages": 1})
	diff(t, "log", "/v1/messages initial relay_failed\n", log.String())
}

// A relay failure names the provider URL without the query, which may carry
// an API key (?key=), in the error body the client gets — through the
// configured client and through the default one.
func TestRelayFailureHidesQuery(t *testing.T) {
	const secret = "sk-query-secret"
	down := httptest.NewServer(http.NotFoundHandler())
	down.Close() // nothing listens there any more
	mt := httpmock.NewMockTransport()
	mt.RegisterNoResponder(httpmock.NewErrorResponder(errors.New("connection refused")))
	tests := []struct {
		name string
		cfg  Config
		path string
	}{
		{"model call, http.Client", Config{Relay: provider, Client: &http.Client{Transport: mt}}, "/v1/chat/completions"},
		{"model call, default client", Config{Relay: down.URL}, "/v1/chat/completions"},
		{"ancillary", Config{Relay: provider, Client: &http.Client{Transport: mt}}, "/v1/messages/count_tokens"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, srv, _ := newFake(t, tt.cfg)
			resp, err := http.Post(srv.URL+tt.path+"?key="+secret, "application/json",
				strings.NewReader(`{"model":"m","messages":[{"role":"user","content":"hi"}]}`))
			if err != nil {
				t.Fatal(err)
			}
			defer resp.Body.Close()
			b, _ := io.ReadAll(resp.Body)
			if resp.StatusCode != http.StatusBadGateway || !strings.Contains(string(b), tt.path) {
				t.Fatalf("got %d %s, want a 502 naming %s", resp.StatusCode, b, tt.path)
			}
			if strings.Contains(string(b), secret) {
				t.Errorf("error body shows the query's key: %s", b)
			}
		})
	}
}

// A provider error status is passed through as it came.
func TestRelayProviderError(t *testing.T) {
	mt := httpmock.NewMockTransport()
	mt.RegisterResponder("POST", provider+"/v1/chat/completions",
		httpmock.NewStringResponder(http.StatusTooManyRequests, `{"error":{"message":"slow down","type":"rate_limit_error","param":null,"code":null}}`).
			HeaderSet(http.Header{"Retry-After": {"3"}, "Content-Type": {"application/json"}}))
	s, url, log := relayFake(t, mt)
	tok := token(t)
	oc := openai.NewClient(openaiOpts(url, "sk")...)
	_, err := oc.Chat.Completions.New(context.Background(), chatParams(tok, "commit_write"))
	var oe *openai.Error
	if !errors.As(err, &oe) || oe.StatusCode != 429 || oe.Response.Header.Get("Retry-After") != "3" {
		t.Fatalf("err = %v, want the provider's 429 with Retry-After", err)
	}
	checkStubs(t, mt, map[string]int{"POST " + provider + "/v1/chat/completions": 1})
	diff(t, "log", "/v1/chat/completions initial forwarded\n", log.String())
	diff(t, "status", 429, s.Requests(tok)[0].Status)
}

// Model lists and token counts are relayed as they are, uncounted.
func TestRelayAncillary(t *testing.T) {
	mt := httpmock.NewMockTransport()
	mt.RegisterResponder("GET", provider+"/v1/models", httpmock.NewStringResponder(200, `{"object":"list","data":[{"id":"gpt-real","object":"model","created":1,"owned_by":"x"}]}`).
		HeaderSet(http.Header{"Content-Type": {"application/json"}}))
	mt.RegisterResponder("POST", provider+"/v1/messages/count_tokens", httpmock.NewStringResponder(200, `{"input_tokens":42}`).
		HeaderSet(http.Header{"Content-Type": {"application/json"}}))
	s, url, log := relayFake(t, mt)
	oc := openai.NewClient(openaiOpts(url, "sk")...)
	page, err := oc.Models.List(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	diff(t, "models", "gpt-real", page.Data[0].ID)
	ac := anthropic.NewClient(anthropicOpts(url, "sk")...)
	n, err := ac.Messages.CountTokens(context.Background(), anthropic.MessageCountTokensParams{
		Model: "claude-test", Messages: []anthropic.MessageParam{anthropic.NewUserMessage(anthropic.NewTextBlock("hi"))},
	})
	if err != nil {
		t.Fatal(err)
	}
	diff(t, "tokens", int64(42), n.InputTokens)
	checkStubs(t, mt, map[string]int{"GET " + provider + "/v1/models": 1, "POST " + provider + "/v1/messages/count_tokens": 1})
	diff(t, "log", "", log.String())
	diff(t, "total", wire.UpstreamCounts{Outcomes: countsOf(map[string]int{})}, s.Total())
}

func TestRelayURL(t *testing.T) {
	for _, bad := range []string{"api.openai.com", "ftp://x", "https://user:pw@api.openai.com", "http://%zz", "https://api.openai.com/?key=sk-x", "https://api.openai.com/#v1", "https://api.openai.com/?"} {
		if _, err := New(Config{Relay: bad}); err == nil {
			t.Errorf("New(Relay: %q) succeeded", bad)
		}
	}
}
