package upstream

import (
	"context"
	"errors"
	"fmt"
	"net"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/anthropics/anthropic-sdk-go/v2"
	"github.com/openai/openai-go/v3/packages/ssestream"

	"github.com/replaycheck/replaycheck/internal/wire"
)

// sdkSaw is what an official SDK client made of a stream: whether it had the
// complete tool call, saw the terminal event, and how the stream ended —
// err from the SDK, or the Responses failure event it delivered.
type sdkSaw struct {
	complete, terminal bool
	// failure describes the error as the SDK exposes it, "" for none.
	failure string
}

// sawChat is lingerChat as an sdkSaw: openai-go's stream error.
func sawChat(ctx context.Context, url, tok string) sdkSaw {
	r := lingerChat(ctx, url, tok, func() {})
	s := sdkSaw{complete: r.complete, terminal: r.terminal}
	var se *ssestream.StreamError
	switch {
	case errors.As(r.err, &se):
		s.failure = "ssestream.StreamError: " + se.Message
	case r.err != nil:
		s.failure = "other: " + r.err.Error()
	}
	return s
}

// sawResponses streams the seed's Responses request with openai-go.
func sawResponses(ctx context.Context, url, tok string) sdkSaw {
	stream := openaiClient(url).Responses.NewStreaming(ctx, responsesParams(tok, functionTool("commit_write")))
	var s sdkSaw
	for stream.Next() {
		ev := stream.Current()
		switch ev.Type {
		case "response.completed":
			s.terminal = true
		case "response.output_item.done":
			s.complete = s.complete || ev.Item.Arguments.OfString == `{"entry":"alpha-`+tok+`"}`
		case "response.failed":
			s.failure = fmt.Sprintf("event response.failed: status %s, error %s: %s", ev.Response.Status, ev.Response.Error.Code, ev.Response.Error.Message)
		case "error":
			s.failure = fmt.Sprintf("event error: %s: %s", ev.Code, ev.Message)
		}
	}
	if err := stream.Err(); err != nil {
		s.failure += "; err: " + err.Error()
	}
	return s
}

// sawMessages is lingerMessages as an sdkSaw: anthropic-sdk-go's API error
// with its status and type.
func sawMessages(ctx context.Context, url, tok string) sdkSaw {
	r := lingerMessages(ctx, url, tok, func() {})
	s := sdkSaw{complete: r.complete, terminal: r.terminal}
	var ae *anthropic.Error
	switch {
	case errors.As(r.err, &ae):
		s.failure = fmt.Sprintf("anthropic.Error: status %d, type %s: %s", ae.StatusCode, ae.Type(), ae.Message)
	case r.err != nil:
		s.failure = "other: " + r.err.Error()
	}
	return s
}

var sawDialects = []struct {
	name string
	saw  func(ctx context.Context, url, tok string) sdkSaw
}{
	{"chat", sawChat},
	{"responses", sawResponses},
	{"messages", sawMessages},
	{"gemini", sawGemini},
}

