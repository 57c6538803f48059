package ledger

import (
	"errors"
	"fmt"
	"net/http"
	"strconv"
	"time"

	"github.com/replaycheck/replaycheck/fakes/fault"
	"github.com/replaycheck/replaycheck/internal/wire"
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

// Check reports a bad setting, naming it (fault.Action).
func (f *FailBeforeExecute) Check(*Fault) error {
	if f.Reset && f.Status != 0 {
		return errors.New("set either status or reset, not both")
	}
	if f.Status != 0 && (f.Status < 400 || f.Status > 599) {
		return fmt.Errorf("status %d: want an HTTP error status from 400 to 599", f.Status)
	}
	return nil
}

// Holds is zero: the kind holds no answer back (fault.Action).
func (*FailBeforeExecute) Holds(time.Duration) time.Duration { return 0 }

// refusal ranks fail_before_execute above the other refusals.
func (f *FailBeforeExecute) refusal() int { return 3 }

// refuse refuses a whole POST: nothing reaches the SDK, so nothing is
// written.
func (f *FailBeforeExecute) refuse(s *Server, w http.ResponseWriter, p *post) {
	s.finishPost(p, callRefused, wire.MCPFaultFailBeforeExecute)
	s.log.Info("ledger fault", "fault", wire.MCPFaultFailBeforeExecute, "how", f.how(), "calls", len(p.calls))
	f.answer(w)
}

// refuseStep refuses a POST carrying a session step: the SDK never sees it,
// so no session is created or changed.
func (f *FailBeforeExecute) refuseStep(s *Server, w http.ResponseWriter, method string) {
	s.log.Info("ledger fault", "fault", wire.MCPFaultFailBeforeExecute, "how", f.how(), "method", method)
	f.answer(w)
}

// answer answers the refused POST with the status, or resets its connection.
func (f *FailBeforeExecute) answer(w http.ResponseWriter) {
	if !f.Reset {
		http.Error(w, "ledger: injected fault fail_before_execute", f.status())
		return
	}
	abortConnection(w, true)
}

// how says how the POST is refused, for the log.
func (f *FailBeforeExecute) how() string {
	if f.Reset {
		return "reset"
	}
	return "status " + strconv.Itoa(f.status())
}

// status returns the HTTP status of the refusal.
func (f *FailBeforeExecute) status() int {
	if f.Status == 0 {
		return http.StatusServiceUnavailable
	}
	return f.Status
}

// failBeforeExecuteKind is the fault table's row for fail_before_execute.
func failBeforeExecuteKind() kindRow {
	return kindRow{
		Name: wire.MCPFaultFailBeforeExecute,
		Get: func(f *Fault) action {
			return nonNil(f.FailBeforeExecute)
		},
		Probes: failBeforeExecuteProbes,
		Traits: kindTraits{transport: wire.MCPTransportHTTP},
	}
}

func failBeforeExecuteProbes() []fault.Probe[Fault] {
	return []fault.Probe[Fault]{
		{Name: "mcp-session-fail", Doc: "refuse the session step (initialize, tools/list) with 503, as a server still starting does", At: fault.AtSessionStep, Build: func(fault.Spot, fault.Settings) Fault {
			return Fault{FailBeforeExecute: &FailBeforeExecute{Status: 503}}
		}},
		{Name: "mcp-session-reset", Doc: "reset the connection of the session step (initialize, tools/list)", At: fault.AtSessionStep, Build: func(fault.Spot, fault.Settings) Fault {
			return Fault{FailBeforeExecute: &FailBeforeExecute{Reset: true}}
		}},
		{Name: "mcp-fail", Doc: "refuse the tools/call with 503 before it executes", At: fault.AtToolCall, Build: func(fault.Spot, fault.Settings) Fault {
			return Fault{FailBeforeExecute: &FailBeforeExecute{Status: 503}}
		}},
		{Name: "mcp-reset", Doc: "reset the tools/call connection before it executes", At: fault.AtToolCall, Build: func(fault.Spot, fault.Settings) Fault {
			return Fault{FailBeforeExecute: &FailBeforeExecute{Reset: true}}
		}},
	}
}
