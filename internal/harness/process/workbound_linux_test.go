package process_test

import (
	"bufio"
	"context"
	"errors"
	"io"
	"os"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/replaycheck/replaycheck/internal/harness/process"
)

// TestWorkBound bounds a wait by the work a process does, not by the wall
// clock: a process that spins ends the bound once it used the work's CPU
// time, long before the wall; a process that gets no CPU (stopped, as a
// process on a saturated machine is most of the time) keeps it open until
// the wall, where a plain timeout of the same work would have ended at
// once.
func TestWorkBound(t *testing.T) {
	const work, wall = 300 * time.Millisecond, 2 * time.Second
	t.Run("spinning", func(t *testing.T) {
		p := startProcess(t, "sh", "-c", "while :; do :; done")
		begin := time.Now()
		ctx, cancel := p.WorkBound(context.Background(), work, time.Minute)
		defer cancel()
		<-ctx.Done()
		cpu, known := p.CPUTime()
		if !known || cpu < work {
			t.Errorf("the bound ended after %s with %s of CPU time (known %t); want at least %s", time.Since(begin), cpu, known, work)
		}
		if cause := context.Cause(ctx); !errors.Is(cause, context.DeadlineExceeded) || !strings.Contains(cause.Error(), "of CPU time") {
			t.Errorf("cause %q; want one that says the CPU time and is a deadline", cause)
		}
	})
	t.Run("starved", func(t *testing.T) {
		p := startProcess(t, "sh", "-c", "while :; do :; done")
		if err := syscall.Kill(p.PID(), syscall.SIGSTOP); err != nil {
			t.Fatal(err)
		}
		begin := time.Now()
		ctx, cancel := p.WorkBound(context.Background(), work, wall)
		defer cancel()
		<-ctx.Done()
		if waited := time.Since(begin); waited < wall {
			t.Errorf("the bound of a process given no CPU ended after %s (%v); want the wall, %s", waited, context.Cause(ctx), wall)
		}
		if !errors.Is(ctx.Err(), context.DeadlineExceeded) {
			t.Errorf("err %v; want a deadline", ctx.Err())
		}
	})
	t.Run("canceled", func(t *testing.T) {
		p := startProcess(t, "sleep", "60")
		ctx, cancel := p.WorkBound(context.Background(), work, time.Minute)
		cancel()
		<-ctx.Done()
		if !errors.Is(ctx.Err(), context.Canceled) {
			t.Errorf("err %v after cancel; want canceled", ctx.Err())
		}
	})
}

// startProcess starts argv and stops it when the test ends.
func startProcess(t *testing.T, argv ...string) *process.Process {
	t.Helper()
	p, err := process.Start(process.Command{Argv: argv, Env: os.Environ()})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = p.Stop(0) })
	return p
}

// TestRunDelay measures how long a group's processes waited for a CPU:
// two processes spinning on one CPU each wait about half the time, and
// the longest wait grows; a process that sleeps waits for none, however
// busy the machine.
func TestRunDelay(t *testing.T) {
	const enough = 200 * time.Millisecond
	t.Run("sharing a CPU", func(t *testing.T) {
		p := startProcess(t, "taskset", "-c", "0", "sh", "-c", "while :; do :; done & while :; do :; done")
		ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
		defer cancel()
		tick := time.NewTicker(50 * time.Millisecond)
		defer tick.Stop()
		for {
			if d, known := p.RunDelay(); known && d >= enough {
				return
			}
			select {
			case <-tick.C:
			case <-ctx.Done():
				d, known := p.RunDelay()
				t.Fatalf("two processes spinning on one CPU waited %s for it (known %t) in a minute; want %s or more", d, known, enough)
			}
		}
	})
	t.Run("sleeping", func(t *testing.T) {
		p := startProcess(t, "sleep", "60")
		before, known := p.RunDelay()
		if !known {
			t.Fatal("the run delay of a sleeping process is unknown")
		}
		time.Sleep(enough) // a span to measure, not a wait for readiness
		if after, _ := p.RunDelay(); after-before >= enough/2 {
			t.Errorf("a sleeping process waited %s for a CPU in %s; want next to none", after-before, enough)
		}
	})
	t.Run("gone", func(t *testing.T) {
		p := startProcess(t, "true")
		<-p.Done()
		if d, known := p.RunDelay(); known {
			t.Errorf("an exited process waited %s for a CPU; want unknown", d)
		}
	})
}

// TestStopGraceCountsStarvation: a process whose SIGTERM handler needs a
// little CPU (about 0.1 s alone) gets it within its grace though three
// busy loops share its CPU: the time it waited for the CPU stretches the
// grace, so it exits by itself (status 7) instead of being killed at the
// grace's end, as an agent's save-on-SIGTERM would on a busy machine —
// unless more busy processes beside the test slow it past its stretched
// grace, which the kill then comes after, not at the grace. One that ignores
// SIGTERM, asleep, waits for no CPU and is killed after its grace.
func TestStopGraceCountsStarvation(t *testing.T) {
	const grace = 400 * time.Millisecond
	t.Run("starved handler", func(t *testing.T) {
		startProcess(t, "taskset", "-c", "0", "sh", "-c", "while :; do :; done & while :; do :; done & while :; do :; done")
		p := startTrapping(t, "taskset", "-c", "0", "sh", "-c",
			`trap 'i=0; while [ $i -lt 150000 ]; do i=$((i+1)); done; exit 7' TERM; echo ready; while :; do sleep 0.05; done`)
		began := time.Now()
		if err := p.Stop(grace); err != nil {
			t.Fatal(err)
		}
		switch took := time.Since(began); {
		case !p.KilledAfterGrace() && p.ExitCode() == 7:
		case p.KilledAfterGrace() && took >= 2*grace:
			// More busy processes beside the test (make test beside busy
			// loops) slowed the handler past its stretched grace; the
			// grace was stretched all the same (without, the kill comes
			// at the grace).
			t.Logf("the handler was killed after its grace stretched to %s", took)
		default:
			t.Errorf("killed after the grace %t in %s, %s; want the handler to finish (exit 7), or its grace stretched past %s", p.KilledAfterGrace(), took, p.ExitDescription(), 2*grace)
		}
	})
	t.Run("ignores SIGTERM", func(t *testing.T) {
		p := startTrapping(t, "sh", "-c", "trap '' TERM; echo ready; while :; do sleep 0.05; done")
		if err := p.Stop(grace); err != nil {
			t.Fatal(err)
		}
		if !p.KilledAfterGrace() {
			t.Errorf("a process ignoring SIGTERM was not killed after its grace: %s", p.ExitDescription())
		}
	})
}

// startTrapping starts a shell that prints "ready" once its trap is set,
// and waits for that line.
func startTrapping(t *testing.T, argv ...string) *process.Process {
	t.Helper()
	r, w := io.Pipe()
	p, err := process.Start(process.Command{Argv: argv, Env: os.Environ(), Stdout: w})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = p.Stop(0); w.Close() })
	line, err := bufio.NewReader(r).ReadString('\n')
	if err != nil || line != "ready\n" {
		t.Fatalf("the shell's first line: %q, %v", line, err)
	}
	go func() { _, _ = io.Copy(io.Discard, r) }()
	return p
}
