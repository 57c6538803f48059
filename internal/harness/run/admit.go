package run

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"os"
	"runtime"
	"strconv"
	"strings"
	"time"

	"github.com/replaycheck/replaycheck/internal/ctxwait"
)

// Admission decides when a run may start beside the running ones: Admit
// returns once it may (nil), or with ctx's error. running tells the number
// of runs in flight at each call (it drops as runs end); Run calls Admit one
// call at a time, only when it has a free place (Options.Parallel, and the
// lane of runs a fault holds), so an Admission bounds the runs below that
// cap, never above it.
type Admission interface {
	Admit(ctx context.Context, running func() int) error
}

// CPUHeadroom admits a run while the machine has a spare CPU: a run always
// starts when none is in flight; otherwise it starts when the share of the
// machine's CPU time spent idle, over the last Interval, is at least MinIdle
// — measured after the previous admission, so the runs it started show in
// the sample. It suits runs that cost CPU to start and then mostly wait (an
// agent CLI starting, then backing off): as many run at once as the machine
// holds without slowing the others' starts, which would change what they do
// (a client's own timeouts and deadlines run on the wall clock).
// It reads /proc/stat; where that is missing (not Linux), it admits a run
// whenever NumCPU are not already in flight.
type CPUHeadroom struct {
	// MinIdle is the idle share of all CPUs (0–1) a new run needs; 0 means
	// one CPU's worth (1/NumCPU), at most a half.
	MinIdle float64
	// Interval is how long each CPU sample lasts; 0 means 300ms.
	Interval time.Duration

	// sample reads the CPU times; nil reads /proc/stat.
	sample func() (cpuTimes, error)
}

// Admit waits until a run may start (see CPUHeadroom).
func (a CPUHeadroom) Admit(ctx context.Context, running func() int) error {
	if running() == 0 {
		return ctx.Err()
	}
	minIdle, every, sample := a.MinIdle, a.Interval, a.sample
	if minIdle <= 0 {
		minIdle = min(1/float64(runtime.NumCPU()), 0.5)
	}
	if every <= 0 {
		every = 300 * time.Millisecond
	}
	if sample == nil {
		sample = func() (cpuTimes, error) { return readCPUTimes("/proc/stat") }
	}
	before, err := sample()
	if errors.Is(err, os.ErrNotExist) {
		for running() >= runtime.NumCPU() {
			if err := ctxwait.Sleep(ctx, every); err != nil {
				return err
			}
		}
		return ctx.Err()
	}
	if err != nil {
		return err
	}
	for {
		if err := ctxwait.Sleep(ctx, every); err != nil {
			return err
		}
		if running() == 0 {
			return nil
		}
		after, err := sample()
		if err != nil {
			return err
		}
		if total := after.total - before.total; total > 0 && float64(after.idle-before.idle)/float64(total) >= minIdle {
			return nil
		}
		before = after
	}
}

// cpuTimes are the machine's CPU times since boot, in clock ticks: idle
// (idle and waiting on I/O) and in all.
type cpuTimes struct{ idle, total uint64 }

// readCPUTimes reads the first line of /proc/stat (the sum over all CPUs:
// "cpu user nice system idle iowait irq softirq steal …").
func readCPUTimes(path string) (cpuTimes, error) {
	f, err := os.Open(path)
	if err != nil {
		return cpuTimes{}, err
	}
	defer f.Close()
	line, err := bufio.NewReader(f).ReadString('\n')
	if err != nil {
		return cpuTimes{}, fmt.Errorf("reading %s: %w", path, err)
	}
	fields := strings.Fields(line)
	if len(fields) < 5 || fields[0] != "cpu" {
		return cpuTimes{}, fmt.Errorf("reading %s: the first line is not the CPU total: %q", path, line)
	}
	var t cpuTimes
	// Guest times (fields 9 and 10) are already counted in user and nice.
	for i, s := range fields[1:min(len(fields), 9)] {
		n, err := strconv.ParseUint(s, 10, 64)
		if err != nil {
			return cpuTimes{}, fmt.Errorf("reading %s: field %d: %w", path, i+1, err)
		}
		t.total += n
		if i == 3 || i == 4 { // idle, iowait
			t.idle += n
		}
	}
	return t, nil
}
