package upstream

import (
	"fmt"
	"strings"
	"time"

	"github.com/replaycheck/replaycheck/fakes/fault"
	"github.com/replaycheck/replaycheck/internal/wire"
)

// maxDelay bounds a delay fault, so no scenario can hang for long.
const maxDelay = 10 * time.Minute

// delayKind is the kind table's row for delay, a pacer that refuses reset,
// with explore's stall probe (a held-back answer).
func delayKind() kindRow {
	return kindRow{
		Name: "delay",
		Get: func(f *Fault) kind {
			if f.Delay == nil {
				return nil
			}
			return delay{f.Delay}
		},
		Traits: kindTraits{
			pacer:   true,
			refuses: []string{"reset"},
			refusal: "does not combine with",
		},
		Probes: func() []fault.Probe[Fault] {
			return []fault.Probe[Fault]{
				{Name: "stall", Doc: "hold the answer back for --stall, then answer", Optional: true, At: fault.AtRequest, Build: func(_ fault.Spot, s fault.Settings) Fault {
					d := fault.Duration(s.Stall)
					return Fault{Delay: &d}
				}},
			}
		},
	}
}

// delay waits before the answer (or before the fault's other kind acts).
// A delay alone logs its answer as "delayed"; a wait cut short — the client
// gave up, or the server's base context ended — is logged "client_gone" and
// the connection is closed with nothing written.
type delay struct{ d *fault.Duration }

func (k delay) Check(*Fault) error {
	if k.d.D() > maxDelay {
		return fmt.Errorf("%s is over the %s limit", *k.d, maxDelay)
	}
	return nil
}

func (k delay) describe(b *strings.Builder) { b.WriteString("delay " + k.d.String()) }

// Holds is the delay.
func (k delay) Holds(time.Duration) time.Duration { return k.d.D() }

func (k delay) before(x *exchange) bool {
	if h := x.s.delayHook; h != nil {
		h()
	}
	if len(x.kinds) == 1 {
		x.acted = true // a delay alone fires by holding the answer back
	}
	if !waitCtx(x.r.Context(), k.d.D()) {
		x.finish(wire.OutcomeClientGone, 0)
		// The wait also ends when the server shuts down with the client
		// still there: hang up, so it sees a cut, not an empty 200.
		x.closeConn(false)
		return true
	}
	x.delayed = true
	return false
}
