package ledger

import (
	"errors"
	"fmt"
	"net/http"
)

// FailBeforeExecute refuses a tools/call at the HTTP level before the tool
// runs, or, with Fault.Method, a session step before the SDK sees it: the
// POST is answered with Status (503 when zero), or, with Reset, the TCP
// connection is reset. Nothing is written.
type FailBeforeExecute struct {
	// Status is the HTTP status of the refusal, 400–599; 0 means 503.
	Status int `json:"status,omitempty" yaml:"status,omitempty" jsonschema:"minimum=400,maximum=599" jsonschema_description:"HTTP status of the refusal (400-599); 503 when unset."`
	// Reset resets the connection instead of answering.
	Reset bool `json:"reset,omitempty" yaml:"reset,omitempty" jsonschema_description:"Reset the TCP connection instead of answering."`
}

func (f *FailBeforeExecute) check() error {
	if f.Reset && f.Status != 0 {
		return errors.New("set either status or reset, not both")
	}
	if f.Status != 0 && (f.Status < 400 || f.Status > 599) {
		return fmt.Errorf("status %d: want an HTTP error status from 400 to 599", f.Status)
	}
	return nil
}

func (f *FailBeforeExecute) apply(p *plan) {
	if p.refuse == nil {
		p.refuse = f
	}
}

// status returns the HTTP status of the refusal.
func (f *FailBeforeExecute) status() int {
	if f.Status == 0 {
		return http.StatusServiceUnavailable
	}
	return f.Status
}
