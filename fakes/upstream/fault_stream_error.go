package upstream

import (
	"fmt"
	"regexp"
	"strconv"
	"strings"
	"time"

	"github.com/replaycheck/replaycheck/fakes/fault"
	api "github.com/replaycheck/replaycheck/internal/dialect"
	"github.com/replaycheck/replaycheck/internal/wire"
)

// Responses events a stream error can be sent as.
const (
	// StreamErrorFailed is the Responses API's response.failed event.
	StreamErrorFailed = api.ResponseFailed
	// StreamErrorEvent is the Responses API's bare error event.
	StreamErrorEvent = api.ResponsesErrorEvent
)

// StreamError is the action that ends a streamed answer, after HTTP 200
// and the events before its point, with the dialect's in-stream error: an
// Anthropic `event: error` ({"type":"error","error":{"type","message"}}),
// a Responses response.failed (or error) event, a chat chunk
// {"error":{"message","type","param","code"}}, or Gemini's error object
// {"error":{"code","message","status"}}, pretty-printed outside the
// event-stream format as the Gemini API sends it. The stream then ends
// cleanly, with no terminal event. When the point lies past the answer's
// last event the answer completes normally (and the fault does not count
// as fired).
type StreamError struct {
	// After is the point: headers, tool_call or events.
	After string `json:"after" yaml:"after" jsonschema:"enum=headers,enum=tool_call,enum=events" jsonschema_description:"where the error event goes: right after the headers, after the event completing the tool calls (before the terminal event), or after N events"`
	// Events is the number of events sent before the error (after: events).
	Events int `json:"events,omitempty" yaml:"events,omitempty" jsonschema_description:"events sent before the error, with after: events"`
	// Type is the error type (Anthropic error.type, OpenAI error.type, the
	// Responses error code, Gemini's status in lower case, whose HTTP code
	// goes with it); "" = overloaded_error for messages, server_error for
	// chat and responses, unavailable (503) for gemini.
	Type string `json:"type,omitempty" yaml:"type,omitempty" jsonschema:"pattern=^[a-z][a-z0-9_]*$" jsonschema_description:"error type, e.g. overloaded_error, api_error, rate_limit_error, server_error; for gemini the status in lower case, e.g. unavailable, resource_exhausted, internal (default overloaded_error for messages, server_error for chat and responses, unavailable for gemini)"`
	// Message is the error message; "" = "Overloaded" for overloaded_error,
	// else "injected stream error".
	Message string `json:"message,omitempty" yaml:"message,omitempty" jsonschema_description:"error message (default Overloaded for overloaded_error, else injected stream error)"`
	// Event is the Responses event sent: response.failed ("" too) or error.
	// Chat and messages have one shape each.
	Event string `json:"event,omitempty" yaml:"event,omitempty" jsonschema:"enum=response.failed,enum=error" jsonschema_description:"responses only: send response.failed (default) or the bare error event"`
}

// errorType matches an error type or code.
var errorType = regexp.MustCompile(`^[a-z][a-z0-9_]*$`)

// streamErrorKind is the kind table's row for stream_error, stream-only,
// with explore's stream-error probe.
func streamErrorKind() kindRow {
	return kindRow{
		Name: "stream_error",
		Get: func(f *Fault) kind {
			if f.StreamError == nil {
				return nil
			}
			return streamError{f.StreamError}
		},
		Traits: kindTraits{
			streams: streamedOnly,
		},
		Probes: func() []fault.Probe[Fault] {
			return []fault.Probe[Fault]{
				{Name: "stream-error", Doc: "end the 200 stream at this point with the dialect's in-stream error (overloaded_error, server_error)", At: fault.AtCut, Build: func(p fault.Spot, _ fault.Settings) Fault {
					d := dropAt(p)
					return Fault{StreamError: &StreamError{After: d.After, Events: d.Events, Message: "replaycheck explore: injected stream error"}}
				}},
			}
		},
	}
}

// streamError sends the dialect's in-stream error at its point, and the
// stream ends there.
type streamError struct{ e *StreamError }

func (k streamError) Check(f *Fault) error {
	e := k.e
	if err := validatePoint(e.After, e.Events); err != nil {
		return err
	}
	if e.Type != "" && !errorType.MatchString(e.Type) {
		return fmt.Errorf("type: %q is not an error type such as overloaded_error or server_error", e.Type)
	}
	switch e.Event {
	case "", StreamErrorFailed, StreamErrorEvent:
	default:
		return fmt.Errorf("event: %q is not %s or %s", e.Event, StreamErrorFailed, StreamErrorEvent)
	}
	if e.Event != "" && f.Endpoint != "" && f.Endpoint != "responses" {
		return fmt.Errorf("event: only the responses endpoint has a choice of error events; remove it or match endpoint: responses")
	}
	return streamOnly(f, "a stream error")
}

// Holds is zero: the error event ends the stream.
func (streamError) Holds(time.Duration) time.Duration { return 0 }

func (k streamError) describe(b *strings.Builder) {
	b.WriteString("stream_error after " + k.e.After)
	if k.e.After == DropAfterEvents {
		b.WriteString(" " + strconv.Itoa(k.e.Events))
	}
	if k.e.Type != "" {
		b.WriteString(" " + k.e.Type)
	}
}

func (streamError) relayUnsupported() string { return "stream_error" }

func (k streamError) plan(s *stream) streamPlan {
	at := s.point(k.e.After, k.e.Events)
	if at < 0 {
		return streamPlan{at: -1}
	}
	return streamPlan{at: at, outcome: wire.OutcomeStreamError}
}

func (k streamError) act(s *stream) bool {
	x := s.x
	ev := x.de.d.streamError(k.e, streamErrorAt{seq: s.sent, id: x.rec.ResponseID, model: x.req.Model, created: x.s.clock().Unix()})
	s.send(ev) // the stream ends here either way
	return false
}

// message returns the error message sent for an error of type typ.
func (e *StreamError) message(typ string) string {
	switch {
	case e.Message != "":
		return e.Message
	case typ == "overloaded_error":
		return "Overloaded"
	}
	return "injected stream error"
}

// streamErrorAt is where a stream error goes: the events sent before it and
// the answer it ends.
type streamErrorAt struct {
	seq     int    // events sent before it (the Responses sequence_number)
	id      string // the answer's id; "" when unknown (a replayed answer)
	model   string
	created int64
}
