package upstream

import (
	"strings"
	"time"

	"github.com/invopop/jsonschema"

	"github.com/replaycheck/replaycheck/fakes/fault"
	"github.com/replaycheck/replaycheck/internal/wire"
)

// resetKind is the kind table's row for reset: reset: true uses it.
func resetKind() kindRow {
	return kindRow{
		Name: "reset",
		Get: func(f *Fault) kind {
			if !f.Reset {
				return nil
			}
			return reset{}
		},
		Traits: kindTraits{
			used: &jsonschema.Schema{Const: true},
		},
		Probes: func() []fault.Probe[Fault] {
			return []fault.Probe[Fault]{
				{Name: "reset", Doc: "reset the connection before any byte", At: fault.AtRequest, Build: func(fault.Spot, fault.Settings) Fault {
					return Fault{Reset: true}
				}},
			}
		},
	}
}

// reset resets the connection (RST) before any byte of an answer.
type reset struct{}

func (reset) Check(*Fault) error { return nil }

// Holds is zero: a reset answers at once.
func (reset) Holds(time.Duration) time.Duration { return 0 }

func (reset) describe(b *strings.Builder) { b.WriteString("reset") }

func (reset) before(x *exchange) bool {
	x.acted = true
	x.finish(wire.OutcomeReset, 0)
	x.closeConn(true)
	return true
}
