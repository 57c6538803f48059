package upstream

import (
	"fmt"
	"net/http"
	"strconv"
	"strings"
	"time"

	"github.com/replaycheck/replaycheck/fakes/fault"
	"github.com/replaycheck/replaycheck/internal/wire"
)

// Respond is the action that answers with an error status.
type Respond struct {
	// Status is the HTTP status, 400–599.
	Status int `json:"status" yaml:"status" jsonschema:"minimum=400,maximum=599" jsonschema_description:"HTTP status to answer"`
	// Headers are added to the answer, e.g. Retry-After, retry-after-ms, x-should-retry.
	Headers map[string]string `json:"headers,omitempty" yaml:"headers,omitempty" jsonschema_description:"headers added to the answer, e.g. Retry-After"`
	// Message is the error message; "" = "injected follow-up failure" (or "injected initial failure").
	Message string `json:"message,omitempty" yaml:"message,omitempty" jsonschema_description:"error message in the dialect's error body"`
}

// respondKind is the kind table's row for respond, with explore's status
// probes.
func respondKind() kindRow {
	return kindRow{
		Name: "respond",
		Get: func(f *Fault) kind {
			if f.Respond == nil {
				return nil
			}
			return respond{f.Respond}
		},
		Probes: func() []fault.Probe[Fault] {
			status := func(code int, headers map[string]string, doc string) func(fault.Spot, fault.Settings) Fault {
				return func(fault.Spot, fault.Settings) Fault {
					return Fault{Respond: &Respond{Status: code, Headers: headers, Message: "replaycheck explore: " + doc}}
				}
			}
			return []fault.Probe[Fault]{
				{Name: "500", Doc: "answer 500", At: fault.AtRequest, Build: status(500, nil, "injected 500")},
				{Name: "502", Doc: "answer 502", At: fault.AtRequest, Build: status(502, nil, "injected 502")},
				{Name: "503", Doc: "answer 503", At: fault.AtRequest, Build: status(503, nil, "injected 503")},
				{Name: "529", Doc: "answer 529 (overloaded)", At: fault.AtRequest, Build: status(529, nil, "injected 529")},
				{Name: "429", Doc: "answer 429 without Retry-After", At: fault.AtRequest, Build: status(429, nil, "injected 429")},
				{Name: "429-retry-after", Doc: "answer 429 with Retry-After: 1", At: fault.AtRequest, Build: status(429, map[string]string{"Retry-After": "1"}, "injected 429 with Retry-After")},
				{Name: "500-no-retry", Doc: "answer 500 with x-should-retry: false", At: fault.AtRequest, Build: status(500, map[string]string{"x-should-retry": "false"}, "injected 500, x-should-retry false")},
				{Name: "400", Doc: "answer 400 (not retryable)", At: fault.AtRequest, Build: status(400, nil, "injected 400")},
				{Name: "408", Doc: "answer 408", At: fault.AtRequest, Build: status(408, nil, "injected 408")},
			}
		},
	}
}

// respond answers with an error status, in the dialect's error body shape,
// with the fault's headers, before any other answer.
type respond struct{ r *Respond }

func (k respond) Check(*Fault) error {
	if k.r.Status < 400 || k.r.Status > 599 {
		return fmt.Errorf("status: %d is not an error status (400–599)", k.r.Status)
	}
	for h := range k.r.Headers {
		if h == "" || strings.ContainsAny(h, " \t\r\n:") {
			return fmt.Errorf("headers: %q is not a header name", h)
		}
		if strings.EqualFold(h, "Content-Length") || strings.EqualFold(h, "Transfer-Encoding") {
			return fmt.Errorf("headers: %s is set by the server", h)
		}
	}
	return nil
}

func (k respond) describe(b *strings.Builder) {
	b.WriteString("respond " + strconv.Itoa(k.r.Status))
}

// Holds is the wait its Retry-After or retry-after-ms asks of the client.
func (k respond) Holds(time.Duration) time.Duration {
	w, _ := (wire.UpstreamRequest{Headers: k.r.Headers}).AskedWait()
	return w
}

func (k respond) before(x *exchange) bool {
	msg := k.r.Message
	if msg == "" {
		msg = injectedMessage(x.kind)
	}
	if len(k.r.Headers) > 0 {
		x.rec.Headers = make(map[string]string, len(k.r.Headers))
		for h, v := range k.r.Headers {
			x.rec.Headers[http.CanonicalHeaderKey(h)] = v
		}
	}
	x.acted = true
	x.writeError(wire.Injected(k.r.Status), k.r.Status, msg, k.r.Headers)
	return true
}

// injectedMessage is the default message of an injected error; for a
// follow-up it is the seed rig's "injected follow-up failure".
func injectedMessage(kind wire.RequestKind) string {
	if kind == wire.KindFollowUp {
		return "injected follow-up failure"
	}
	return "injected initial failure"
}
