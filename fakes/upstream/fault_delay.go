package upstream

import (
	"fmt"
	"time"

	"github.com/replaycheck/replaycheck/fakes/fault"
)

// maxDelay bounds a delay fault, so no scenario can hang for long.
const maxDelay = 10 * time.Minute

// delayAction waits before the answer (or before the fault's other action).
// A delay alone logs its answer as "delayed"; a wait cut short — the client
// gave up, or the server's base context ended — is logged "client_gone" and
// the connection is closed with nothing written.
type delayAction struct{ d fault.Duration }

func (a delayAction) validate(*Fault) error {
	if a.d.D() > maxDelay {
		return fmt.Errorf("%s is over the %s limit", a.d, maxDelay)
	}
	return nil
}

func (a delayAction) apply(x *exchange) bool {
	if h := x.s.delayHook; h != nil {
		h()
	}
	if x.fault.delayAlone() {
		x.acted = true // a delay alone fires by holding the answer back
	}
	if !waitCtx(x.r.Context(), a.d.D()) {
		x.finish(OutcomeClientGone, 0)
		// The wait also ends when the server shuts down with the client
		// still there: hang up, so it sees a cut, not an empty 200.
		x.closeConn(false)
		return true
	}
	x.delayed = true
	return false
}
