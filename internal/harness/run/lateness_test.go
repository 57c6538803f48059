package run

import (
	"context"
	"errors"
	"runtime"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/replaycheck/replaycheck/internal/harness/history"
	"github.com/replaycheck/replaycheck/internal/harness/scenario"
	"github.com/replaycheck/replaycheck/internal/harness/target"
)

// TestProbeCountsAnOverdueWake: a run that ends while the probe's wake-up
// is overdue (the harness starved at that moment) records the lateness so
// far, and one wake-up late by a second is seen by every run watching.
func TestProbeCountsAnOverdueWake(t *testing.T) {
	start := time.Now()
	p := &latenessProbe{due: start.Add(-time.Second), watching: map[*watcher]struct{}{}}
	if got, stalls := p.watch(start)(); got < time.Second || len(stalls) != 1 || stalls[0].Start != 0 {
		t.Errorf("lateness = %s, stalls %v with a wake-up a second overdue, want at least 1s, one stall from the run's start", got, stalls)
	}
	p = startProbe()
	defer p.stop()
	end := p.watch(time.Now())
	p.mu.Lock()
	for w := range p.watching {
		w.late = 2 * time.Second // as the loop records a wake-up 2s late
	}
	p.mu.Unlock()
	if got, _ := end(); got != 2*time.Second {
		t.Errorf("lateness = %s, want the 2s the probe recorded", got)
	}
	if got, stalls := (*latenessProbe)(nil).watch(time.Now())(); got != 0 || stalls != nil {
		t.Errorf("a nil probe measured %s, %v", got, stalls)
	}
}

// TestWatcherStalls: a run keeps when the harness ran late, as offsets
// from its start with the most one wake-up in each came late: short
// lateness is no stall, overlapping and nearly touching stalls merge (a
// byte's trip over the wake-ups it spanned), and past maxStalls the last
// one grows to cover the rest.
func TestWatcherStalls(t *testing.T) {
	start := time.Now()
	at := func(ms int) time.Time { return start.Add(time.Duration(ms) * time.Millisecond) }
	msd := func(n int) history.Duration { return history.Duration(time.Duration(n) * time.Millisecond) }
	span := func(from, to, most int) history.Stall {
		return history.Stall{Start: msd(from), End: msd(to), Most: msd(most)}
	}
	w := &watcher{start: start}
	w.note(at(10), at(12))   // 2ms: no stall
	w.note(at(100), at(200)) // a wake-up 100ms late
	w.note(at(150), at(250)) // a byte sent during it
	w.note(at(253), at(300)) // within probeInterval of it
	w.note(at(500), at(520))
	w.note(at(-50), at(30)) // a byte sent before the run, read in it
	want := []history.Stall{span(0, 30, 80), span(100, 300, 100), span(500, 520, 20)}
	if w.late != 100*time.Millisecond {
		t.Errorf("late = %s, want 100ms", w.late)
	}
	if diff := cmp.Diff(want, w.stalls); diff != "" {
		t.Errorf("stalls (-want +got):\n%s", diff)
	}
	w = &watcher{start: start}
	for i := range maxStalls + 10 {
		w.note(at(i*100), at(i*100+10))
	}
	if len(w.stalls) != maxStalls || w.stalls[maxStalls-1] != span((maxStalls-1)*100, (maxStalls+9)*100+10, 10) {
		t.Errorf("%d stalls, the last %v; want %d, the last covering the rest", len(w.stalls), w.stalls[len(w.stalls)-1], maxStalls)
	}
}

