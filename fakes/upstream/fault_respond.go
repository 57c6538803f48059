package upstream

import (
	"fmt"
	"net/http"
	"strings"
)

// respondAction answers with an error status, in the dialect's error body
// shape, with the fault's headers.
type respondAction struct{ r *Respond }

func (a respondAction) validate(*Fault) error {
	if a.r.Status < 400 || a.r.Status > 599 {
		return fmt.Errorf("status: %d is not an error status (400–599)", a.r.Status)
	}
	for k := range a.r.Headers {
		if k == "" || strings.ContainsAny(k, " \t\r\n:") {
			return fmt.Errorf("headers: %q is not a header name", k)
		}
		if strings.EqualFold(k, "Content-Length") || strings.EqualFold(k, "Transfer-Encoding") {
			return fmt.Errorf("headers: %s is set by the server", k)
		}
	}
	return nil
}

func (a respondAction) apply(x *exchange) bool {
	msg := a.r.Message
	if msg == "" {
		msg = injectedMessage(x.kind)
	}
	if len(a.r.Headers) > 0 {
		x.rec.Headers = make(map[string]string, len(a.r.Headers))
		for k, v := range a.r.Headers {
			x.rec.Headers[http.CanonicalHeaderKey(k)] = v
		}
	}
	x.acted = true
	x.writeError(OutcomeInjected(a.r.Status), a.r.Status, msg, a.r.Headers)
	return true
}

// injectedMessage is the default message of an injected error; for a
// follow-up it is the seed rig's "injected follow-up failure".
func injectedMessage(kind string) string {
	if kind == KindFollowUp {
		return "injected follow-up failure"
	}
	return "injected initial failure"
}
