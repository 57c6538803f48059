package upstream

import (
	"fmt"
	"strconv"
	"strings"
	"time"

	"github.com/replaycheck/replaycheck/fakes/fault"
	"github.com/replaycheck/replaycheck/internal/wire"
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

// stallKind is the kind table's row for stall, stream-only, with
// explore's stream-stall and stream-hang probes.
func stallKind() kindRow {
	return kindRow{
		Name: "stall",
		Get: func(f *Fault) kind {
			if f.Stall == nil {
				return nil
			}
			return stall{f.Stall}
		},
		Traits: kindTraits{
			streams: streamedOnly,
		},
		Probes: func() []fault.Probe[Fault] {
			return []fault.Probe[Fault]{
				{Name: "stream-stall", Doc: "hold the stream silent at this point for --stall, then resume", Optional: true, At: fault.AtCut, Build: func(p fault.Spot, s fault.Settings) Fault {
					d := dropAt(p)
					return Fault{Stall: &Stall{After: d.After, Events: d.Events, For: fault.Duration(s.Stall)}}
				}},
				{Name: "stream-hang", Doc: "hold the stream silent at this point until the client gives up", Optional: true, At: fault.AtCut, Build: func(p fault.Spot, _ fault.Settings) Fault {
					d := dropAt(p)
					return Fault{Stall: &Stall{After: d.After, Events: d.Events, Forever: true}}
				}},
			}
		},
	}
}

// stall holds a stream at its point.
type stall struct{ s *Stall }

func (k stall) Check(f *Fault) error {
	st := k.s
	if err := validatePoint(st.After, st.Events); err != nil {
		return err
	}
	switch {
	case st.Forever && st.For != 0:
		return fmt.Errorf("for: exclusive with forever: true; a stall either resumes or not")
	case !st.Forever && st.For <= 0:
		return fmt.Errorf("for: want a positive duration such as 5s, or forever: true")
	case st.For.D() > maxDelay:
		return fmt.Errorf("for: %s is over the %s limit", st.For, maxDelay)
	}
	return streamOnly(f, "a stall")
}

// Holds is how long a stall that resumes holds the stream; a stall forever
// lasts until the client leaves, which it cannot tell: nothing.
func (k stall) Holds(time.Duration) time.Duration { return k.s.For.D() }

func (k stall) describe(b *strings.Builder) {
	b.WriteString("stall after " + k.s.After)
	if k.s.After == DropAfterEvents {
		b.WriteString(" " + strconv.Itoa(k.s.Events))
	}
	if k.s.Forever {
		b.WriteString(" forever")
	} else {
		b.WriteString(" for " + k.s.For.String())
	}
}

func (stall) relayUnsupported() string { return "stall" }

func (k stall) plan(s *stream) streamPlan {
	at := s.point(k.s.After, k.s.Events)
	switch {
	case at < 0:
		return streamPlan{at: -1}
	case k.s.Forever:
		return streamPlan{at: at, outcome: wire.OutcomeStalledStream}
	}
	return streamPlan{at: at, paced: true}
}

// act stalls the stream at its point: for its duration, after which it
// reports true and the stream resumes, or forever, until the client leaves
// or the server shuts down (then the connection is closed).
func (k stall) act(s *stream) bool {
	x := s.x
	x.acted = true
	if k.s.Forever {
		<-x.r.Context().Done() // the outcome was recorded before the first byte
		x.closeConn(false)
		return false
	}
	if !s.pause(k.s.For.D(), waitCtx) {
		return false
	}
	x.delayed = true
	return true
}
