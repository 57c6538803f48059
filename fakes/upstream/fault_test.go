package upstream

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"net/http/httptest"
	"reflect"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/replaycheck/replaycheck/internal/syncbuf"
	"github.com/replaycheck/replaycheck/internal/wire"

	"github.com/anthropics/anthropic-sdk-go/v2"
	"github.com/openai/openai-go/v3"

	"github.com/replaycheck/replaycheck/fakes/fault"
)

func mustFault(t testing.TB, s string) Fault {
	t.Helper()
	f, err := ParseFault(s)
	if err != nil {
		t.Fatalf("ParseFault(%q): %v", s, err)
	}
	return f
}

func TestParseFault(t *testing.T) {
	yes, no := true, false
	d := fault.Duration(2e9)
	tests := []struct {
		name    string
		in      string
		want    Fault
		wantErr string
	}{
		{"respond", "{on: follow_up, respond: {status: 500}, times: always}", Fault{On: "follow_up", Respond: &Respond{Status: 500}}, ""},
		{"respond headers once", `{on: initial, endpoint: chat, respond: {status: 429, headers: {Retry-After: "1"}}, times: once}`,
			Fault{On: "initial", Endpoint: "chat", Respond: &Respond{Status: 429, Headers: map[string]string{"Retry-After": "1"}}, Times: fault.Once}, ""},
		{"drop headers", "{on: follow_up, stream: true, drop: {after: headers}}", Fault{On: "follow_up", Stream: &yes, Drop: &Drop{After: "headers"}}, ""},
		{"drop tool_call", "{drop: {after: tool_call}}", Fault{Drop: &Drop{After: "tool_call"}}, ""},
		{"drop events", "{drop: {after: events, events: 3}, times: {nth: 2}}", Fault{Drop: &Drop{After: "events", Events: 3}, Times: fault.Times{Nth: 2}}, ""},
		{"delay", "{delay: 2s}", Fault{Delay: &d}, ""},
		{"serve_model", "{on: initial, serve_model: gpt-4o-mini}", Fault{On: "initial", ServeModel: "gpt-4o-mini"}, ""},
		{"serve_model empty", `{serve_model: " "}`, Fault{}, "serve_model: want a model id"},
		{"serve_model with respond", "{serve_model: m, respond: {status: 500}}", Fault{}, "respond and serve_model are exclusive"},
		{"delay and respond", "{delay: 2s, respond: {status: 503}, times: 3}", Fault{Delay: &d, Respond: &Respond{Status: 503}, Times: fault.Times{Count: 3}}, ""},
		{"reset", "{reset: true, stream: false}", Fault{Reset: true, Stream: &no}, ""},
		{"unknown field", "{respnd: {status: 500}}", Fault{}, "respnd"},
		{"no action", "{on: initial}", Fault{}, "action"},
		{"two actions", "{reset: true, respond: {status: 500}}", Fault{}, "exclusive"},
		{"bad kind", "{on: later, reset: true}", Fault{}, "on:"},
		{"bad endpoint", "{endpoint: embeddings, reset: true}", Fault{}, "endpoint:"},
		{"bad status", "{respond: {status: 200}}", Fault{}, "respond: status"},
		{"drop not streamed", "{stream: false, drop: {after: headers}}", Fault{}, "drop: stream"},
		{"drop bad point", "{drop: {after: middle}}", Fault{}, "drop: after"},
		{"drop events missing", "{drop: {after: events}}", Fault{}, "drop: events"},
		{"bad duration", "{delay: soon}", Fault{}, "duration"},
		{"bad times", "{reset: true, times: 0}", Fault{}, "times"},
		{"empty", "", Fault{}, "empty"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := ParseFault(tt.in)
			if tt.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), tt.wantErr) {
					t.Fatalf("err = %v, want one containing %q", err, tt.wantErr)
				}
				return
			}
			if err != nil {
				t.Fatalf("err = %v", err)
			}
			diff(t, "fault", tt.want, got)
		})
	}
}

