package upstream

import (
	"fmt"
	"strings"
	"unicode"
)

// serveModelAction answers normally, but the answer names another model than
// the request asked for, as a provider's fallback or a retired model id
// quietly served by its successor would (seed 004 #7). It acts on scripted
// answers only, where it fires; a relayed or replayed answer is passed on as
// the provider gave it.
type serveModelAction struct{ model string }

func (a serveModelAction) validate(*Fault) error {
	if strings.TrimSpace(a.model) == "" {
		return fmt.Errorf("want a model id, e.g. gpt-4o-mini")
	}
	if strings.IndexFunc(a.model, unicode.IsControl) >= 0 {
		return fmt.Errorf("%q holds a control character", a.model)
	}
	return nil
}

func (a serveModelAction) apply(x *exchange) bool {
	x.serveModel = a.model
	return false
}
