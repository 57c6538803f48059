package upstream

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"net/http"
	"strings"
	"sync"
	"testing"

	"github.com/anthropics/anthropic-sdk-go/v2"
	"github.com/google/go-cmp/cmp"

	"github.com/replaycheck/replaycheck/internal/wire"
)

func TestModelsEndpoints(t *testing.T) {
	s, srv, log := newFake(t, Config{})
	ctx := context.Background()
	page, err := openaiClient(srv.URL).Models.List(ctx)
	if err != nil {
		t.Fatalf("openai models: %v", err)
	}
	diff(t, "openai models", []string{FakeModel}, []string{page.Data[0].ID})
	m, err := openaiClient(srv.URL).Models.Get(ctx, "gpt-test")
	if err != nil {
		t.Fatalf("openai model: %v", err)
	}
	diff(t, "openai model", "gpt-test", m.ID)

	ac := anthropicClient(srv.URL)
	apage, err := ac.Models.List(ctx, anthropic.ModelListParams{})
	if err != nil {
		t.Fatalf("anthropic models: %v", err)
	}
	diff(t, "anthropic models", FakeModel, apage.Data[0].ID)
	count, err := ac.Messages.CountTokens(ctx, anthropic.MessageCountTokensParams{
		Model:    "claude-test",
		Messages: []anthropic.MessageParam{anthropic.NewUserMessage(anthropic.NewTextBlock("hello"))},
	})
	if err != nil {
		t.Fatalf("count_tokens: %v", err)
	}
	if count.InputTokens < 1 {
		t.Errorf("input_tokens = %d", count.InputTokens)
	}
	diff(t, "ancillary calls are not counted", wire.UpstreamCounts{Outcomes: countsOf(map[string]int{})}, s.Total())
	diff(t, "log", "", log.String())
}

// Malformed bodies get a 400 and oversized ones a 413 in the dialect's error shape and
// are logged as bad_request; unknown paths and methods are refused.
func TestBadRequests(t *testing.T) {
	tests := []struct {
		name       string
		method     string
		path       string
		body       string
		wantStatus int
		wantBody   string
	}{
		{"chat not JSON", "POST", "/v1/chat/completions", `{"model":`, 400, `{"error":{"message":"/v1/chat/completions: unparsable request body: not valid JSON","type":"invalid_request_error","param":null,"code":null}}`},
		{"chat not object", "POST", "/v1/chat/completions", `[1,2]`, 400, `"type":"invalid_request_error"`},
		{"messages not JSON", "POST", "/v1/messages", `nope`, 400, `{"type":"error","error":{"type":"invalid_request_error","message":"/v1/messages: unparsable request body: not valid JSON"}}`},
		{"responses oversized", "POST", "/v1/responses", `{"input":"` + strings.Repeat("x", 2048) + `"}`, 413, `request body of 2060 bytes exceeds the 1024-byte limit of replaycheck's model API fake`},
		{"messages oversized", "POST", "/v1/messages", `{"x":"` + strings.Repeat("x", 2048) + `"}`, 413, `{"type":"error","error":{"type":"request_too_large"`},
		{"chat messages not array", "POST", "/v1/chat/completions", `{"messages":{}}`, 400, `messages: want an array`},
		{"unknown path", "POST", "/v1/embeddings", `{}`, 404, `no such endpoint`},
		{"wrong method", "GET", "/v1/chat/completions", ``, 405, `takes POST`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, srv, _ := newFake(t, Config{MaxBody: 1024})
			req, err := http.NewRequest(tt.method, srv.URL+tt.path, strings.NewReader(tt.body))
			if err != nil {
				t.Fatal(err)
			}
			resp, err := http.DefaultClient.Do(req)
			if err != nil {
				t.Fatal(err)
			}
			defer resp.Body.Close()
			b := new(bytes.Buffer)
			if _, err := b.ReadFrom(resp.Body); err != nil {
				t.Fatal(err)
			}
			diff(t, "status", tt.wantStatus, resp.StatusCode)
			if !strings.Contains(b.String(), tt.wantBody) {
				t.Errorf("body %s lacks %s", b, tt.wantBody)
			}
		})
	}
	t.Run("logged", func(t *testing.T) {
		s, srv, log := newFake(t, Config{})
		post(t, srv.URL+"/v1/chat/completions", `{oops`)
		diff(t, "log", "/v1/chat/completions initial bad_request\n", log.String())
		diff(t, "total", wire.UpstreamCounts{Initial: 1, Outcomes: countsOf(map[string]int{"initial bad_request": 1})}, s.Total())
	})
}

