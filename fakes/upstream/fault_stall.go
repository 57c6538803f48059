package upstream

import (
	"fmt"

	"github.com/replaycheck/replaycheck/fakes/fault"
)

// Stall is the action that holds a streamed answer at a point: the events
// before it are flushed, then the stream goes silent for For and resumes,
// or — Forever — stays silent until the client leaves or the server shuts
// down (then the connection is closed). A resumed stall's answer is logged
// delayed (client_gone when the client left during it); a stall forever is
// logged stalled_stream before its first byte. When the point lies past the
// answer's last event the answer completes normally (and the fault does
// not count as fired).
type Stall struct {
	// After is the point: headers, tool_call or events.
	After string `json:"after" yaml:"after" jsonschema:"enum=headers,enum=tool_call,enum=events" jsonschema_description:"where the stream stalls: right after the headers, after the event completing the tool calls, or after N events"`
	// Events is the number of events sent before the stall (after: events).
	Events int `json:"events,omitempty" yaml:"events,omitempty" jsonschema_description:"events sent before the stall, with after: events"`
	// For is how long the stream stays silent before it resumes; at most 10m.
	For fault.Duration `json:"for,omitzero" yaml:"for,omitempty" jsonschema:"type=string" jsonschema_description:"how long the stream stays silent before it resumes, e.g. 5s (at most 10m); exclusive with forever"`
	// Forever stalls until the client leaves or the server shuts down.
	Forever bool `json:"forever,omitempty" yaml:"forever,omitempty" jsonschema_description:"never resume: stay silent until the client gives up or the server shuts down; exclusive with for"`
}

// stallAction holds a stream at its point.
type stallAction struct{ s *Stall }

func (a stallAction) validate(f *Fault) error {
	if err := validatePoint(a.s.After, a.s.Events); err != nil {
		return err
	}
	switch {
	case a.s.Forever && a.s.For != 0:
		return fmt.Errorf("for: exclusive with forever: true; a stall either resumes or not")
	case !a.s.Forever && a.s.For <= 0:
		return fmt.Errorf("for: want a positive duration such as 5s, or forever: true")
	case a.s.For.D() > maxDelay:
		return fmt.Errorf("for: %s is over the %s limit", a.s.For, maxDelay)
	}
	return streamOnly(f, "a stall")
}

func (a stallAction) apply(x *exchange) bool {
	x.stall = a.s
	return false
}
