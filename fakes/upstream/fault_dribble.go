package upstream

import (
	"fmt"
	"strings"
	"time"

	"github.com/replaycheck/replaycheck/fakes/fault"
)

// maxDribble bounds the wait before each event of a dribbled stream.
const maxDribble = time.Minute

// dribbleKind is the kind table's row for dribble: a stream-only pacer that
// refuses the kinds that leave no stream to pace, with explore's dribble
// probe.
func dribbleKind() kindRow {
	return kindRow{
		Name: "dribble",
		Get: func(f *Fault) kind {
			if f.Dribble == nil {
				return nil
			}
			return dribble{f.Dribble}
		},
		Traits: kindTraits{
			pacer:   true,
			streams: streamedOnly,
			refuses: []string{"reset", "respond", "truncate"},
			refusal: "paces a stream; it does not combine with",
		},
		Probes: func() []fault.Probe[Fault] {
			return []fault.Probe[Fault]{
				{Name: "dribble", Doc: "wait --dribble before each event of the stream", Optional: true, At: fault.AtStream, Build: func(_ fault.Spot, s fault.Settings) Fault {
					d := fault.Duration(s.Dribble)
					return Fault{Dribble: &d}
				}},
			}
		},
	}
}

// dribble paces a streamed answer: it waits its duration before each
// event. Like a delay it may accompany drop, stream_error or stall (it
// then fires when they do); alone it fires by pacing an answer, logged
// delayed — or client_gone when the client left before the last event.
type dribble struct{ d *fault.Duration }

func (k dribble) Check(f *Fault) error {
	switch {
	case *k.d <= 0:
		return fmt.Errorf("%s: want a positive duration such as 50ms", *k.d)
	case k.d.D() > maxDribble:
		return fmt.Errorf("%s is over the %s limit per event", *k.d, maxDribble)
	}
	return streamOnly(f, "a dribble")
}

func (k dribble) describe(b *strings.Builder) { b.WriteString("dribble " + k.d.String()) }

// Holds is the wait before each of a dozen events or so.
func (k dribble) Holds(time.Duration) time.Duration { return 12 * k.d.D() }

func (dribble) relayUnsupported() string { return "dribble" }

func (dribble) plan(*stream) streamPlan { return streamPlan{at: -1, paced: true} }

func (k dribble) beforeEvent(s *stream) bool {
	x := s.x
	if x.pacersAlone() {
		x.acted = true // a dribble alone fires by pacing the answer
	}
	if !s.pause(k.d.D(), waitCtx) {
		return false
	}
	x.delayed = true
	return true
}