// A body without Content-Length is bounded too.
func TestOversizedChunkedBody(t *testing.T) {
	_, srv, log := newFake(t, Config{MaxBody: 1024})
	pr, pw := io.Pipe()
	go func() {
		_, _ = pw.Write([]byte(`{"messages":[{"role":"user","content":"` + strings.Repeat("x", 4096) + `"}]}`))
		pw.Close()
	}()
	resp, err := http.Post(srv.URL+"/v1/chat/completions", "application/json", pr)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	diff(t, "status", 413, resp.StatusCode)
	if !strings.Contains(string(b), "request body exceeds the 1024-byte limit") {
		t.Errorf("body %s", b)
	}
	diff(t, "log", "/v1/chat/completions initial bad_request\n", log.String())
}

// Arming while requests are served is safe (run with -race).
func TestArmWhileServing(t *testing.T) {
	s, srv, _ := newFake(t, Config{})
	tok := token(t)
	var wg sync.WaitGroup
	for range 8 {
		wg.Go(func() {
			for range 10 {
				post(t, srv.URL+"/v1/messages", `{"messages":[{"role":"user","content":"`+prompt(tok)+`"}],"tools":[{"name":"commit_write"}]}`)
				post(t, srv.URL+"/v1/messages", `{"messages":[{"role":"user","content":"no token"}],"tools":[{"name":"commit_write"}]}`)
			}
		})
	}
	for i := range 20 {
		f := []Fault{mustFault(t, "{respond: {status: 503}, times: once}")}
		if err := s.Arm(tok, &Script{Steps: []Step{{Say: fmt.Sprint("turn ", i)}}}, f); err != nil {
			t.Fatal(err)
		}
		if err := s.Arm("", &Script{Steps: []Step{{Call: "commit_write"}, {Say: fmt.Sprint("global ", i)}}}, f); err != nil {
			t.Fatal(err)
		}
		_ = s.Counts(tok)
		_ = s.Requests(tok)
	}
	wg.Wait()
	c := s.Counts(tok)
	diff(t, "initial", 80, c.Initial)
}

// TestBodyTooLargeSaid: a model request over MaxBody is passed to
// Config.BodyTooLarge with its path, size (-1 without Content-Length) and
// the limit, and answered 413; one under it is not.
func TestBodyTooLargeSaid(t *testing.T) {
	var mu sync.Mutex
	var got []BodyTooLarge
	_, srv, _ := newFake(t, Config{MaxBody: 1024, BodyTooLarge: func(b BodyTooLarge) { mu.Lock(); got = append(got, b); mu.Unlock() }})
	big := `{"messages":[{"role":"user","content":"` + strings.Repeat("x", 2048) + `"}]}`
	if status, body, _ := post(t, srv.URL+"/v1/chat/completions", `{"messages":[{"role":"user","content":"hi"}]}`); status != http.StatusOK {
		t.Fatalf("a small request: %d %s", status, body)
	}
	if status, _, _ := post(t, srv.URL+"/v1/chat/completions", big); status != http.StatusRequestEntityTooLarge {
		t.Errorf("a request over the limit: %d, want 413", status)
	}
	resp, err := http.Post(srv.URL+"/v1/messages", "application/json", io.MultiReader(strings.NewReader(big))) // no Content-Length
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	mu.Lock()
	defer mu.Unlock()
	want := []BodyTooLarge{{Path: "/v1/chat/completions", Size: int64(len(big)), Limit: 1024}, {Path: "/v1/messages", Size: -1, Limit: 1024}}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("BodyTooLarge calls (-want +got):\n%s", diff)
	}
}
