package target

import (
	"context"
	"os"
	"testing"
	"time"

	"github.com/replaycheck/replaycheck/fakes/fault"
	"github.com/replaycheck/replaycheck/internal/harness/history"
	"github.com/replaycheck/replaycheck/internal/harness/process"
	"github.com/replaycheck/replaycheck/internal/harness/scenario"
	"github.com/replaycheck/replaycheck/internal/procgone"
)

// TestLivesArmAResumedLifeBeforeItStarts kills a target twice (times: 2)
// whose resumed lives run their pending call at once, before their resume
// has returned to lives (the gateway resumes its turn as soon as it
// listens, before the harness has read that it does): a life whose point
// was armed is held there and killed; one whose point was not yet armed
// runs on past it and finishes its turn, and the second kill never comes
// (checkpoint-at-turn-end then shows 2 writes, not 3). Each life is a real
// process group, killed by lives.
func TestLivesArmAResumedLifeBeforeItStarts(t *testing.T) {
	const cycles = 2
	armed := make([]bool, cycles+2)
	// reached[n] is closed when life n stands at its point, held there.
	reached := make([]chan struct{}, cycles+2)
	for i := range reached {
		reached[i] = make(chan struct{})
	}
	var events []history.TargetEvent
	k := &Kill{
		Fault: scenario.TargetFault{Kill: &scenario.Kill{After: history.KillAfterExecute}, Times: fault.Times{Count: cycles}},
		Arm: func(n int) (func(context.Context) error, error) {
			armed[n] = true
			return func(ctx context.Context) error {
				select {
				case <-reached[n]:
					return nil
				case <-ctx.Done():
					return ctx.Err()
				}
			}, nil
		},
		Record: func(e history.TargetEvent) { events = append(events, e) },
		At:     func(time.Time) history.Duration { return 0 },
	}
	var pids []int
	start := func(n int) life {
		p, err := process.Start(process.Command{Argv: []string{"sleep", "600"}, Env: os.Environ()})
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { _ = p.Stop(0) })
		pids = append(pids, p.PID())
		done := make(chan struct{})
		// A resumed life runs its call at once: an armed point holds it;
		// past an unarmed one it finishes its turn. The first life stands
		// at its point (closed below, once it runs).
		switch {
		case n == 1:
		case armed[n]:
			close(reached[n])
		default:
			close(done)
		}
		return life{proc: p, start: time.Now(), done: done, outcome: func() (int, bool, string) { return -1, true, "" }}
	}
	first := start(1)
	close(reached[1])
	ctx, cancel := context.WithTimeout(t.Context(), time.Minute) // bounds a wait for a point never reached
	defer cancel()
	last, err := k.lives(ctx, first, func(_ context.Context, n int, _ <-chan struct{}) (life, error) { return start(n), nil })
	if err != nil {
		t.Fatal(err)
	}
	var kills []int
	for _, e := range events {
		if e.Kind == history.TargetKilled {
			kills = append(kills, e.Life)
		}
	}
	if len(kills) != cycles || last.proc.PID() != pids[len(pids)-1] || len(pids) != cycles+1 {
		t.Fatalf("killed lives %v of %d started; want lives 1 and 2 killed, the last of 3 returned\nevents %+v", kills, len(pids), events)
	}
	procgone.AssertGone(t, pids[:cycles])
}
