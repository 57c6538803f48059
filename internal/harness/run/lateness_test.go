package run

import (
	"context"
	"slices"
	"testing"
	"time"

	"github.com/replaycheck/replaycheck/internal/harness/scenario"
	"github.com/replaycheck/replaycheck/internal/harness/target"
)

// TestProbeCountsAnOverdueWake: a run that ends while the probe's wake-up
// is overdue (the harness starved at that moment) records the lateness so
// far, and one wake-up late by a second is seen by every run watching.
func TestProbeCountsAnOverdueWake(t *testing.T) {
	p := &latenessProbe{due: time.Now().Add(-time.Second), watching: map[*time.Duration]struct{}{}}
	if got := p.watch()(); got < time.Second {
		t.Errorf("lateness = %s with a wake-up a second overdue, want at least 1s", got)
	}
	p = startProbe()
	defer p.stop()
	end := p.watch()
	p.mu.Lock()
	for w := range p.watching {
		*w = 2 * time.Second // as the loop records a wake-up 2s late
	}
	p.mu.Unlock()
	if got := end(); got != 2*time.Second {
		t.Errorf("lateness = %s, want the 2s the probe recorded", got)
	}
	if got := (*latenessProbe)(nil).watch()(); got != 0 {
		t.Errorf("a nil probe measured %s", got)
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
