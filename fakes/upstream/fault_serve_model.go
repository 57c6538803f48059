package upstream

import (
	"fmt"
	"strings"
	"time"
	"unicode"

	"github.com/invopop/jsonschema"

	"github.com/replaycheck/replaycheck/fakes/fault"
)

// serveModelKind is the kind table's row for serve_model: a non-empty
// serve_model uses it; with explore's serve-model probe.
func serveModelKind() kindRow {
	one := uint64(1)
	return kindRow{
		Name: "serve_model",
		Get: func(f *Fault) kind {
			if f.ServeModel == "" {
				return nil
			}
			return serveModel{&f.ServeModel}
		},
		Traits: kindTraits{
			used: &jsonschema.Schema{MinLength: &one},
		},
		Probes: func() []fault.Probe[Fault] {
			return []fault.Probe[Fault]{
				{Name: "serve-model", Doc: "answer normally, but naming another model than requested (a silent fallback)", At: fault.AtRequest, Build: func(fault.Spot, fault.Settings) Fault {
					return Fault{ServeModel: "replaycheck-fallback"}
				}},
			}
		},
	}
}

// serveModel answers normally, but the answer names another model than
// the request asked for, as a provider's fallback or a retired model id
// quietly served by its successor would (seed 004 #7). It acts on scripted
// answers only, where it fires; a relayed or replayed answer is passed on as
// the provider gave it.
type serveModel struct{ model *string }

func (k serveModel) Check(*Fault) error {
	if strings.TrimSpace(*k.model) == "" {
		return fmt.Errorf("want a model id, e.g. gpt-4o-mini")
	}
	if strings.IndexFunc(*k.model, unicode.IsControl) >= 0 {
		return fmt.Errorf("%q holds a control character", *k.model)
	}
	return nil
}

// Holds is zero: its answer comes at once.
func (serveModel) Holds(time.Duration) time.Duration { return 0 }

func (k serveModel) describe(b *strings.Builder) { b.WriteString("serve_model " + *k.model) }

func (k serveModel) scripted(x *exchange, a *answer) {
	a.model = *k.model
	x.acted = true
}
