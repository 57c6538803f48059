package control

import (
	"maps"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/replaycheck/replaycheck/fakes/ledger"
	"github.com/replaycheck/replaycheck/fakes/upstream"
)

// RunLimit bounds what a pair of fakes keeps per run token, as the ledger's
// session cap bounds its sessions: Prune forgets, in both fakes at once,
// every run but the Max most recently active ones (a run is active when
// either fake arms it or sees a request of it), and counts them. The runs
// of no token ("") are never dropped, and the totals keep every run; what
// the ledger keeps of no token (keys, lines, stdio process ends, events) is
// trimmed to the newest Max of each (ledger.Server.Trim). A run dropped and
// seen again is counted afresh, and dropped again as a new run. Max 0 keeps
// every run. Its methods are safe for concurrent use.
type RunLimit struct {
	Upstream *upstream.Server
	Ledger   *ledger.Server
	Max      int

	mu      sync.Mutex
	dropped int
}

// Prune forgets every run but the Max most recently active in both fakes,
// and trims what the ledger keeps of no token to Max.
func (rl *RunLimit) Prune() {
	if rl.Max <= 0 {
		return
	}
	rl.mu.Lock()
	defer rl.mu.Unlock()
	rl.Ledger.Trim(rl.Max)
	active := lastActive(rl.Upstream, rl.Ledger)
	delete(active, "")
	if len(active) <= rl.Max {
		return
	}
	tokens := slices.SortedFunc(maps.Keys(active), func(a, b string) int {
		if c := active[b].Compare(active[a]); c != 0 {
			return c // most recent first
		}
		return strings.Compare(a, b)
	})
	for _, t := range tokens[rl.Max:] {
		rl.Upstream.Forget(t)
		rl.Ledger.Forget(t)
		rl.dropped++
	}
}

// Dropped returns how many runs Prune has forgotten.
func (rl *RunLimit) Dropped() int {
	rl.mu.Lock()
	defer rl.mu.Unlock()
	return rl.dropped
}

// lastActive returns when each run token either fake keeps was last active.
func lastActive(u *upstream.Server, l *ledger.Server) map[string]time.Time {
	active := u.LastActive()
	for t, at := range l.LastActive() {
		if at.After(active[t]) {
			active[t] = at
		}
	}
	return active
}
