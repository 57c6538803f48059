package gateway

import (
	"fmt"
	"sync"
	"time"
)

// breaker is the per-server circuit breaker: BreakerThreshold consecutive
// strikes open it for a cooldown, during which calls fast-fail without
// reaching the server; after the cooldown one trial call is let through (half
// open) while the others keep fast-failing, and that call's strike opens it
// again, its success closes it. A trial whose caller never reports back is
// replaced by the next call after another cooldown. What counts as a strike is the caller's
// decision (see BreakerCountsToolErrors). It holds no timers: it compares
// against now. Safe for concurrent use.
type breaker struct {
	label     string
	threshold int
	cooldown  time.Duration
	now       func() time.Time

	mu        sync.Mutex
	strikes   int
	openUntil time.Time
	// trialUntil is set while the half-open trial call is out: until then
	// other calls are refused.
	trialUntil time.Time
}

// allow reports whether a call may go to the server; when not, the error is
// the text the model is given.
func (b *breaker) allow() (bool, string) {
	b.mu.Lock()
	defer b.mu.Unlock()
	now := b.now()
	if !b.trialUntil.IsZero() {
		if now.Before(b.trialUntil) {
			return false, fmt.Sprintf("MCP server '%s' is unreachable after %d consecutive failures; one trial call is under way and the gateway refuses the others until it ends. The call was not sent.",
				b.label, b.threshold)
		}
		// The trial never reported back: this call is the next trial.
		b.trialUntil = now.Add(b.cooldown)
		return true, ""
	}
	if b.openUntil.IsZero() {
		return true, ""
	}
	if now.Before(b.openUntil) {
		return false, fmt.Sprintf("MCP server '%s' is unreachable after %d consecutive failures; the gateway refuses calls to it until %s. The call was not sent.",
			b.label, b.threshold, b.openUntil.UTC().Format(time.RFC3339))
	}
	// Half open: this call is the trial; one more strike reopens.
	b.openUntil = time.Time{}
	b.strikes = b.threshold - 1
	b.trialUntil = now.Add(b.cooldown)
	return true, ""
}

// strike records one failure and opens the breaker at the threshold.
func (b *breaker) strike() {
	b.mu.Lock()
	defer b.mu.Unlock()
	b.strikes++
	b.trialUntil = time.Time{}
	if b.strikes >= b.threshold {
		b.openUntil = b.now().Add(b.cooldown)
	}
}

// reset records a success: the count of consecutive strikes starts over.
func (b *breaker) reset() {
	b.mu.Lock()
	defer b.mu.Unlock()
	b.strikes = 0
	b.openUntil = time.Time{}
	b.trialUntil = time.Time{}
}

// abandon records a call that ended without evidence either way, because the
// app request it served ended: it counts nothing, and a trial call hands its
// turn to the next call.
func (b *breaker) abandon() {
	b.mu.Lock()
	defer b.mu.Unlock()
	if !b.trialUntil.IsZero() {
		b.trialUntil = time.Time{}
		b.openUntil = b.now()
	}
}