// An injected status reaches each SDK as an API error with that status and
// the fault's headers; times: once lets the next request through.
func TestRespondFault(t *testing.T) {
	f := mustFault(t, `{on: initial, respond: {status: 429, headers: {Retry-After: "7", x-should-retry: "false"}}, times: once}`)
	tests := []struct {
		name string
		call func(ctx context.Context, url, tok string) error
		line string
	}{
		{"chat", func(ctx context.Context, url, tok string) error {
			_, err := openaiClient(url).Chat.Completions.New(ctx, chatParams(tok, "commit_write"))
			return err
		}, "/v1/chat/completions"},
		{"responses", func(ctx context.Context, url, tok string) error {
			_, err := openaiClient(url).Responses.New(ctx, responsesParams(tok, functionTool("commit_write")))
			return err
		}, "/v1/responses"},
		{"messages", func(ctx context.Context, url, tok string) error {
			_, err := anthropicClient(url).Messages.New(ctx, messagesParams(tok, "commit_write"))
			return err
		}, "/v1/messages"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			s, srv, log := newFake(t, Config{})
			tok := token(t)
			if err := s.Arm(tok, nil, []Fault{f}); err != nil {
				t.Fatal(err)
			}
			err := tt.call(context.Background(), srv.URL, tok)
			var status int
			var header http.Header
			var oe *openai.Error
			var ae *anthropic.Error
			switch {
			case errors.As(err, &oe):
				status, header = oe.StatusCode, oe.Response.Header
				diff(t, "message", "injected initial failure", oe.Message)
			case errors.As(err, &ae):
				status, header = ae.StatusCode, ae.Response.Header
				if !strings.Contains(ae.Error(), "rate_limit_error") {
					t.Errorf("anthropic error %v lacks its type", ae)
				}
			default:
				t.Fatalf("err = %v (%T), want an API error", err, err)
			}
			diff(t, "status", 429, status)
			diff(t, "Retry-After", "7", header.Get("Retry-After"))
			diff(t, "x-should-retry", "false", header.Get("X-Should-Retry"))
			if err := tt.call(context.Background(), srv.URL, tok); err != nil {
				t.Fatalf("second call: %v", err)
			}
			diff(t, "log", tt.line+" initial injected_429\n"+tt.line+" initial forwarded\n", log.String())
			reqs := s.Requests(tok)
			diff(t, "record headers", map[string]string{"Retry-After": "7", "X-Should-Retry": "false"}, reqs[0].Headers)
			diff(t, "record status", 429, reqs[0].Status)
			if reqs[0].Fault == "" || reqs[1].Fault != "" {
				t.Errorf("fault fields %q, %q", reqs[0].Fault, reqs[1].Fault)
			}
		})
	}
}

// streamResult is what a test sees of a streamed answer.
type streamResult struct {
	events int
	err    error
	// complete reports whether the client saw a tool call with its full arguments.
	complete bool
}

func streamChat(ctx context.Context, url, tok string) streamResult {
	p := chatParams(tok, "commit_write")
	stream := openaiClient(url).Chat.Completions.NewStreaming(ctx, p)
	var acc openai.ChatCompletionAccumulator
	var r streamResult
	for stream.Next() {
		r.events++
		acc.AddChunk(stream.Current())
	}
	r.err = stream.Err()
	if len(acc.Choices) > 0 && len(acc.Choices[0].Message.ToolCalls) == 1 {
		r.complete = acc.Choices[0].Message.ToolCalls[0].Function.Arguments == `{"entry":"alpha-`+tok+`"}`
	}
	return r
}

func streamResponses(ctx context.Context, url, tok string) streamResult {
	stream := openaiClient(url).Responses.NewStreaming(ctx, responsesParams(tok, functionTool("commit_write")))
	var r streamResult
	for stream.Next() {
		r.events++
		ev := stream.Current()
		if ev.Type == "response.output_item.done" && ev.Item.Arguments.OfString == `{"entry":"alpha-`+tok+`"}` {
			r.complete = true
		}
	}
	r.err = stream.Err()
	return r
}

