package run

import (
	"sync"
	"time"
)

// probeInterval is how long the lateness probe sleeps at a time: short
// enough to see a starved moment of a 200ms tool timeout, long enough to
// cost nothing (a wake-up per 5ms for all runs together).
const probeInterval = 5 * time.Millisecond

// latenessProbe measures the harness's own starvation: one goroutine sleeps
// probeInterval over and over and notes how late it wakes. A machine whose
// CPU is taken (by busy processes beside the harness, or by the harness's
// own runs) wakes it late, and every run in flight at that moment records
// the lateness (see watch). Its methods are safe for concurrent use; a nil
// probe measures nothing.
type latenessProbe struct {
	mu sync.Mutex
	// due is when the probe's current sleep should end.
	due time.Time
	// watching holds the largest lateness seen by each run in flight.
	watching map[*time.Duration]struct{}
	done     chan struct{}
	stopped  chan struct{}
}

// startProbe starts a lateness probe; stop ends it.
func startProbe() *latenessProbe {
	p := &latenessProbe{due: time.Now().Add(probeInterval), watching: map[*time.Duration]struct{}{},
		done: make(chan struct{}), stopped: make(chan struct{})}
	go p.loop()
	return p
}

func (p *latenessProbe) loop() {
	defer close(p.stopped)
	timer := time.NewTimer(probeInterval)
	defer timer.Stop()
	for {
		select {
		case <-p.done:
			return
		case <-timer.C:
		}
		now := time.Now()
		p.mu.Lock()
		late := now.Sub(p.due)
		for w := range p.watching {
			*w = max(*w, late)
		}
		p.due = now.Add(probeInterval)
		p.mu.Unlock()
		timer.Reset(probeInterval)
	}
}

// stop ends the probe and waits for its goroutine.
func (p *latenessProbe) stop() {
	if p == nil {
		return
	}
	close(p.done)
	<-p.stopped
}

// watch starts watching for one run: the func it returns stops and returns
// the most the probe woke late while it watched, counting a wake-up still
// overdue as late as it is by then. A nil probe returns 0.
func (p *latenessProbe) watch() func() time.Duration {
	if p == nil {
		return func() time.Duration { return 0 }
	}
	w := new(time.Duration)
	p.mu.Lock()
	p.watching[w] = struct{}{}
	p.mu.Unlock()
	return func() time.Duration {
		now := time.Now()
		p.mu.Lock()
		defer p.mu.Unlock()
		delete(p.watching, w)
		return max(*w, now.Sub(p.due), 0)
	}
}
