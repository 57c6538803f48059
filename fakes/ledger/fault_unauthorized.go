package ledger

import (
	"io"
	"net/http"
	"time"

	"github.com/replaycheck/replaycheck/fakes/fault"
	"github.com/replaycheck/replaycheck/internal/wire"
)

// Unauthorized refuses a tools/call with 401 Unauthorized and a
// WWW-Authenticate challenge, as a server does whose client's access token
// expired mid-session; the tool does not run. A client may re-authenticate
// and send the call again.
type Unauthorized struct{}

// unauthorizedChallenge is the WWW-Authenticate header of an unauthorized
// answer (RFC 6750 section 3).
const unauthorizedChallenge = `Bearer error="invalid_token", error_description="The access token expired"`

// Check reports a bad setting, naming it (fault.Action).
func (u *Unauthorized) Check(*Fault) error { return nil }

// Holds is zero: the kind holds no answer back (fault.Action).
func (*Unauthorized) Holds(time.Duration) time.Duration { return 0 }

// refusal ranks unauthorized between fail_before_execute and expire_session.
func (u *Unauthorized) refusal() int { return 2 }

// refuse answers a whole POST 401 with a WWW-Authenticate challenge and an
// OAuth error body; nothing reaches the SDK, so nothing is written.
func (u *Unauthorized) refuse(s *Server, w http.ResponseWriter, p *post) {
	s.finishPost(p, callRefused, wire.MCPFaultUnauthorized)
	s.log.Info("ledger fault", "fault", wire.MCPFaultUnauthorized, "calls", len(p.calls))
	w.Header().Set("WWW-Authenticate", unauthorizedChallenge)
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(http.StatusUnauthorized)
	_, _ = io.WriteString(w, `{"error":"invalid_token","error_description":"The access token expired"}`)
}

// unauthorizedKind is the fault table's row for unauthorized.
func unauthorizedKind() kindRow {
	return kindRow{
		Name: wire.MCPFaultUnauthorized,
		Get: func(f *Fault) action {
			return nonNil(f.Unauthorized)
		},
		Probes: unauthorizedProbes,
		Traits: kindTraits{transport: wire.MCPTransportHTTP},
	}
}

func unauthorizedProbes() []fault.Probe[Fault] {
	return []fault.Probe[Fault]{
		{Name: "mcp-unauthorized", Doc: "refuse the tools/call with 401 and WWW-Authenticate (an expired token) before it executes", At: fault.AtToolCall, Build: func(fault.Spot, fault.Settings) Fault {
			return Fault{Unauthorized: &Unauthorized{}}
		}},
	}
}
