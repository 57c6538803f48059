package run

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"runtime"
	"sync"
	"testing"
	"time"

	"github.com/replaycheck/replaycheck/internal/ctxwait"
	"github.com/replaycheck/replaycheck/internal/harness/history"
	"github.com/replaycheck/replaycheck/internal/harness/scenario"
	"github.com/replaycheck/replaycheck/internal/harness/target"
)

// cpuClock is a machine whose CPU times advance by idle and busy ticks at
// every sample.
type cpuClock struct {
	mu         sync.Mutex
	t          cpuTimes
	idle, busy uint64
	samples    int
}

func (c *cpuClock) sample() (cpuTimes, error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.samples++
	c.t.idle += c.idle
	c.t.total += c.idle + c.busy
	return c.t, nil
}

// TestCPUHeadroom: the first run starts at once on any machine; another
// starts on a machine idle enough, and waits (until its context ends) on a
// busy one.
func TestCPUHeadroom(t *testing.T) {
	tests := []struct {
		name       string
		idle, busy uint64
		running    int
		wantErr    error
	}{
		{"first run on a busy machine", 0, 100, 0, nil},
		{"second run on an idle machine", 60, 40, 1, nil},
		{"second run on a busy machine", 40, 60, 1, context.DeadlineExceeded},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			c := &cpuClock{idle: tt.idle, busy: tt.busy}
			a := CPUHeadroom{MinIdle: 0.5, Interval: time.Millisecond, sample: c.sample}
			ctx, cancel := context.WithTimeout(context.Background(), 50*time.Millisecond)
			defer cancel()
			if err := a.Admit(ctx, func() int { return tt.running }); !errors.Is(err, tt.wantErr) {
				t.Errorf("Admit = %v, want %v", err, tt.wantErr)
			}
			if tt.running > 0 && c.samples < 2 {
				t.Errorf("admitted after %d samples, want a measured interval (2 or more)", c.samples)
			}
		})
	}
}

// TestReadCPUTimes reads the CPU total of a /proc/stat (guest times are in
// user already), and refuses a file without it.
func TestReadCPUTimes(t *testing.T) {
	dir := t.TempDir()
	good, bad := filepath.Join(dir, "stat"), filepath.Join(dir, "bad")
	os.WriteFile(good, []byte("cpu  100 2 30 400 5 0 7 1 50 0\ncpu0 50 1 15 200 2 0 3 0 25 0\n"), 0o644)
	os.WriteFile(bad, []byte("intr 1 2 3\n"), 0o644)
	got, err := readCPUTimes(good)
	if err != nil || got != (cpuTimes{idle: 405, total: 545}) {
		t.Errorf("readCPUTimes = %+v, %v; want idle 405 of 545", got, err)
	}
	if _, err := readCPUTimes(bad); err == nil {
		t.Error("a file without the cpu line was read")
	}
}

// oneAtATime admits a run only when none is in flight.
type oneAtATime struct{ calls int }

func (a *oneAtATime) Admit(ctx context.Context, running func() int) error {
	a.calls++
	for running() > 0 {
		if err := ctxwait.Sleep(ctx, time.Millisecond); err != nil {
			return err
		}
	}
	return nil
}