// A stream_error sends HTTP 200, the events before its point, then the
// dialect's in-stream error, and ends the stream with no terminal event.
// Each official SDK surfaces it its own way: openai-go ends a chat stream
// with an *ssestream.StreamError, delivers Responses' response.failed and
// error as events (Err stays nil), and anthropic-sdk-go ends the stream
// with an *anthropic.Error of status 200 and the error's type.
func TestStreamErrorSDK(t *testing.T) {
	chatErr := func(typ, msg string) string {
		return `ssestream.StreamError: received error while streaming: {"message":"` + msg + `","type":"` + typ + `","param":null,"code":null}`
	}
	tests := []struct {
		dialect, fault string
		want           sdkSaw
	}{
		{"chat", "{stream_error: {after: headers}}", sdkSaw{failure: chatErr("server_error", "injected stream error")}},
		{"chat", "{stream_error: {after: events, events: 2}}", sdkSaw{failure: chatErr("server_error", "injected stream error")}},
		{"chat", "{stream_error: {after: tool_call, type: overloaded_error}}", sdkSaw{complete: true, failure: chatErr("overloaded_error", "Overloaded")}},
		{"responses", "{stream_error: {after: headers}}", sdkSaw{failure: "event response.failed: status failed, error server_error: injected stream error"}},
		{"responses", "{stream_error: {after: tool_call, type: rate_limit_exceeded, message: slow down}}", sdkSaw{complete: true, failure: "event response.failed: status failed, error rate_limit_exceeded: slow down"}},
		{"responses", "{stream_error: {after: events, events: 3, event: error}}", sdkSaw{failure: "event error: server_error: injected stream error"}},
		{"messages", "{stream_error: {after: headers}}", sdkSaw{failure: "anthropic.Error: status 200, type overloaded_error: Overloaded"}},
		{"messages", "{stream_error: {after: events, events: 2, type: api_error, message: Internal server error}}", sdkSaw{failure: "anthropic.Error: status 200, type api_error: Internal server error"}},
		{"messages", "{stream_error: {after: tool_call}}", sdkSaw{complete: true, failure: "anthropic.Error: status 200, type overloaded_error: Overloaded"}},
	}
	for _, tt := range tests {
		t.Run(tt.dialect+" "+tt.fault, func(t *testing.T) {
			s, srv, log := newFake(t, Config{})
			tok := token(t)
			if err := s.Arm(tok, nil, []Fault{mustFault(t, tt.fault)}); err != nil {
				t.Fatal(err)
			}
			var got sdkSaw
			for _, d := range sawDialects {
				if d.name == tt.dialect {
					got = d.saw(context.Background(), srv.URL, tok)
				}
			}
			diff(t, "what the SDK saw", tt.want, got)
			if !strings.HasSuffix(log.String(), " initial stream_error\n") {
				t.Errorf("log %q", log.String())
			}
			diff(t, "reports", []reportCounts{{1, 1}}, reportsOf(s.FaultReports(tok)))
			reqs := s.Requests(tok)
			if len(reqs) != 1 || reqs[0].Status != http.StatusOK || reqs[0].Fault == "" {
				t.Errorf("records %+v; want one, status 200, naming the fault", reqs)
			}
		})
	}
}

// A stream_error whose point lies past the answer's last event leaves the
// answer whole and does not fire; a plain request never matches it.
func TestStreamErrorPastTheEnd(t *testing.T) {
	s, srv, _ := newFake(t, Config{})
	tok := token(t)
	if err := s.Arm(tok, nil, []Fault{mustFault(t, "{stream_error: {after: events, events: 100}}")}); err != nil {
		t.Fatal(err)
	}
	diff(t, "saw", sdkSaw{complete: true, terminal: true}, sawMessages(context.Background(), srv.URL, tok))
	if _, err := openaiClient(srv.URL).Chat.Completions.New(context.Background(), chatParams(tok, "commit_write")); err != nil {
		t.Fatal(err)
	}
	diff(t, "reports", []reportCounts{{1, 0}}, reportsOf(s.FaultReports(tok)))
	diff(t, "outcomes", countsOf(map[string]int{"initial forwarded": 2}), s.Counts(tok).Outcomes)
}

// A stall that resumes, and a dribble, hold a stream back without breaking
// it: every SDK gets the whole answer, logged delayed, and the fault fired.
func TestStallAndDribbleComplete(t *testing.T) {
	for _, fault := range []string{
		"{stall: {after: tool_call, for: 20ms}}",
		"{stall: {after: headers, for: 1ms}}",
		"{dribble: 1ms}",
		"{dribble: 1ms, stall: {after: events, events: 1, for: 1ms}}",
	} {
		for _, d := range sawDialects {
			t.Run(d.name+" "+fault, func(t *testing.T) {
				s, srv, log := newFake(t, Config{})
				tok := token(t)
				if err := s.Arm(tok, nil, []Fault{mustFault(t, fault)}); err != nil {
					t.Fatal(err)
				}
				diff(t, "saw", sdkSaw{complete: true, terminal: true}, d.saw(context.Background(), srv.URL, tok))
				if !strings.HasSuffix(log.String(), " initial delayed\n") {
					t.Errorf("log %q", log.String())
				}
				diff(t, "reports", []reportCounts{{1, 1}}, reportsOf(s.FaultReports(tok)))
			})
		}
	}
}