func streamMessages(ctx context.Context, url, tok string) streamResult {
	stream := anthropicClient(url).Messages.NewStreaming(ctx, messagesParams(tok, "commit_write"))
	var msg anthropic.Message
	var r streamResult
	stopped := false
	for stream.Next() {
		r.events++
		ev := stream.Current()
		_ = msg.Accumulate(ev)
		if ev.Type == "content_block_stop" {
			stopped = true
		}
	}
	r.err = stream.Err()
	if stopped && len(msg.Content) == 1 {
		r.complete = string(msg.Content[0].AsToolUse().Input) == `{"entry":"alpha-`+tok+`"}`
	}
	return r
}

// Each drop surfaces as a stream error in each SDK, never a clean end; a
// tool_call drop comes after the complete tool call.
func TestDropFaults(t *testing.T) {
	dialects := []struct {
		name   string
		path   string
		stream func(ctx context.Context, url, tok string) streamResult
		// events before the terminal ones, for one tool call
		contentEvents int
	}{
		{"chat", "/v1/chat/completions", streamChat, 6},
		{"responses", "/v1/responses", streamResponses, 9},
		{"messages", "/v1/messages", streamMessages, 7},
	}
	drops := []struct {
		name         string
		fault        string
		wantEvents   func(content int) int
		wantComplete bool
	}{
		{"headers", "{drop: {after: headers}}", func(int) int { return 0 }, false},
		{"events", "{drop: {after: events, events: 2}}", func(int) int { return 2 }, false},
		{"tool_call", "{drop: {after: tool_call}}", func(c int) int { return c }, true},
	}
	for _, d := range dialects {
		for _, dr := range drops {
			t.Run(d.name+"/"+dr.name, func(t *testing.T) {
				s, srv, log := newFake(t, Config{})
				tok := token(t)
				if err := s.Arm(tok, nil, []Fault{mustFault(t, dr.fault)}); err != nil {
					t.Fatal(err)
				}
				got := d.stream(context.Background(), srv.URL, tok)
				if got.err == nil {
					t.Fatalf("stream ended cleanly after %d events; want an error", got.events)
				}
				diff(t, "events before the cut", dr.wantEvents(d.contentEvents), got.events)
				diff(t, "tool call complete", dr.wantComplete, got.complete)
				diff(t, "log", d.path+" initial dropped_stream\n", log.String())
			})
		}
	}
}

// A drop never matches a non-streamed request.
func TestDropIgnoresPlainRequests(t *testing.T) {
	s, srv, log := newFake(t, Config{})
	tok := token(t)
	if err := s.Arm(tok, nil, []Fault{mustFault(t, "{drop: {after: headers}}")}); err != nil {
		t.Fatal(err)
	}
	if _, err := openaiClient(srv.URL).Chat.Completions.New(context.Background(), chatParams(tok, "commit_write")); err != nil {
		t.Fatal(err)
	}
	diff(t, "log", "/v1/chat/completions initial forwarded\n", log.String())
}

// A reset reaches the SDK as a connection error, not an API error.
func TestResetFault(t *testing.T) {
	for _, stream := range []bool{false, true} {
		t.Run(fmt.Sprint("stream=", stream), func(t *testing.T) {
			s, srv, log := newFake(t, Config{})
			tok := token(t)
			if err := s.Arm(tok, nil, []Fault{mustFault(t, "{reset: true}")}); err != nil {
				t.Fatal(err)
			}
			var err error
			if stream {
				err = streamChat(context.Background(), srv.URL, tok).err
			} else {
				_, err = openaiClient(srv.URL).Chat.Completions.New(context.Background(), chatParams(tok, "commit_write"))
			}
			var oe *openai.Error
			if err == nil || errors.As(err, &oe) {
				t.Fatalf("err = %v, want a connection error", err)
			}
			diff(t, "log", "/v1/chat/completions initial reset\n", log.String())
			diff(t, "status", 0, s.Requests(tok)[0].Status)
		})
	}
}

// waitHandler is a slog.Handler that passes each record's outcome to a channel.
type waitHandler struct{ outcomes chan string }

func (h waitHandler) Enabled(context.Context, slog.Level) bool { return true }
func (h waitHandler) Handle(_ context.Context, r slog.Record) error {
	r.Attrs(func(a slog.Attr) bool {
		if a.Key == "outcome" {
			h.outcomes <- a.Value.String()
		}
		return true
	})
	return nil
}
func (h waitHandler) WithAttrs([]slog.Attr) slog.Handler { return h }
func (h waitHandler) WithGroup(string) slog.Handler      { return h }

