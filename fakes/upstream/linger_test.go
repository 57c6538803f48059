package upstream

import (
	"context"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/anthropics/anthropic-sdk-go/v2"
	"github.com/openai/openai-go/v3"

	"github.com/replaycheck/replaycheck/fakes/fault"
)

// lingerResult is what a client saw of a stream cut after a linger.
type lingerResult struct {
	err error
	// complete: the client had the tool call with its full arguments;
	// terminal: it saw the dialect's terminal event.
	complete, terminal bool
}

// lingerStream streams the seed's request and calls complete once, as soon
// as the client holds the complete tool call.
type lingerStream func(ctx context.Context, url, tok string, complete func()) lingerResult

func lingerChat(ctx context.Context, url, tok string, complete func()) lingerResult {
	stream := openaiClient(url).Chat.Completions.NewStreaming(ctx, chatParams(tok, "commit_write"))
	var acc openai.ChatCompletionAccumulator
	var r lingerResult
	for stream.Next() {
		ch := stream.Current()
		acc.AddChunk(ch)
		if len(ch.Choices) > 0 && ch.Choices[0].FinishReason != "" {
			r.terminal = true
		}
		if !r.complete && len(acc.Choices) > 0 && len(acc.Choices[0].Message.ToolCalls) == 1 &&
			acc.Choices[0].Message.ToolCalls[0].Function.Arguments == `{"entry":"alpha-`+tok+`"}` {
			r.complete = true
			complete()
		}
	}
	r.err = stream.Err()
	return r
}

func lingerResponses(ctx context.Context, url, tok string, complete func()) lingerResult {
	stream := openaiClient(url).Responses.NewStreaming(ctx, responsesParams(tok, functionTool("commit_write")))
	var r lingerResult
	for stream.Next() {
		ev := stream.Current()
		switch {
		case ev.Type == "response.completed":
			r.terminal = true
		case ev.Type == "response.output_item.done" && ev.Item.Arguments.OfString == `{"entry":"alpha-`+tok+`"}`:
			r.complete = true
			complete()
		}
	}
	r.err = stream.Err()
	return r
}

func lingerMessages(ctx context.Context, url, tok string, complete func()) lingerResult {
	stream := anthropicClient(url).Messages.NewStreaming(ctx, messagesParams(tok, "commit_write"))
	var msg anthropic.Message
	var r lingerResult
	for stream.Next() {
		ev := stream.Current()
		_ = msg.Accumulate(ev)
		switch ev.Type {
		case "message_delta", "message_stop":
			r.terminal = true
		case "content_block_stop":
			if len(msg.Content) == 1 && string(msg.Content[0].AsToolUse().Input) == `{"entry":"alpha-`+tok+`"}` {
				r.complete = true
				complete()
			}
		}
	}
	r.err = stream.Err()
	return r
}

var lingerDialects = []struct {
	name   string
	stream lingerStream
}{
	{"chat", lingerChat},
	{"responses", lingerResponses},
	{"messages", lingerMessages},
	{"gemini", lingerGemini},
}

// A lingering tool_call drop flushes the complete tool call, holds the
// connection open while the client has it, and only then cuts: each SDK
// gets the whole tool call before the error, and no terminal event.
func TestDropLingers(t *testing.T) {
	for _, d := range lingerDialects {
		t.Run(d.name, func(t *testing.T) {
			s, srv, log := newFake(t, Config{})
			tok := token(t)
			if err := s.Arm(tok, nil, []Fault{mustFault(t, "{drop: {after: tool_call, linger: 500ms}}")}); err != nil {
				t.Fatal(err)
			}
			lingering := make(chan time.Duration, 1)
			release := make(chan struct{})
			s.lingerWait = func(ctx context.Context, d time.Duration) bool {
				lingering <- d
				select {
				case <-release:
					return true
				case <-ctx.Done():
					return false
				}
			}
			ctx, cancel := context.WithTimeout(context.Background(), time.Minute) // a deadline, not a measurement
			defer cancel()
			complete := make(chan struct{})
			done := make(chan lingerResult, 1)
			go func() { done <- d.stream(ctx, srv.URL, tok, func() { close(complete) }) }()

			select {
			case got := <-lingering:
				diff(t, "linger", 500*time.Millisecond, got)
			case r := <-done:
				t.Fatalf("the stream ended (err %v, tool call complete %v) without the server lingering", r.err, r.complete)
			}
			select {
			case <-complete: // the client holds the whole tool call; the connection is still open
			case r := <-done:
				t.Fatalf("the stream ended during the linger (err %v) before the client had the tool call", r.err)
			}
			close(release)
			r := <-done
			if r.err == nil {
				t.Fatal("the stream ended cleanly after the linger; want the cut to surface as an error")
			}
			if r.terminal {
				t.Error("the client saw the terminal event; the cut must come before it")
			}
			if !strings.HasSuffix(log.String(), " initial dropped_stream\n") {
				t.Errorf("log %q", log.String())
			}
			diff(t, "reports", []reportCounts{{1, 1}}, reportsOf(s.FaultReports(tok)))
		})
	}
}