// TestRunAdmission: Run asks the admission before each run that starts
// processes (a stdio scenario's) and holds the run back until it is
// admitted: with one admitted at a time, no two runs overlap although
// Parallel allows four. A run that starts none is not asked for.
func TestRunAdmission(t *testing.T) {
	ss, errs := scenario.Parse("slow.yaml", []byte(`
- name: slow follow-up over stdio
  request: {endpoint: chat}
  mcp: {transport: stdio}
  faults: {upstream: [{on: follow_up, delay: 20ms}]}
  repeat: 6
  expect: {writes: 1}
- name: over HTTP
  request: {endpoint: chat}
  expect: {writes: 1}
`))
	if len(errs) > 0 {
		t.Fatal(errs)
	}
	tg, err := target.ParseTarget("builtin:guarded")
	if err != nil {
		t.Fatal(err)
	}
	adm := &oneAtATime{}
	var mu sync.Mutex
	active, most := 0, 0
	hs, err := Run(ctxFor(t), ss, Options{Targets: []target.Target{tg}, Parallel: 4, Admission: adm,
		OnEvent: func(e Event) {
			if e.Kind != EventRunStarted || e.Scenario != ss[0].Name {
				return
			}
			mu.Lock()
			active++
			most = max(most, active)
			mu.Unlock()
		},
		OnHistory: func(_ int, h *history.History) {
			if h.Scenario != ss[0].Name {
				return
			}
			mu.Lock()
			active--
			mu.Unlock()
		},
	})
	if err != nil {
		t.Fatal(err)
	}
	if len(hs) != 7 || adm.calls != 6 || most != 1 {
		t.Errorf("%d histories, %d admissions, at most %d runs at once; want 7, 6, 1", len(hs), adm.calls, most)
	}
}

// TestDefaultAdmission: by default RunsPerCPU runs per CPU at once, and
// each run that starts processes starts as the CPU has room (CPUHeadroom)
// — unless one run at a time, or the caller's own Admission, is asked for.
func TestDefaultAdmission(t *testing.T) {
	builtin, err := target.ParseTarget("builtin:guarded")
	if err != nil {
		t.Fatal(err)
	}
	client, _ := writeTarget(t, "kind: client\nname: a-client\ncommand: [\"true\"]\n", nil)
	for _, tt := range []struct {
		name          string
		opts          Options
		wantParallel  int
		wantAdmission string // its type
	}{
		{"built-in", Options{Targets: []target.Target{builtin}}, RunsPerCPU * runtime.NumCPU(), "run.CPUHeadroom"},
		{"built-in one at a time", Options{Targets: []target.Target{builtin}, Parallel: 1}, 1, "<nil>"},
		{"client", Options{Targets: []target.Target{client}}, RunsPerCPU * runtime.NumCPU(), "run.CPUHeadroom"},
		{"client among others", Options{Targets: []target.Target{builtin, client}, Parallel: 4}, 4, "run.CPUHeadroom"},
		{"client one at a time", Options{Targets: []target.Target{client}, Parallel: 1}, 1, "<nil>"},
		{"client, the caller's admission", Options{Targets: []target.Target{client}, Admission: &oneAtATime{}}, RunsPerCPU * runtime.NumCPU(), "*run.oneAtATime"},
	} {
		t.Run(tt.name, func(t *testing.T) {
			got := tt.opts.withDefaults()
			if adm := fmt.Sprintf("%T", got.Admission); got.Parallel != tt.wantParallel || adm != tt.wantAdmission {
				t.Errorf("Parallel %d, Admission %s; want %d, %s", got.Parallel, adm, tt.wantParallel, tt.wantAdmission)
			}
		})
	}
}

// TestRunSharing: two Runs at once that share a Sharing of Max 1 run one
// run at a time between them, though each Run's Parallel allows four.
func TestRunSharing(t *testing.T) {
	ss, errs := scenario.Parse("share.yaml", []byte(`
- name: over HTTP
  request: {endpoint: chat}
  faults: {upstream: [{on: follow_up, delay: 20ms}]}
  repeat: 3
  expect: {writes: 1}
`))
	if len(errs) > 0 {
		t.Fatal(errs)
	}
	tg, err := target.ParseTarget("builtin:guarded")
	if err != nil {
		t.Fatal(err)
	}
	if most := mostAtOnceOfTwo(t, ss, Options{Targets: []target.Target{tg}, Parallel: 4, Sharing: &Sharing{Max: 1}}); most != 1 {
		t.Errorf("at most %d runs at once over both Runs, want 1", most)
	}
}

