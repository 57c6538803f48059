package ledger

import (
	"fmt"
	"net/http"
	"time"

	"github.com/replaycheck/replaycheck/fakes/fault"
	"github.com/replaycheck/replaycheck/internal/wire"
)

// ExpireSession makes the server forget the MCP session of a tools/call, as
// a server whose session expired (or that restarted) does; later requests
// with its Mcp-Session-Id get 404 Not Found, so the client must initialize a
// new session. A call without a session (2026-07-28, or a stateless
// ledger's) has nothing to expire: the fault does not fire on it. With After unset the session is forgotten before the call
// runs: the call's POST gets 404 and nothing is written. With After
// ExpireAfterExecute the call runs (the write is synced), then the session is
// forgotten and the connection closed before any byte of the answer: the
// client cannot tell whether the call ran.
type ExpireSession struct {
	// After is when the session is forgotten: "" before the call runs, or
	// ExpireAfterExecute after it ran, before its answer.
	After string `json:"after,omitempty" yaml:"after,omitempty" jsonschema:"enum=,enum=execute" jsonschema_description:"When the session is forgotten: empty (default) before the call runs (its POST gets 404, nothing is written); execute after it ran, before its answer (the connection closes: the outcome is unknown to the client)."`
}

// ExpireAfterExecute is the ExpireSession.After that forgets the session
// after the call ran.
const ExpireAfterExecute = "execute"

// Check reports a bad setting, naming it (fault.Action).
func (e *ExpireSession) Check(*Fault) error {
	switch e.After {
	case "", ExpireAfterExecute:
		return nil
	}
	return &FieldError{Field: "after", Err: fmt.Errorf("after %q: want %s, or none to forget the session before the call runs", e.After, ExpireAfterExecute)}
}

// actsOnSession: there is no session to forget on a call without one
// (sessionActor).
func (*ExpireSession) actsOnSession() {}

// Holds is zero: the kind holds no answer back (fault.Action).
func (*ExpireSession) Holds(time.Duration) time.Duration { return 0 }

// refusal ranks expire_session before the call runs below the other
// refusals; after execute it does not refuse.
func (e *ExpireSession) refusal() int {
	if e.After == ExpireAfterExecute {
		return 0
	}
	return 1
}

// refuse forgets the session before the calls of p run and answers the POST
// 404 Not Found, as the SDK answers a session it does not know; nothing is
// written.
func (e *ExpireSession) refuse(s *Server, w http.ResponseWriter, p *post) {
	s.forget(p.session)
	s.finishPost(p, callRefused, wire.MCPFaultExpireSession)
	s.log.Info("ledger fault", "fault", wire.MCPFaultExpireSession, "calls", len(p.calls))
	http.Error(w, "session not found", http.StatusNotFound)
}

// cut cuts the answer before its first byte when the session is forgotten
// after execute, ranked above a plain drop_after_execute.
func (e *ExpireSession) cut() (dropPoint, int) {
	if e.After == ExpireAfterExecute {
		return dropBeforeAnswer, 2
	}
	return dropNone, 0
}

// cutOff forgets the session before the connection closes.
func (e *ExpireSession) cutOff(s *Server, p *post) string {
	s.forget(p.session)
	return wire.MCPFaultExpireSessionAfterExecute
}

// expireSessionKind is the fault table's row for expire_session.
func expireSessionKind() kindRow {
	return kindRow{
		Name: wire.MCPFaultExpireSession,
		Get: func(f *Fault) action {
			return nonNil(f.ExpireSession)
		},
		Probes: expireSessionProbes,
		Traits: kindTraits{transport: wire.MCPTransportHTTP},
	}
}

func expireSessionProbes() []fault.Probe[Fault] {
	return []fault.Probe[Fault]{
		{Name: "mcp-expire", Doc: "forget the tools/call's MCP session before it executes (404 on its session id)", At: fault.AtToolCall, Build: func(fault.Spot, fault.Settings) Fault {
			return Fault{ExpireSession: &ExpireSession{}}
		}},
		{Name: "mcp-expire-after", Doc: "execute the tools/call, then forget its MCP session and close the connection before the answer", At: fault.AtToolCall, Build: func(fault.Spot, fault.Settings) Fault {
			return Fault{ExpireSession: &ExpireSession{After: ExpireAfterExecute}}
		}},
	}
}