func TestDelayFault(t *testing.T) {
	tests := []struct {
		name    string
		fault   string
		want    string
		wantErr bool
	}{
		{"delay alone", "{delay: 1ms}", "initial delayed", false},
		{"delay then respond", "{delay: 1ms, respond: {status: 503}}", "initial injected_503", true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			s, srv, _ := newFake(t, Config{})
			tok := token(t)
			if err := s.Arm(tok, nil, []Fault{mustFault(t, tt.fault)}); err != nil {
				t.Fatal(err)
			}
			_, err := openaiClient(srv.URL).Chat.Completions.New(context.Background(), chatParams(tok, "commit_write"))
			if (err != nil) != tt.wantErr {
				t.Fatalf("err = %v, wantErr %v", err, tt.wantErr)
			}
			diff(t, "outcomes", countsOf(map[string]int{tt.want: 1}), s.Counts(tok).Outcomes)
		})
	}
	t.Run("client gives up", func(t *testing.T) {
		outcomes := make(chan string, 1)
		s, srv, _ := newFake(t, Config{Logger: slog.New(waitHandler{outcomes})})
		tok := token(t)
		if err := s.Arm(tok, nil, []Fault{mustFault(t, "{delay: 10m}")}); err != nil {
			t.Fatal(err)
		}
		ctx, cancel := context.WithCancel(context.Background())
		waiting := make(chan struct{})
		s.delayHook = func() { close(waiting) }
		done := make(chan error, 1)
		go func() {
			_, err := openaiClient(srv.URL).Chat.Completions.New(ctx, chatParams(tok, "commit_write"))
			done <- err
		}()
		<-waiting // the server holds the request in its delay
		cancel()
		if err := <-done; err == nil {
			t.Fatal("cancelled call succeeded")
		}
		diff(t, "outcome", string(wire.OutcomeClientGone), <-outcomes)
	})
}

// A delay cut short by the server (its base context ends, as at serve's
// shutdown) hangs up: the waiting client gets an error, never an empty 200.
func TestDelayEndsAtShutdownWithoutAnswer(t *testing.T) {
	s, err := New(Config{Log: &syncbuf.Buffer{}, Clock: fixedClock})
	if err != nil {
		t.Fatal(err)
	}
	if err := s.Arm("", nil, []Fault{mustFault(t, "{delay: 10m}")}); err != nil {
		t.Fatal(err)
	}
	waiting := make(chan struct{})
	s.delayHook = func() { close(waiting) }
	base, shutdown := context.WithCancel(context.Background())
	defer shutdown()
	srv := httptest.NewUnstartedServer(s)
	srv.Config.BaseContext = func(net.Listener) context.Context { return base }
	srv.Start()
	t.Cleanup(srv.Close)

	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	type result struct {
		status int
		body   string
		err    error
	}
	done := make(chan result, 1)
	go func() {
		req, _ := http.NewRequestWithContext(ctx, http.MethodPost, srv.URL+"/v1/chat/completions",
			strings.NewReader(`{"model":"m","messages":[{"role":"user","content":"hi"}]}`))
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			done <- result{err: err}
			return
		}
		defer resp.Body.Close()
		b, err := io.ReadAll(resp.Body)
		done <- result{resp.StatusCode, string(b), err}
	}()
	<-waiting // the server holds the request in its delay
	shutdown()
	if r := <-done; r.err == nil {
		t.Fatalf("request cut by shutdown got HTTP %d %q, want a connection error", r.status, r.body)
	}
	diff(t, "outcomes", countsOf(map[string]int{string(wire.KindInitial) + " " + string(wire.OutcomeClientGone): 1}), s.Total().Outcomes)
}

