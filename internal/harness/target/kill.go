package target

import (
	"context"
	"fmt"
	"time"

	"github.com/replaycheck/replaycheck/internal/harness/history"
	"github.com/replaycheck/replaycheck/internal/harness/process"
	"github.com/replaycheck/replaycheck/internal/harness/scenario"
)

// Kill is a scenario's target fault (faults.target) as the runner hands it
// to an instance of a target that resumes (Traits.Resumes) with a request:
// the instance kills its process at each kill point the runner sees and
// starts its resume.
type Kill struct {
	// Fault is the scenario's target fault.
	Fault scenario.TargetFault
	// Arm arms the kill point of the life-th life (from 1) and returns a
	// wait that blocks until the point is reached, and returns nil, or
	// until ctx ends, and returns its error. A resumed life's point is
	// armed before the life starts, so that what it does first is caught.
	Arm func(life int) (wait func(ctx context.Context) error, err error)
	// Record records a kill or a resume of the run, in order.
	Record func(history.TargetEvent)
	// Killed, when set, is called after each kill, before the resume: the
	// kill point may let go of what it held.
	Killed func()
	// At is the run's offset of a time.
	At func(time.Time) history.Duration
	// Finished, when set, blocks until the fakes gave the run a final model
	// answer (one without tool calls) decided after since, and returns nil,
	// or until ctx ends, and returns its error: how the harness sees a
	// resumed life that reports to no one (a proxy's: the app request died
	// with the kill) finish its pending turn.
	Finished func(ctx context.Context, since time.Time) error
}

// life is one life of a killable target.
type life struct {
	proc  *process.Process
	start time.Time
	// done is closed when the life's work ended by itself (the process
	// exited, the app request was answered, the resumed turns ended).
	done <-chan struct{}
	// outcome says, once done, the life's exit code (-1: none), whether it
	// reported success and the end of what it said.
	outcome func() (exit int, success bool, said string)
	// proxy marks a proxy target's life (history.TargetEvent.Proxy).
	proxy bool
}

// lives runs the life first and, each time the kill point of the current
// life is reached while kill cycles are left, kills its process group as
// the fault says and starts the next life with resume. A life's point is
// armed and watched before the life starts: resume gets a channel closed
// once the new life reached it (nil when it has none), on which a resume
// that awaits the life's readiness stops waiting and returns the life, to
// be killed there. It returns the last life once its work ended, or ctx
// ended, having recorded every kill and every resumed life (a life killed
// or cut by ctx with exit -1).
func (k *Kill) lives(ctx context.Context, first life, resume func(ctx context.Context, n int, reached <-chan struct{}) (life, error)) (life, error) {
	cur, n := first, 1
	endResumed := func(l life, n int, byItself bool) {
		if n == 1 {
			return
		}
		ev := history.TargetEvent{Kind: history.TargetResumed, Life: n, At: k.At(l.start), Proxy: l.proxy}
		exit := -1
		if byItself {
			exit, ev.Success, ev.Said = l.outcome()
		}
		ev.Exit = &exit
		k.Record(ev)
	}
	pt, err := k.watch(ctx, n)
	if err != nil {
		return cur, err
	}
	for {
		if pt == nil {
			select {
			case <-cur.done:
				endResumed(cur, n, true)
			case <-ctx.Done():
				endResumed(cur, n, false)
			}
			return cur, nil
		}
		select {
		case <-cur.done:
			pt.stop()
			endResumed(cur, n, true)
			return cur, nil
		case <-pt.ended:
		}
		if pt.err != nil {
			endResumed(cur, n, false)
			return cur, nil
		}
		kill := k.Fault.Kill
		grace := time.Duration(0)
		if kill.KillSignal() == history.SIGTERM {
			grace = kill.Grace.D()
			if grace <= 0 {
				grace = scenario.DefaultKillGrace
			}
		}
		pid := cur.proc.PID()
		if err := cur.proc.Stop(grace); err != nil {
			return cur, fmt.Errorf("killing the target (life %d): %w", n, err)
		}
		endResumed(cur, n, false)
		ev := history.TargetEvent{Kind: history.TargetKilled, Life: n, At: k.At(time.Now()), Point: kill.After, Signal: kill.KillSignal(), PID: pid,
			KilledAfterGrace: cur.proc.KilledAfterGrace()}
		if kill.After == history.KillAfterExecute {
			ev.Tool = kill.KillTool()
		}
		k.Record(ev)
		if k.Killed != nil {
			k.Killed()
		}
		n++
		if pt, err = k.watch(ctx, n); err != nil {
			return cur, err
		}
		var reached <-chan struct{}
		if pt != nil {
			reached = pt.reached
		}
		next, err := resume(ctx, n, reached)
		if err != nil {
			if pt != nil {
				pt.stop()
			}
			return cur, fmt.Errorf("resuming the target (life %d): %w", n, err)
		}
		cur = next
	}
}

// point is the watch of one life's kill point.
type point struct {
	// reached is closed once the life reached its point.
	reached chan struct{}
	// ended is closed once the wait returned: err is nil when the point
	// was reached, else why the watch ended.
	ended chan struct{}
	err   error
	stop  context.CancelFunc
}

// watch arms the kill point of life n and waits for it until ctx ends or
// the watch is stopped; nil when n is past the fault's kill cycles.
func (k *Kill) watch(ctx context.Context, n int) (*point, error) {
	wait, err := k.arm(n)
	if err != nil || wait == nil {
		return nil, err
	}
	wctx, stop := context.WithCancel(ctx)
	pt := &point{reached: make(chan struct{}), ended: make(chan struct{}), stop: stop}
	go func() {
		if pt.err = wait(wctx); pt.err == nil {
			close(pt.reached)
		}
		stop()
		close(pt.ended)
	}()
	return pt, nil
}

// arm arms the kill point of life n; a nil wait when n is past the
// fault's kill cycles.
func (k *Kill) arm(n int) (func(context.Context) error, error) {
	if n > k.Fault.Cycles() {
		return nil, nil
	}
	wait, err := k.Arm(n)
	if err != nil {
		return nil, fmt.Errorf("life %d: %w", n, err)
	}
	return wait, nil
}

// closed reports whether c is closed; a nil c never is.
func closed(c <-chan struct{}) bool {
	select {
	case <-c:
		return true
	default:
		return false
	}
}