// mostAtOnceOfTwo makes two Runs of ss with opts at once and returns the
// most runs in flight at once over both.
func mostAtOnceOfTwo(t *testing.T, ss []*scenario.Scenario, opts Options) int {
	t.Helper()
	var mu sync.Mutex
	active, most := 0, 0
	opts.OnEvent = func(e Event) {
		if e.Kind == EventRunStarted {
			mu.Lock()
			active++
			most = max(most, active)
			mu.Unlock()
		}
	}
	opts.OnHistory = func(int, *history.History) {
		mu.Lock()
		active--
		mu.Unlock()
	}
	var wg sync.WaitGroup
	runErrs := make([]error, 2)
	for i := range runErrs {
		wg.Add(1)
		go func() {
			defer wg.Done()
			_, runErrs[i] = Run(ctxFor(t), ss, opts)
		}()
	}
	wg.Wait()
	if err := errors.Join(runErrs...); err != nil {
		t.Fatal(err)
	}
	return most
}

// TestRunSharingAdmits: two Runs at once that share a Sharing (no cap) ask
// their Admissions beside the runs in flight of both: with one admitted at
// a time, no two stdio runs of either overlap, though each Run's own count
// would let one of each run together; the count is back to none at the end.
func TestRunSharingAdmits(t *testing.T) {
	ss, errs := scenario.Parse("share.yaml", []byte(`
- name: slow follow-up over stdio
  request: {endpoint: chat}
  mcp: {transport: stdio}
  faults: {upstream: [{on: follow_up, delay: 20ms}]}
  repeat: 3
  expect: {writes: 1}
`))
	if len(errs) > 0 {
		t.Fatal(errs)
	}
	tg, err := target.ParseTarget("builtin:guarded")
	if err != nil {
		t.Fatal(err)
	}
	sharing := &Sharing{}
	most := mostAtOnceOfTwo(t, ss, Options{Targets: []target.Target{tg}, Parallel: 4, Admission: &oneAtATime{}, Sharing: sharing})
	if most != 1 {
		t.Errorf("at most %d runs at once over both Runs, want 1", most)
	}
	if n := sharing.running(); n != 0 {
		t.Errorf("%d runs in flight after both Runs ended, want 0", n)
	}
}

// gate holds every admission it is asked for until open is closed; asked
// is closed at the first.
type gate struct {
	asked, open chan struct{}
	once        sync.Once
}

func (g *gate) Admit(ctx context.Context, _ func() int) error {
	g.once.Do(func() { close(g.asked) })
	select {
	case <-g.open:
		return nil
	case <-ctx.Done():
		return ctx.Err()
	}
}

// TestSharingDoesNotHoldOtherRuns: while one Run's stdio run waits to be
// admitted, another Run sharing its Sharing runs its HTTP runs, which need
// no admission, to the end (builtin:guarded's fingerprint made 1 of 181
// runs in 8 minutes of a matrix when they waited behind the CLIs').
func TestSharingDoesNotHoldOtherRuns(t *testing.T) {
	parse := func(src string) []*scenario.Scenario {
		ss, errs := scenario.Parse("s.yaml", []byte(src))
		if len(errs) > 0 {
			t.Fatal(errs)
		}
		return ss
	}
	stdio := parse("name: over stdio\nrequest: {endpoint: chat}\nmcp: {transport: stdio}\nexpect: {writes: 1}\n")
	http := parse("name: over HTTP\nrequest: {endpoint: chat}\nrepeat: 3\nexpect: {writes: 1}\n")
	tg, err := target.ParseTarget("builtin:guarded")
	if err != nil {
		t.Fatal(err)
	}
	g := &gate{asked: make(chan struct{}), open: make(chan struct{})}
	sharing := &Sharing{}
	held := make(chan error, 1)
	go func() {
		_, err := Run(ctxFor(t), stdio, Options{Targets: []target.Target{tg}, Admission: g, Sharing: sharing})
		held <- err
	}()
	<-g.asked
	hs, err := Run(ctxFor(t), http, Options{Targets: []target.Target{tg}, Admission: g, Sharing: sharing})
	if err != nil || len(hs) != 3 {
		t.Fatalf("the HTTP runs beside a held stdio run: %d histories, %v; want 3", len(hs), err)
	}
	close(g.open)
	if err := <-held; err != nil {
		t.Fatal(err)
	}
}
