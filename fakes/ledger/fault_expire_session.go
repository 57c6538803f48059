package ledger

import "fmt"

// ExpireSession makes the server forget the MCP session of a tools/call, as
// a server whose session expired (or that restarted) does; later requests
// with its Mcp-Session-Id get 404 Not Found, so the client must initialize a
// new session. With After unset the session is forgotten before the call
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

// expirePoint is when expire_session forgets a call's session.
type expirePoint int

const (
	expireNone expirePoint = iota
	expireBeforeExecute
	expireAfterExecute
)

func (e *ExpireSession) check() error {
	switch e.After {
	case "", ExpireAfterExecute:
		return nil
	}
	return &FieldError{Field: "after", Err: fmt.Errorf("after %q: want %s, or none to forget the session before the call runs", e.After, ExpireAfterExecute)}
}

func (e *ExpireSession) apply(p *plan) {
	at := expireBeforeExecute
	if e.After == ExpireAfterExecute {
		at = expireAfterExecute
	}
	if p.expire == expireNone {
		p.expire = at
	}
}
