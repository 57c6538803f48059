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
	// The probe reads the clock before it takes the lock a run's watch is
	// added under: a wake-up may have come before the run began.
	w = &watcher{start: start}
	w.note(at(-80), at(-23))
	if len(w.stalls) != 0 {
		t.Errorf("a wake-up that came before the run began gave stalls %v, want none", w.stalls)
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
	if _, ok, _ := p.admitAfter(time.Now().Add(time.Second)); ok {
		t.Error("a byte sent before the run asked admitted it")
	}
	if _, ok, _ := p.admitAfter(asked); !ok {
		t.Error("a fast byte sent after the run asked did not admit it")
	}
	// The next run needs a byte sent spacing after that admission.
	trip(time.Millisecond)
	since, ok, _ := p.admitAfter(asked)
	if ok {
		t.Error("a byte sent right after a run was admitted admitted the next")
	}
	if gap := since.Sub(p.admitted); gap != spacing {
		t.Errorf("the next run may be admitted %s after the last, want %s", gap, spacing)
	}
	tripAt := func(sent time.Time, took time.Duration) {
		p.mu.Lock()
		defer p.mu.Unlock()
		p.sent = sent
		p.tripEnded(sent.Add(took))
	}
	tripAt(since, time.Second)
	if _, ok, _ := p.admitAfter(asked); ok {
		t.Error("a byte read a second after it was sent admitted a run")
	}
	tripAt(since, time.Millisecond)
	if _, ok, _ := p.admitAfter(asked); !ok {
		t.Error("a fast byte sent spacing after the last admission did not admit the next run")
	}

	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	if err := p.settled(ctx, func() int { return 1 }, 1); !errors.Is(err, context.Canceled) {
		t.Errorf("settled with its context ended = %v, want context.Canceled", err)
	}
	admitted := make(chan error, 1)
	go func() { admitted <- p.settled(context.Background(), func() int { return 1 }, 1) }()
	// Bytes read at once, as an idle harness reads them, admit it once
	// one is sent spacing after the last admission.
	for give := time.Now().Add(time.Minute); time.Now().Before(give); {
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

// TestSettledSpacesAdmissions: past the free runs, each run settled admits
// comes spacing after the last, even on an idle harness that reads every
// byte at once. The bound is from below: the last admission cannot come
// before the first call plus spacing for each admission after the first.
func TestSettledSpacesAdmissions(t *testing.T) {
	p := startProbe()
	defer p.stop()
	const n = 8
	start := time.Now()
	for range n {
		if err := p.settled(ctxFor(t), func() int { return 2 }, 1); err != nil {
			t.Fatal(err)
		}
	}
	if took, least := time.Since(start), (n-1)*spacing; took < least {
		t.Errorf("%d runs past the free ones admitted in %s, want at least %s (spacing %s each)", n, took, least, spacing)
	}
}

// TestRunSpacesHeldRuns: runs a fault holds (a Retry-After of a second)
// cost nothing while they wait, so without spacing every run past the free
// ones started at once and they all woke together (100 runs within 90ms at
// --parallel 256, their retries 280ms late). Started past the default
// --parallel's runs, they start spacing apart: the last starts no sooner
// than spacing for each run past the free ones after the first.
func TestRunSpacesHeldRuns(t *testing.T) {
	ss, err := scenario.Load("../../../scenarios/retry/transient.yaml")
	if err != nil {
		t.Fatal(err)
	}
	i := slices.IndexFunc(ss, func(s *scenario.Scenario) bool { return s.Name == "retry-after-ms is honoured" })
	if i < 0 {
		t.Fatal("no scenario \"retry-after-ms is honoured\" in transient.yaml")
	}
	free := RunsPerCPU * runtime.NumCPU()
	past := 16
	n := free + past
	ss[i].Repeat = &n
	start := time.Now()
	hs, err := Run(ctxFor(t), ss[i:i+1], Options{Targets: []target.Target{parseTarget(t, "builtin:guarded")}, Parallel: 2 * n, Seed: "test"})
	if err != nil {
		t.Fatal(err)
	}
	var last time.Time
	for _, h := range hs {
		at, err := time.Parse(time.RFC3339Nano, h.Started)
		if err != nil {
			t.Fatal(err)
		}
		if at.After(last) {
			last = at
		}
	}
	// A run held a second ends after every admission: none starts free
	// in its place.
	if took, least := last.Sub(start), time.Duration(past-1)*spacing; took < least {
		t.Errorf("%d runs of a held scenario, %d past the %d free, all started within %s, want the last at least %s after the first asked", n, past, free, took, least)
	}
}
