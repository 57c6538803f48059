package run

import (
	"cmp"
	"context"
	"os"
	"slices"
	"sync"
	"time"

	"github.com/replaycheck/replaycheck/internal/harness/history"
)

// probeInterval is how long the lateness probe sleeps at a time: short
// enough to see a starved moment of a 200ms tool timeout, long enough to
// cost nothing (a wake-up per 5ms for all runs together).
const probeInterval = 5 * time.Millisecond

// latenessProbe measures the harness's own starvation two ways. A timer
// goroutine sleeps probeInterval over and over and notes how late it wakes:
// a machine whose CPU is taken (by busy processes beside the harness) wakes
// it late. At each wake-up it also writes a byte into a pipe another
// goroutine waits on, and notes how long the byte took to be read: Go's
// scheduler runs a goroutine its netpoller wakes (as it wakes every one that
// serves a request of the fakes or the built-in gateway) behind the
// goroutines already runnable, where a timer's goroutine runs next, so only
// the pipe sees the harness's own runs queueing for its CPUs (hundreds at
// a high --parallel). Every run in flight records the larger lateness (see
// watch). Its methods are safe for concurrent use; a nil probe measures
// nothing.
type latenessProbe struct {
	mu sync.Mutex
	// due is when the timer's current sleep should end.
	due time.Time
	// sent is when the byte in the pipe was written; zero when the pipe
	// is empty.
	sent time.Time
	// trip is how long the last byte read took, and tripSent when it
	// was written; tripped is closed when the next one is read (nil
	// without a pipe).
	trip     time.Duration
	tripSent time.Time
	tripped  chan struct{}
	// admitted is when settled last admitted a run past the free ones.
	admitted time.Time
	// watching holds what each run in flight has seen.
	watching map[*watcher]struct{}
	// r and w are the pipe's ends; nil in a probe that has none (tests).
	r, w    *os.File
	done    chan struct{}
	stopped sync.WaitGroup
}

// startProbe starts a lateness probe; stop ends it. A probe whose pipe
// cannot be made measures its timer alone.
func startProbe() *latenessProbe {
	p := &latenessProbe{due: time.Now().Add(probeInterval), watching: map[*watcher]struct{}{},
		done: make(chan struct{})}
	if r, w, err := os.Pipe(); err == nil {
		p.r, p.w, p.tripped = r, w, make(chan struct{})
		p.stopped.Go(p.read)
	}
	p.stopped.Go(p.loop)
	return p
}

// loop is the timer goroutine: it notes each wake-up's lateness and sends
// the pipe a byte when the last one was read.
func (p *latenessProbe) loop() {
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
		p.record(p.due, now)
		p.due = now.Add(probeInterval)
		p.mu.Unlock()
		p.send()
		timer.Reset(probeInterval)
	}
}

// send writes a byte into the pipe unless one is there.
func (p *latenessProbe) send() {
	p.mu.Lock()
	send := p.w != nil && p.sent.IsZero()
	if send {
		p.sent = time.Now()
	}
	p.mu.Unlock()
	if send {
		// One byte at most is in the pipe: the write never blocks. An
		// error is the pipe closed by stop.
		_, _ = p.w.Write([]byte{0})
	}
}

// read is the pipe's goroutine: it notes how long each byte took to be
// read, until stop closes the pipe.
func (p *latenessProbe) read() {
	buf := make([]byte, 1)
	for {
		if _, err := p.r.Read(buf); err != nil {
			return
		}
		p.mu.Lock()
		p.tripEnded(time.Now())
		p.mu.Unlock()
	}
}

// tripEnded notes that the byte in the pipe was read at now; p.mu is held.
func (p *latenessProbe) tripEnded(now time.Time) {
	p.trip, p.tripSent = now.Sub(p.sent), p.sent
	p.record(p.sent, now)
	p.sent = time.Time{}
	close(p.tripped)
	p.tripped = make(chan struct{})
}

// crowdedAt is the time a byte through the probe's pipe may take for the
// harness to count as serving without queueing: a few times what a busy
// but uncrowded process shows, well under starvation (100ms, the rules'
// least).
const crowdedAt = 25 * time.Millisecond

// spacing is the least time between two runs settled admits past the
// free ones. A run its faults hold (a Retry-After, a dribbled or stalled
// stream) costs the harness nothing until it wakes, so a byte through the
// pipe is read in time while hundreds of them start, and started together
// they wake together: a herd that starves the harness inside the very
// waits their rules measure. Spaced, a herd wakes over as many times
// spacing, and each admission's byte sees the runs admitted before it at
// work.
const spacing = crowdedAt