// The lingers of the other drop points, through the real wait: the events
// up to the cut arrive, then the error.
func TestDropLingerPoints(t *testing.T) {
	tests := []struct {
		fault        string
		wantComplete bool
	}{
		{"{drop: {after: headers, linger: 1ms}}", false},
		{"{drop: {after: events, events: 2, linger: 1ms}}", false},
		{"{drop: {after: tool_call, linger: 1ms}}", true},
	}
	for _, tt := range tests {
		t.Run(tt.fault, func(t *testing.T) {
			s, srv, _ := newFake(t, Config{})
			tok := token(t)
			if err := s.Arm(tok, nil, []Fault{mustFault(t, tt.fault)}); err != nil {
				t.Fatal(err)
			}
			r := lingerMessages(context.Background(), srv.URL, tok, func() {})
			if r.err == nil || r.terminal {
				t.Fatalf("err %v, terminal %v; want a cut before the terminal event", r.err, r.terminal)
			}
			diff(t, "tool call complete", tt.wantComplete, r.complete)
		})
	}
}

// A client that leaves during a long linger ends it: the handler returns
// rather than holding the connection for the full linger.
func TestDropLingerEndsWithClient(t *testing.T) {
	_, srv, tok, returned := serveArmed(t, "{drop: {after: tool_call, linger: 10m}}")
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan lingerResult, 1)
	go func() { done <- lingerChat(ctx, srv.URL, tok, cancel) }() // leave once the tool call is complete
	r := <-done
	if !r.complete || r.err == nil {
		t.Fatalf("complete %v, err %v; want the tool call, then the cancellation", r.complete, r.err)
	}
	deadline := time.NewTimer(time.Minute) // a deadline, not a measurement
	defer deadline.Stop()
	select {
	case <-returned:
	case <-deadline.C:
		t.Fatal("the handler still lingers after its client left")
	}
}

func TestDropLingerValidation(t *testing.T) {
	tests := []struct {
		name    string
		f       Fault
		wantErr string
	}{
		{"zero", Fault{Drop: &Drop{After: DropAfterToolCall}}, ""},
		{"with events", Fault{Drop: &Drop{After: DropAfterEvents, Events: 3, Linger: fault.Duration(time.Second)}}, ""},
		{"negative", Fault{Drop: &Drop{After: DropAfterToolCall, Linger: fault.Duration(-time.Second)}}, "drop: linger: -1s must not be negative"},
		{"over the limit", Fault{Drop: &Drop{After: DropAfterHeaders, Linger: fault.Duration(11 * time.Minute)}}, "drop: linger: 11m0s is over the 10m0s limit"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			err := tt.f.Validate()
			got := ""
			if err != nil {
				got = err.Error()
			}
			diff(t, "error", tt.wantErr, got)
		})
	}
	f := mustFault(t, "{on: follow_up, drop: {after: tool_call, linger: 500ms}, times: once}")
	diff(t, "parsed", Drop{After: DropAfterToolCall, Linger: fault.Duration(500 * time.Millisecond)}, *f.Drop)
	diff(t, "string", "follow_up drop after tool_call linger 500ms once", f.String())
	if _, err := ParseFault("{drop: {after: tool_call, linger: -2s}}"); err == nil || !strings.Contains(err.Error(), "must not be negative") {
		t.Errorf("negative linger: err = %v", err)
	}
}

// serveArmed serves a new upstream fake with fault armed for a fresh run
// token, for one request; returned is closed when its handler has returned.
func serveArmed(t *testing.T, fault string) (*Server, *httptest.Server, string, <-chan struct{}) {
	t.Helper()
	s, err := New(Config{Clock: fixedClock})
	if err != nil {
		t.Fatal(err)
	}
	tok := token(t)
	if err := s.Arm(tok, nil, []Fault{mustFault(t, fault)}); err != nil {
		t.Fatal(err)
	}
	returned := make(chan struct{})
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		defer close(returned)
		s.ServeHTTP(w, r)
	}))
	t.Cleanup(srv.Close)
	return s, srv, tok, returned
}