// TestHistoryHasHarnessLateness: every history Run returns says how late
// the harness's timers ran and the deadline the run had.
func TestHistoryHasHarnessLateness(t *testing.T) {
	ss := slices.DeleteFunc(loadSuite(t), func(s *scenario.Scenario) bool { return s.Name != "seed chat fault_on" })
	tg, err := target.ParseTarget("builtin:guarded")
	if err != nil {
		t.Fatal(err)
	}
	hs, err := Run(context.Background(), ss, Options{Targets: []target.Target{tg}, Timeout: 7 * time.Second})
	if err != nil {
		t.Fatal(err)
	}
	if len(hs) != 1 || hs[0].Harness == nil {
		t.Fatalf("got %d histories, the first without Harness", len(hs))
	}
	if got := hs[0].Harness.Deadline.D(); got != 7*time.Second {
		t.Errorf("deadline = %s, want 7s", got)
	}
	if got := hs[0].Harness.Lateness.D(); got < 0 {
		t.Errorf("lateness = %s, want at least 0", got)
	}
}

// TestProbeSeesQueuedGoroutines: hundreds of runnable goroutines (the runs
// of a high --parallel) delay a goroutine the netpoller wakes, as it wakes
// every one that serves a request of the fakes, by far more than a timer's
// goroutine, which Go runs next. The probe's pipe sees that delay: a retry
// that arrived late for it is not credited with a wait (issue 34: a naive
// gateway's retry at once was taken for a 1s wait at --parallel 256).
func TestProbeSeesQueuedGoroutines(t *testing.T) {
	p := startProbe()
	defer p.stop()
	end := p.watch(time.Now())
	// Spin long enough for Go to look at its global run queue, where
	// goroutines the netpoller woke wait, only every 61st scheduling.
	until := time.Now().Add(time.Second)
	var wg sync.WaitGroup
	for range 200 * runtime.GOMAXPROCS(0) {
		wg.Go(func() {
			for time.Now().Before(until) {
			}
		})
	}
	wg.Wait()
	const floor = 100 * time.Millisecond // the least lateness the rules take for starvation
	if got, _ := end(); got < floor {
		t.Errorf("lateness = %s beside %d spinning goroutines, want at least %s", got, 200*runtime.GOMAXPROCS(0), floor)
	} else {
		t.Logf("lateness %s", got)
	}
}

// TestSettled: a run is admitted at once when fewer than free are in
// flight (none, or below the default --parallel), and beside more only
// once a byte sent through the probe's pipe after it asked was read within
// crowdedAt: not on a byte sent before it asked, however fast, nor on a
// slow one; a run still waiting ends with ctx.
func TestSettled(t *testing.T) {
	p := &latenessProbe{watching: map[*watcher]struct{}{}, tripped: make(chan struct{}), done: make(chan struct{})}
	if err := p.settled(context.Background(), func() int { return 0 }, 1); err != nil {
		t.Fatalf("no run in flight: %v", err)
	}
	if err := p.settled(context.Background(), func() int { return 15 }, 16); err != nil {
		t.Fatalf("fewer runs in flight than free: %v", err)
	}
	// trip sends a byte now that is read took later.
	trip := func(took time.Duration) {
		p.mu.Lock()
		defer p.mu.Unlock()
		p.sent = time.Now()
		p.tripEnded(p.sent.Add(took))
	}
	asked := time.Now()
	trip(time.Millisecond)
	if ok, _ := p.uncrowdedSince(asked); !ok {
		t.Error("a fast byte sent after the run asked did not admit it")
	}
	if ok, _ := p.uncrowdedSince(time.Now().Add(time.Second)); ok {
		t.Error("a byte sent before the run asked admitted it")
	}
	trip(time.Second)
	if ok, _ := p.uncrowdedSince(asked); ok {
		t.Error("a byte read a second after it was sent admitted a run")
	}

	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	if err := p.settled(ctx, func() int { return 1 }, 1); !errors.Is(err, context.Canceled) {
		t.Errorf("settled with its context ended = %v, want context.Canceled", err)
	}
	admitted := make(chan error, 1)
	go func() { admitted <- p.settled(context.Background(), func() int { return 1 }, 1) }()
	for range 100_000 {
		trip(time.Millisecond)
		select {
		case err := <-admitted:
			if err != nil {
				t.Fatal(err)
			}
			return
		default:
		}
	}
	t.Fatal("fast bytes never admitted a run")
}