// settled waits until a run may start without crowding the runs in flight:
// while fewer than free are in flight (running()), or when a byte sent
// through the probe's pipe after the call, and at least spacing after the
// last run it admitted this way, was read within crowdedAt. Runs that start
// while Go's scheduler already queues the goroutines that serve requests
// queue them for longer, until the targets' timeouts and the waits they are
// judged by measure the harness (hundreds of runs at --parallel 256 on two
// CPUs); admitted this way, a high --parallel runs as many at once as the
// process serves in time, and a verdict does not depend on it. It returns
// ctx's error when ctx ends first; a nil probe, or one without a pipe,
// admits at once.
func (p *latenessProbe) settled(ctx context.Context, running func() int, free int) error {
	if p == nil {
		return ctx.Err()
	}
	asked := time.Now()
	for running() >= max(free, 1) {
		since, admitted, next := p.admitAfter(asked)
		if admitted || next == nil {
			return ctx.Err()
		}
		var spaced <-chan time.Time
		if wait := time.Until(since); wait > 0 {
			// Only a byte sent from since on may admit the run.
			spaced, next = time.After(wait), nil
		} else {
			p.send() // no need to wait for the timer's
		}
		select {
		case <-next:
		case <-spaced:
		case <-p.done:
			return ctx.Err()
		case <-ctx.Done():
			return ctx.Err()
		}
	}
	return ctx.Err()
}

// admitAfter admits a run that asked at asked when the last byte read
// through the pipe was sent at since or later, since being asked or spacing
// after the last run admitted so, whichever is later, and read within
// crowdedAt; next is closed when the next byte is read (nil for a probe
// without a pipe).
func (p *latenessProbe) admitAfter(asked time.Time) (since time.Time, admitted bool, next <-chan struct{}) {
	p.mu.Lock()
	defer p.mu.Unlock()
	since = asked
	if spaced := p.admitted.Add(spacing); spaced.After(since) {
		since = spaced
	}
	if !p.tripSent.Before(since) && p.trip < crowdedAt {
		p.admitted = time.Now()
		return since, true, p.tripped
	}
	return since, false, p.tripped
}

// record notes, for every run watching, that what was due at due came at
// now; p.mu is held.
func (p *latenessProbe) record(due, now time.Time) {
	for w := range p.watching {
		w.note(due, now)
	}
}

// maxStalls bounds the stalls a run keeps: past it, the last one grows to
// cover the later ones (a run judged as more starved than it was, never
// less).
const maxStalls = 64

// watcher is what the probe saw while it watched one run: the most it ran
// late, and when it ran late (stalls of at least history.StallMin, as
// offsets from start, merged where they overlap or are within
// probeInterval of each other).
type watcher struct {
	start  time.Time
	late   time.Duration
	stalls []history.Stall
}

// note records that what was due at due came at now. A wake-up that came
// before the run started is not the run's: the probe's loop reads the clock
// before it takes the lock a run's watch is added under.
func (w *watcher) note(due, now time.Time) {
	if now.Before(w.start) {
		return
	}
	late := now.Sub(due)
	w.late = max(w.late, late)
	if late < history.StallMin {
		return
	}
	stalls := append(w.stalls, history.Stall{Start: history.Duration(max(due.Sub(w.start), 0)), End: history.Duration(now.Sub(w.start)), Most: history.Duration(late)})
	// A byte's trip may begin before wake-ups noted before it: keep the
	// stalls in order and merge those it reaches.
	slices.SortFunc(stalls, func(a, b history.Stall) int { return cmp.Compare(a.Start, b.Start) })
	merged := stalls[:1]
	for _, s := range stalls[1:] {
		last := &merged[len(merged)-1]
		if s.Start.D() > last.End.D()+probeInterval {
			merged = append(merged, s)
			continue
		}
		last.End, last.Most = max(last.End, s.End), max(last.Most, s.Most)
	}
	if n := len(merged); n > maxStalls {
		last := &merged[n-2]
		last.End, last.Most = max(last.End, merged[n-1].End), max(last.Most, merged[n-1].Most)
		merged = merged[:n-1]
	}
	w.stalls = merged
}

// stop ends the probe and waits for its goroutines.
func (p *latenessProbe) stop() {
	if p == nil {
		return
	}
	close(p.done)
	if p.w != nil {
		p.w.Close() // the reader sees the end of the pipe
	}
	p.stopped.Wait()
	if p.r != nil {
		p.r.Close()
	}
}

// watch starts watching for one run that started at start: the func it
// returns stops and returns the most the probe was late while it watched,
// and when (see watcher), counting a wake-up still overdue, or a byte
// still unread, as late as it is by then. A nil probe returns 0 and no
// stalls.
func (p *latenessProbe) watch(start time.Time) func() (time.Duration, []history.Stall) {
	if p == nil {
		return func() (time.Duration, []history.Stall) { return 0, nil }
	}
	w := &watcher{start: start}
	p.mu.Lock()
	p.watching[w] = struct{}{}
	p.mu.Unlock()
	return func() (time.Duration, []history.Stall) {
		now := time.Now()
		p.mu.Lock()
		defer p.mu.Unlock()
		delete(p.watching, w)
		if p.due.Before(now) {
			w.note(p.due, now)
		}
		if !p.sent.IsZero() {
			w.note(p.sent, now)
		}
		return w.late, w.stalls
	}
}