// A stall forever holds the stream after its point until the client gives
// up: the client has the events before it, the outcome stalled_stream is
// recorded before the client could give up, and the handler returns once
// the client has left.
func TestStallForeverEndsWithClient(t *testing.T) {
	for _, d := range lingerDialects {
		t.Run(d.name, func(t *testing.T) {
			s, srv, tok, returned := serveArmed(t, "{stall: {after: tool_call, forever: true}}")
			ctx, cancel := context.WithCancel(context.Background())
			defer cancel()
			var outcomes map[wire.CountKey]int
			r := d.stream(ctx, srv.URL, tok, func() {
				outcomes = s.Counts(tok).Outcomes // the client holds the tool call and waits
				cancel()                          // then gives up
			})
			if !r.complete || r.err == nil || r.terminal {
				t.Fatalf("complete %v, terminal %v, err %v; want the tool call, then the client giving up", r.complete, r.terminal, r.err)
			}
			diff(t, "outcomes while stalled", countsOf(map[string]int{"initial stalled_stream": 1}), outcomes)
			deadline := time.NewTimer(time.Minute) // a deadline, not a measurement
			defer deadline.Stop()
			select {
			case <-returned:
			case <-deadline.C:
				t.Fatal("the handler still stalls after its client left")
			}
			diff(t, "reports", []reportCounts{{1, 1}}, reportsOf(s.FaultReports(tok)))
		})
	}
}

// A stall forever also ends when the server shuts down (its base context
// ends): the handler hangs up and the client sees a cut, not a clean end.
func TestStallForeverEndsWithServer(t *testing.T) {
	s, err := New(Config{Clock: fixedClock})
	if err != nil {
		t.Fatal(err)
	}
	tok := token(t)
	if err := s.Arm(tok, nil, []Fault{mustFault(t, "{stall: {after: tool_call, forever: true}}")}); err != nil {
		t.Fatal(err)
	}
	base, stop := context.WithCancel(context.Background())
	defer stop()
	srv := httptest.NewUnstartedServer(s)
	srv.Config.BaseContext = func(net.Listener) context.Context { return base }
	srv.Start()
	t.Cleanup(srv.Close)
	r := lingerMessages(context.Background(), srv.URL, tok, stop) // shut down once the client holds the tool call
	if !r.complete || r.err == nil || r.terminal {
		t.Fatalf("complete %v, terminal %v, err %v; want the tool call, then a cut", r.complete, r.terminal, r.err)
	}
}

// A drop after elapsed cuts a stream still going when its time comes (here
// one paced by a dribble), and leaves alone one that ended first.
func TestDropAfterElapsed(t *testing.T) {
	for _, d := range lingerDialects {
		t.Run(d.name, func(t *testing.T) {
			s, srv, log := newFake(t, Config{})
			tok := token(t)
			// 20ms before each of the answer's (at least six) events: the
			// stream is still going 30ms after its headers.
			if err := s.Arm(tok, nil, []Fault{mustFault(t, "{dribble: 20ms, drop: {after: elapsed, elapsed: 30ms}}")}); err != nil {
				t.Fatal(err)
			}
			r := d.stream(context.Background(), srv.URL, tok, func() {})
			if r.err == nil || r.terminal {
				t.Fatalf("err %v, terminal %v; want a cut before the terminal event", r.err, r.terminal)
			}
			if !strings.HasSuffix(log.String(), " initial dropped_stream\n") {
				t.Errorf("log %q", log.String())
			}
			diff(t, "reports", []reportCounts{{1, 1}}, reportsOf(s.FaultReports(tok)))
		})
	}
	t.Run("ended first", func(t *testing.T) {
		s, srv, _ := newFake(t, Config{})
		tok := token(t)
		if err := s.Arm(tok, nil, []Fault{mustFault(t, "{drop: {after: elapsed, elapsed: 10m}}")}); err != nil {
			t.Fatal(err)
		}
		r := lingerChat(context.Background(), srv.URL, tok, func() {})
		if r.err != nil || !r.terminal {
			t.Fatalf("err %v, terminal %v; want the whole answer", r.err, r.terminal)
		}
		diff(t, "reports", []reportCounts{{1, 0}}, reportsOf(s.FaultReports(tok)))
	})
}

