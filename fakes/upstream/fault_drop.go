package upstream

import (
	"fmt"
	"strconv"
	"strings"
	"time"

	"github.com/replaycheck/replaycheck/fakes/fault"
	"github.com/replaycheck/replaycheck/internal/wire"
)

// maxLinger bounds a drop's linger, as maxDelay bounds a delay.
const maxLinger = maxDelay

// Drop is the action that closes a streamed answer's connection part-way, so
// the client sees a truncated body (an error), not a clean end. When the
// answer has no more than Events events it completes normally (and the
// fault does not count as fired).
type Drop struct {
	// After is the drop point: headers, tool_call, events or elapsed.
	After string `json:"after" yaml:"after" jsonschema:"enum=headers,enum=tool_call,enum=events,enum=elapsed" jsonschema_description:"where the stream is cut: after the headers, the tool call, N events, or a duration (elapsed)"`
	// Events is the number of events sent before the cut (after: events).
	Events int `json:"events,omitempty" yaml:"events,omitempty" jsonschema_description:"events sent before the cut, with after: events"`
	// Elapsed is how long after its headers the stream is cut (after:
	// elapsed), at most 10m. Only a stream still going then is cut: one
	// paced by a dribble, or replayed with its timing.
	Elapsed fault.Duration `json:"elapsed,omitzero" yaml:"elapsed,omitempty" jsonschema:"type=string" jsonschema_description:"with after: elapsed, cut the stream this long after its headers if it is still going (paced by dribble or replay timing), e.g. 1500ms"`
	// Linger is how long the connection stays open, silent, after the events
	// before the cut have been flushed; 0 cuts at once. The wait ends early
	// when the client leaves or the server's base context ends; at most 10m.
	Linger fault.Duration `json:"linger,omitzero" yaml:"linger,omitempty" jsonschema:"type=string" jsonschema_description:"keep the connection open this long after flushing the events before the cut, then cut, e.g. 500ms (default 0: cut at once; at most 10m)"`
}

// dropKind is the kind table's row for drop, stream-only, with explore's
// drop and drop-linger probes.
func dropKind() kindRow {
	return kindRow{
		Name: "drop",
		Get: func(f *Fault) kind {
			if f.Drop == nil {
				return nil
			}
			return drop{f.Drop}
		},
		Traits: kindTraits{
			streams: streamedOnly,
		},
		Probes: func() []fault.Probe[Fault] {
			return []fault.Probe[Fault]{
				{Name: "drop", Doc: "cut the stream at this point", At: fault.AtCut, Build: func(p fault.Spot, _ fault.Settings) Fault {
					return Fault{Drop: dropAt(p)}
				}},
				{Name: "drop-linger", Doc: "cut the stream at this point after --linger of silence", At: fault.AtCut, Build: func(p fault.Spot, s fault.Settings) Fault {
					d := dropAt(p)
					d.Linger = fault.Duration(s.Linger)
					return Fault{Drop: d}
				}},
			}
		},
	}
}

// dropAt is the drop that cuts a stream at p: after the headers, right
// after the tool call, or after p.Event events.
func dropAt(p fault.Spot) *Drop {
	switch {
	case p.Event == 0:
		return &Drop{After: DropAfterHeaders}
	case p.Event == p.ContentEvents && p.ContentEvents > 0:
		return &Drop{After: DropAfterToolCall}
	default:
		return &Drop{After: DropAfterEvents, Events: p.Event}
	}
}

// drop cuts a streamed answer: the stream goes out up to the drop point, is
// flushed, lingers as long as the drop says, and then the connection is
// closed. A relayed stream is cut by the relay (exchange.drop).
type drop struct{ d *Drop }

func (k drop) Check(f *Fault) error {
	d := k.d
	if d.After == DropAfterElapsed {
		switch {
		case d.Events != 0:
			return fmt.Errorf("events: only with after: events")
		case d.Elapsed <= 0:
			return fmt.Errorf("elapsed: want a positive duration such as 1500ms with after: elapsed")
		case d.Elapsed.D() > maxDelay:
			return fmt.Errorf("elapsed: %s is over the %s limit", d.Elapsed, maxDelay)
		}
	} else {
		if d.Elapsed != 0 {
			return fmt.Errorf("elapsed: only with after: elapsed")
		}
		if err := validatePoint(d.After, d.Events); err != nil {
			if d.After != DropAfterHeaders && d.After != DropAfterToolCall && d.After != DropAfterEvents {
				return fmt.Errorf("after: %q is not headers, tool_call, events or elapsed", d.After)
			}
			return err
		}
	}
	if d.Linger < 0 {
		return fmt.Errorf("linger: %s must not be negative", d.Linger)
	}
	if d.Linger.D() > maxLinger {
		return fmt.Errorf("linger: %s is over the %s limit", d.Linger, maxLinger)
	}
	return streamOnly(f, "a drop")
}

// Holds is the linger before the cut.
func (k drop) Holds(time.Duration) time.Duration { return k.d.Linger.D() }

func (k drop) describe(b *strings.Builder) {
	b.WriteString("drop after " + k.d.After)
	switch k.d.After {
	case DropAfterEvents:
		b.WriteString(" " + strconv.Itoa(k.d.Events))
	case DropAfterElapsed:
		b.WriteString(" " + k.d.Elapsed.String())
	}
	if k.d.Linger > 0 {
		b.WriteString(" linger " + k.d.Linger.String())
	}
}

func (k drop) relayUnsupported() string {
	if k.d.After == DropAfterElapsed {
		return "drop.after"
	}
	return ""
}

func (k drop) plan(s *stream) streamPlan {
	if k.d.After == DropAfterElapsed {
		s.deadline = time.Now().Add(k.d.Elapsed.D())
		return streamPlan{at: -1, paced: true}
	}
	at := s.point(k.d.After, k.d.Events)
	if at < 0 {
		return streamPlan{at: -1}
	}
	return streamPlan{at: at, outcome: wire.OutcomeDroppedStream}
}

func (k drop) act(s *stream) bool {
	s.x.cutStream()
	return false
}

// drop returns the drop of the exchange's fault, nil when it has none: the
// one stream kind a relayed stream carries out.
func (x *exchange) drop() *Drop {
	if x.fault == nil {
		return nil
	}
	return x.fault.Drop
}

// cutStream closes the connection of a stream being dropped, whose events
// up to the cut have been flushed: at once, or after the drop's linger. The
// linger ends early when the request's context ends (the client left, or
// the server's base context ended).
func (x *exchange) cutStream() {
	if d := x.drop().Linger.D(); d > 0 {
		wait := waitCtx
		if x.s.lingerWait != nil {
			wait = x.s.lingerWait
		}
		wait(x.r.Context(), d) // cut either way: elapsed or abandoned
	}
	x.closeConn(false)
}
