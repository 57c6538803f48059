package upstream

import (
	"fmt"
	"time"

	"github.com/replaycheck/replaycheck/fakes/fault"
)

// maxDelay bounds a delay fault, so no scenario can hang for long.
const maxDelay = 10 * time.Minute

// delayAction waits before the answer (or before the fault's other action).
// A delay alone logs its answer as "delayed"; a client that gives up during
// the wait is logged "client_gone" and gets nothing.
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
	if !waitCtx(x.r.Context(), a.d.D()) {
		x.finish(OutcomeClientGone, 0)
		return true
	}
	x.delayed = true
	return false
}
