package upstream

import (
	"strings"

	"github.com/invopop/jsonschema"

	"github.com/replaycheck/replaycheck/fakes/fault"
	"github.com/replaycheck/replaycheck/internal/wire"
)

// resetKind is the kind table's row for reset: reset: true uses it.
func resetKind() kindEntry {
	return kindEntry{
		name: "reset",
		get: func(f *Fault) kind {
			if !f.Reset {
				return nil
			}
			return reset{}
		},
		used: &jsonschema.Schema{Const: true},
		probes: func() []fault.Probe[Fault] {
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

func (reset) validate(*Fault) error { return nil }

func (reset) describe(b *strings.Builder) { b.WriteString("reset") }

func (reset) before(x *exchange) bool {
	x.acted = true
	x.finish(wire.OutcomeReset, 0)
	x.closeConn(true)
	return true
}