// Times counts per fault entry, exactly, under concurrency; a token's faults
// apply only to its own requests; global faults apply to all.
func TestTimesConcurrent(t *testing.T) {
	s, srv, _ := newFake(t, Config{})
	armed, plain, nth := token(t, "armed"), token(t, "plain"), token(t, "nth")
	if err := s.Arm(armed, nil, []Fault{mustFault(t, "{on: initial, respond: {status: 500}, times: 5}")}); err != nil {
		t.Fatal(err)
	}
	if err := s.Arm(nth, nil, []Fault{mustFault(t, "{respond: {status: 502}, times: {nth: 3}}")}); err != nil {
		t.Fatal(err)
	}
	const n = 40
	var wg sync.WaitGroup
	for _, tok := range []string{armed, plain, nth} {
		for range n {
			wg.Add(1)
			go func() {
				defer wg.Done()
				status, _, _ := post(t, srv.URL+"/v1/chat/completions", `{"model":"m","messages":[{"role":"user","content":"`+prompt(tok)+`"}]}`)
				if status != 200 && status != 500 && status != 502 {
					t.Errorf("status %d", status)
				}
			}()
		}
	}
	wg.Wait()
	diff(t, "armed", countsOf(map[string]int{"initial injected_500": 5, "initial forwarded": n - 5}), s.Counts(armed).Outcomes)
	diff(t, "plain", countsOf(map[string]int{"initial forwarded": n}), s.Counts(plain).Outcomes)
	diff(t, "nth", countsOf(map[string]int{"initial injected_502": 1, "initial forwarded": n - 1}), s.Counts(nth).Outcomes)
	diff(t, "total", wire.UpstreamCounts{Initial: 3 * n, Outcomes: countsOf(map[string]int{"initial injected_500": 5, "initial injected_502": 1, "initial forwarded": 3*n - 6})}, s.Total())
	diff(t, "tokens", slices.Sorted(slices.Values([]string{armed, nth, plain})), slices.Sorted(slices.Values(s.Tokens())))

	// Global faults apply to every run, after a run's own.
	if err := s.Arm("", nil, []Fault{mustFault(t, "{respond: {status: 503}, times: 2}")}); err != nil {
		t.Fatal(err)
	}
	for _, tok := range []string{plain, plain, plain} {
		post(t, srv.URL+"/v1/chat/completions", `{"model":"m","messages":[{"role":"user","content":"`+prompt(tok)+`"}]}`)
	}
	diff(t, "plain after global", countsOf(map[string]int{"initial forwarded": n + 1, "initial injected_503": 2}), s.Counts(plain).Outcomes)
}

func TestArmErrors(t *testing.T) {
	s, _, _ := newFake(t, Config{})
	tests := []struct {
		name    string
		token   string
		faults  []Fault
		script  *Script
		wantErr string
	}{
		{"bad token", "alpha", nil, nil, "not a run token"},
		{"bad fault names its index", token(t), []Fault{{Reset: true}, {On: "later", Reset: true}}, nil, "faults[1].on"},
		{"bad script", token(t), nil, &Script{Steps: []Step{{}}}, "steps[0]"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			err := s.Arm(tt.token, tt.script, tt.faults)
			if err == nil || !strings.Contains(err.Error(), tt.wantErr) {
				t.Fatalf("err = %v, want %q", err, tt.wantErr)
			}
		})
	}
}

// Every action field of Fault is a row of the kind table, under its YAML
// name, and every kind's probes name it distinctly.
func TestKindTableCoversFault(t *testing.T) {
	var fields []string
	ft := reflect.TypeFor[Fault]()
	for i := range ft.NumField() {
		name, _, _ := strings.Cut(ft.Field(i).Tag.Get("yaml"), ",")
		switch name {
		case "on", "endpoint", "stream", "times":
		default:
			fields = append(fields, name)
		}
	}
	diff(t, "kinds", slices.Sorted(slices.Values(fields)), slices.Sorted(slices.Values(kindTable().Names())))
	seen := map[string]bool{}
	for _, p := range Probes() {
		if seen[p.Name] {
			t.Errorf("probe %s twice", p.Name)
		}
		seen[p.Name] = true
		if err := p.Build(fault.Spot{Event: 1, ContentEvents: 2}, fault.DefaultSettings).Validate(); err != nil {
			t.Errorf("probe %s builds an invalid fault: %v", p.Name, err)
		}
	}
}
