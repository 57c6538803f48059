package run

import (
	"context"
	"sync"
	"testing"
	"time"

	"github.com/replaycheck/replaycheck/internal/harness/history"
	"github.com/replaycheck/replaycheck/internal/harness/scenario"
	"github.com/replaycheck/replaycheck/internal/harness/target"
)

// TestHeldRunsHaveALaneOfTheirOwn: at the default parallelism, runs a fault
// holds (a Retry-After of 2s) take places of their own, so a held run and a
// quick one are in flight at once with one place each; with --parallel set
// (no holding lane) one place is one run.
func TestHeldRunsHaveALaneOfTheirOwn(t *testing.T) {
	parse := func(src string) *scenario.Scenario {
		t.Helper()
		ss, errs := scenario.Parse("lane.yaml", []byte(src))
		if len(errs) > 0 {
			t.Fatal(errs)
		}
		return ss[0]
	}
	held := parse("name: held\nrequest: {endpoint: chat}\nexpect: {writes: 1}\nfaults: {upstream: [{respond: {status: 429, headers: {Retry-After: \"2\"}}, times: once}]}\n")
	quick := parse("name: quick\nrequest: {endpoint: chat}\nexpect: {writes: 1}\n")
	if expectedWait(held) < holdLane || expectedWait(quick) >= holdLane {
		t.Fatalf("expected waits %s and %s: the scenarios do not fall in the two lanes", expectedWait(held), expectedWait(quick))
	}
	tg, err := target.ParseTarget("builtin:guarded")
	if err != nil {
		t.Fatal(err)
	}
	for _, tt := range []struct {
		name     string
		holding  int
		wantBoth bool
		bound    time.Duration // how long a run waits for one of the other lane
	}{
		{"a lane for held runs", 1, true, time.Minute},
		{"no lane", 0, false, 100 * time.Millisecond},
	} {
		t.Run(tt.name, func(t *testing.T) {
			var mu sync.Mutex
			running := map[string]int{}
			most := 0
			both := make(chan struct{})
			var once sync.Once
			do := func(j job) (*history.History, error) {
				mu.Lock()
				running[j.s.Name]++
				most = max(most, running["held"]+running["quick"])
				if running["held"] > 0 && running["quick"] > 0 {
					once.Do(func() { close(both) })
				}
				mu.Unlock()
				select {
				case <-both:
				case <-time.After(tt.bound):
				}
				mu.Lock()
				running[j.s.Name]--
				mu.Unlock()
				return &history.History{Scenario: j.s.Name}, nil
			}
			r := &runner{opts: Options{Targets: []target.Target{tg}}.withDefaults(), out: make([]*history.History, 4)}
			r.pool(context.Background(), []pair{{s: quick, t: tg, n: 2}, {s: held, t: tg, first: 2, n: 2}}, 1, tt.holding, do)
			select {
			case <-both:
				if !tt.wantBoth {
					t.Error("a held run and a quick one were in flight at once on one place")
				}
			default:
				if tt.wantBoth {
					t.Error("no held run and quick run were in flight at once: the held ones took the one place")
				}
			}
			if want := 1 + tt.holding; most > want {
				t.Errorf("%d runs in flight at once, want at most %d", most, want)
			}
			for i, h := range r.out {
				if h == nil {
					t.Errorf("run %d has no history", i)
				}
			}
		})
	}
}