func TestStreamFaultValidation(t *testing.T) {
	tests := []struct {
		fault, wantErr string
	}{
		{"{stream_error: {after: tool_call, type: overloaded_error, message: Overloaded}}", ""},
		{"{endpoint: responses, stream_error: {after: headers, event: error}}", ""},
		{"{stream_error: {after: body}}", `stream_error: after: "body" is not headers, tool_call or events`},
		{"{stream_error: {after: events}}", "stream_error: events: want at least 1 with after: events"},
		{"{stream_error: {after: headers, events: 2}}", "stream_error: events: only with after: events"},
		{"{stream_error: {after: headers, type: Overloaded Error}}", `stream_error: type: "Overloaded Error" is not an error type such as overloaded_error or server_error`},
		{"{stream_error: {after: headers, event: response.incomplete}}", `stream_error: event: "response.incomplete" is not response.failed or error`},
		{"{endpoint: messages, stream_error: {after: headers, event: error}}", "stream_error: event: only the responses endpoint has a choice of error events; remove it or match endpoint: responses"},
		{"{stream: false, stream_error: {after: headers}}", "stream_error: stream: a stream error applies only to streamed requests; remove stream: false"},
		{"{stream_error: {after: headers}, drop: {after: headers}}", "action: drop and stream_error are exclusive; a fault has one action"},
		{"{stall: {after: tool_call, for: 5s}}", ""},
		{"{stall: {after: events, events: 3, forever: true}}", ""},
		{"{stall: {after: tool_call}}", "stall: for: want a positive duration such as 5s, or forever: true"},
		{"{stall: {after: tool_call, for: 5s, forever: true}}", "stall: for: exclusive with forever: true; a stall either resumes or not"},
		{"{stall: {after: tool_call, for: 11m}}", "stall: for: 11m0s is over the 10m0s limit"},
		{"{stream: false, stall: {after: headers, for: 1s}}", "stall: stream: a stall applies only to streamed requests; remove stream: false"},
		{"{dribble: 50ms}", ""},
		{"{dribble: 50ms, stream_error: {after: tool_call}}", ""},
		{"{dribble: 0s}", "dribble: 0s: want a positive duration such as 50ms"},
		{"{dribble: 2m}", "dribble: 2m0s is over the 1m0s limit per event"},
		{"{dribble: 1ms, respond: {status: 500}}", "dribble: paces a stream; it does not combine with respond"},
		{"{dribble: 1ms, reset: true}", "dribble: paces a stream; it does not combine with reset"},
		{"{drop: {after: elapsed, elapsed: 1500ms}}", ""},
		{"{drop: {after: elapsed}}", "drop: elapsed: want a positive duration such as 1500ms with after: elapsed"},
		{"{drop: {after: tool_call, elapsed: 1s}}", "drop: elapsed: only with after: elapsed"},
		{"{drop: {after: soon}}", `drop: after: "soon" is not headers, tool_call, events or elapsed`},
		{"{}", "action: want one of " + strings.Join(kindTable().Names(), ", ")},
	}
	for _, tt := range tests {
		t.Run(tt.fault, func(t *testing.T) {
			_, err := ParseFault(tt.fault)
			got := ""
			if err != nil {
				got = strings.TrimPrefix(err.Error(), fmt.Sprintf("fault %q: ", tt.fault))
			}
			diff(t, "error", tt.wantErr, got)
		})
	}
	for _, tt := range []struct{ fault, want string }{
		{"{on: follow_up, stream_error: {after: tool_call, type: overloaded_error}, times: once}", "follow_up stream_error after tool_call overloaded_error once"},
		{"{stall: {after: events, events: 2, forever: true}}", "any stall after events 2 forever always"},
		{"{dribble: 50ms, drop: {after: elapsed, elapsed: 2s}}", "any dribble 50ms drop after elapsed 2s always"},
	} {
		diff(t, "string", tt.want, mustFault(t, tt.fault).String())
	}
}

// Relay mode passes a provider's stream through as it comes; the stream
// faults that shape a stream are refused when armed there.
func TestStreamFaultsRefusedInRelay(t *testing.T) {
	s, err := New(Config{Relay: "https://api.example.com"})
	if err != nil {
		t.Fatal(err)
	}
	for _, f := range []string{"{stream_error: {after: headers}}", "{stall: {after: headers, for: 1s}}", "{dribble: 1ms}", "{drop: {after: elapsed, elapsed: 1s}}"} {
		if err := s.Arm("", nil, []Fault{mustFault(t, f)}); err == nil || !strings.Contains(err.Error(), "not available in relay mode") {
			t.Errorf("%s: err = %v; want a refusal naming relay mode", f, err)
		}
	}
	if err := s.Arm("", nil, []Fault{mustFault(t, "{drop: {after: tool_call}}")}); err != nil {
		t.Errorf("a drop after tool_call: %v", err)
	}
}
