package upstream

import (
	"fmt"
	"regexp"
)

// Responses events a stream error can be sent as.
const (
	// StreamErrorFailed is the Responses API's response.failed event.
	StreamErrorFailed = "response.failed"
	// StreamErrorEvent is the Responses API's bare error event.
	StreamErrorEvent = "error"
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

// streamErrorAction sends the dialect's in-stream error at its point.
type streamErrorAction struct{ e *StreamError }

func (a streamErrorAction) validate(f *Fault) error {
	if err := validatePoint(a.e.After, a.e.Events); err != nil {
		return err
	}
	if a.e.Type != "" && !errorType.MatchString(a.e.Type) {
		return fmt.Errorf("type: %q is not an error type such as overloaded_error or server_error", a.e.Type)
	}
	switch a.e.Event {
	case "", StreamErrorFailed, StreamErrorEvent:
	default:
		return fmt.Errorf("event: %q is not response.failed or error", a.e.Event)
	}
	if a.e.Event != "" && f.Endpoint != "" && f.Endpoint != "responses" {
		return fmt.Errorf("event: only the responses endpoint has a choice of error events; remove it or match endpoint: responses")
	}
	return streamOnly(f, "a stream error")
}

func (a streamErrorAction) apply(x *exchange) bool {
	x.streamErr = a.e
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

// validatePoint checks a stream point: after headers, tool_call or events
// (with events at least 1).
func validatePoint(after string, events int) error {
	switch after {
	case DropAfterHeaders, DropAfterToolCall:
		if events != 0 {
			return fmt.Errorf("events: only with after: events")
		}
	case DropAfterEvents:
		if events < 1 {
			return fmt.Errorf("events: want at least 1 with after: events")
		}
	default:
		return fmt.Errorf("after: %q is not headers, tool_call or events", after)
	}
	return nil
}

// streamOnly refuses stream: false for an action that applies only to
// streamed requests.
func streamOnly(f *Fault, what string) error {
	if f.Stream != nil && !*f.Stream {
		return fmt.Errorf("stream: %s applies only to streamed requests; remove stream: false", what)
	}
	return nil
}
