// Package run runs scenarios against targets: it starts the fakes on
// loopback listeners (fakes.go) and the targets (package target) wired to
// them, schedules the scenario runs (run.go), and runs each one (one.go): it
// arms the fakes under a run token of its own, sends the scenario's requests
// with a deadline, and collects what the fakes saw for that token into a
// history. It does not judge; package rules does.
package run

import (
	"context"
	"fmt"
	"log/slog"
	"regexp"
	"runtime"
	"slices"
	"sort"
	"strconv"
	"sync"
	"time"

	"github.com/replaycheck/replaycheck/fakes/fault"
	"github.com/replaycheck/replaycheck/fakes/gateway"
	"github.com/replaycheck/replaycheck/fakes/ledger"
	"github.com/replaycheck/replaycheck/internal/fakepair"
	"github.com/replaycheck/replaycheck/internal/harness/history"
	"github.com/replaycheck/replaycheck/internal/harness/rules"
	"github.com/replaycheck/replaycheck/internal/harness/scenario"
	"github.com/replaycheck/replaycheck/internal/harness/target"
	"github.com/replaycheck/replaycheck/internal/linefile"
	"github.com/replaycheck/replaycheck/internal/runtoken"
	"github.com/replaycheck/replaycheck/internal/wire"
)

// DefaultTimeout bounds one scenario run when neither the scenario nor the
// options set a timeout.
const DefaultTimeout = 30 * time.Second

// RunsPerCPU is the default number of runs at once per CPU: a run mostly
// waits (on the target, on a fault's hold: a linger, a Retry-After, a slow
// tool) and computes little.
const RunsPerCPU = 8

// Options configure Run. The zero value runs on no target.
type Options struct {
	// Targets are the systems under test; every scenario runs on each.
	Targets []target.Target
	// Parallel is the number of scenario runs at once; 0 means RunsPerCPU
	// per CPU, and as many again for runs a fault holds (see holdLane). For
	// runs that start processes (spawns) it is a cap: without an Admission
	// of the caller's, they start only as the machine has a spare CPU
	// (CPUHeadroom), so the processes do not slow each other's work (the
	// target's timeouts run on the wall clock: crowded, a client or a stdio
	// server behaves otherwise than alone, and a verdict would depend on
	// Parallel and on the machine's load).
	Parallel int
	// Timeout bounds each scenario run; 0 means DefaultTimeout. A scenario's
	// own timeout wins.
	Timeout time.Duration
	// Repeat multiplies every scenario's runs (its repeat, 1 when unset) and
	// its allowed failures (expect.allow_failures), keeping the rate a
	// scenario asks for; 0 and 1 run each scenario as it says (see Runs).
	Repeat int
	// Seed is mixed into every run token; the same seed gives the same tokens.
	Seed string
	// Now is the clock; nil means time.Now.
	Now func() time.Time
	// OnHistory, when set, is called with each history as its run ends, one
	// call at a time, and with i, the history's index in the order Run
	// returns them in (see Run; the same with Forget).
	OnHistory func(i int, h *history.History)
	// Forget keeps no history once OnHistory has had it: Run returns none,
	// and a long repeat holds only what OnHistory keeps.
	Forget bool
	// Skip, when set, is asked with i (as OnHistory has it) as each run is
	// about to start, one call at a time with OnHistory; true leaves the
	// run out: it has no history (nil) and OnHistory is not called for it.
	Skip func(i int) bool
	// OnEvent, when set, is told what the runner does (targets starting,
	// runs starting; see Event), for a progress display. It may be called
	// from several goroutines at once.
	OnEvent func(Event)
	// Logger receives what the harness does; nil discards.
	Logger *slog.Logger
	// Admission, when set, decides when each run that starts processes
	// (see spawns) may start beside the others, below Parallel (see
	// CPUHeadroom); nil starts one whenever fewer than Parallel are in
	// flight. Other runs start without it.
	Admission Admission
	// Sharing, when set, caps this Run's runs in flight together with
	// those of the Runs at once that share it; nil shares nothing.
	Sharing *Sharing
	// Isolate runs every scenario as an isolated one (see
	// scenario.Scenario.Isolated): on fakes and an instance of its own, so
	// the target's MCP session steps (initialize, tools/list) are the run's
	// and recorded in its history. Runs start slower.
	Isolate bool
	// LedgerLines, when set, is an open file every run's ledger appends a
	// synced line to per write (`run --ledger`), beside the counts in
	// memory: a count of the writes the harness does not keep. The runs
	// share it; a run's lines are told apart by their entry where it
	// carries the run's token (the scripted model's alpha-TOKEN). Run
	// leaves it open.
	LedgerLines *linefile.File

	// holding is the places of the lane of runs a fault holds (holdLane),
	// beside Parallel's: Parallel's default, when it was not set.
	holding int
	// probe measures the harness's starvation for every run's history
	// (History.Harness); nil measures nothing.
	probe *latenessProbe
}

// withDefaults returns o with its zero fields set as Options says.
func (o Options) withDefaults() Options {
	if o.Now == nil {
		o.Now = time.Now
	}
	if o.Logger == nil {
		o.Logger = slog.New(slog.DiscardHandler)
	}
	if o.Parallel <= 0 {
		o.Parallel = RunsPerCPU * runtime.NumCPU()
		o.holding = o.Parallel
	}
	if o.Admission == nil && o.Parallel > 1 {
		o.Admission = CPUHeadroom{}
	}
	if o.Timeout <= 0 {
		o.Timeout = DefaultTimeout
	}
	return o
}

// Run runs every scenario on every target it applies to (see Applies), as
// many times as Runs says, and returns their histories in scenario order,
// then target order, then run order, whatever order the runs end in (none
// with Forget; nil for a run an interrupt or a harness failure kept from
// ending): a caller finds a run's history by its place. The runs of a
// repeated scenario run in parallel like any others, each with a token of
// its own, and their histories say which run they are (History.Repetition),
// each made only as a worker takes it. A scenario
// that hangs or fails ends as a history with Error set, and so does an
// isolated scenario whose own target instance does not start; Run itself
// fails only when the harness cannot run (a fake cannot start, a target
// instance that scenarios share does not, or a target finds it cannot run
// at all, see target.Instance.CannotRun: then no further run starts, and the run
// that found it has no history), or, before anything runs, when there are
// more than MaxRuns runs (a *TooManyRunsError).
//
// Targets whose fakes listen on fixed addresses, or whose started process
// listens on a fixed port, run after the others, on fakes of their own: first
// their shared scenarios, then their isolated ones one at a time.
func Run(ctx context.Context, scenarios []*scenario.Scenario, opts Options) ([]*history.History, error) {
	opts = opts.withDefaults()
	total, err := Count(scenarios, opts.Targets, opts.Repeat)
	if err != nil {
		return nil, err
	}
	// A pair is a scenario on a target; its runs become jobs only as the
	// workers take them, so a long repeat holds no job list.
	var pairs []pair
	next := 0
	for _, s := range scenarios {
		for _, t := range opts.Targets {
			if !Applies(s, t) {
				continue
			}
			n, allow := Runs(s, opts.Repeat)
			pairs = append(pairs, pair{s: s, t: t, first: next, n: n, allow: allow})
			next += n
		}
	}
	var out []*history.History
	if !opts.Forget {
		out = make([]*history.History, total)
	}
	if total == 0 {
		return out, nil
	}
	opts.probe = startProbe()
	defer opts.probe.stop()
	r := &runner{opts: opts, out: out}
	// Groups: the targets that share port-0 fakes, then each exclusive target.
	var free []pair
	exclusive := map[target.Target][]pair{}
	var order []target.Target
	for _, p := range pairs {
		if !p.t.Traits().Exclusive {
			free = append(free, p)
			continue
		}
		if _, ok := exclusive[p.t]; !ok {
			order = append(order, p.t)
		}
		exclusive[p.t] = append(exclusive[p.t], p)
	}
	err = r.group(ctx, free, target.FakeAddrs{}, false)
	for _, t := range order {
		if err != nil || ctx.Err() != nil || r.failed() {
			break
		}
		err = r.group(ctx, exclusive[t], t.Traits().Fakes, true)
	}
	if err != nil {
		return out, err
	}
	if r.harnessErr != nil {
		return out, r.harnessErr
	}
	if err := ctx.Err(); err != nil {
		return out, fmt.Errorf("run interrupted: %w", err)
	}
	return out, nil
}

// Applies reports whether scenario s runs on target t: a scenario that
// expects something of a client (expect.client) runs on client targets
// only, and a client target runs only those (the others describe app
// requests, gateway knobs and guardrails that a client writes itself or
// does not have); and a scenario whose app requests use an endpoint the
// target does not serve (gemini on the built-in gateway) does not run on
// it (target.Unserved), nor one over an MCP transport the target does not
// speak (target.Speaks: a stdio scenario on a proxy), nor, on a client
// target that declares the dialects it calls, one whose faults act only on
// others (target.Calls), nor one that kills the target (faults.target)
// on a target that cannot be resumed (target.Traits.Resumes).
func Applies(s *scenario.Scenario, t target.Target) bool {
	if !target.Speaks(t, s.MCPTransport()) || (s.Resumes() && !t.Traits().Resumes) {
		return false
	}
	if t.Traits().Client {
		return s.Expect.Client != nil && target.Calls(t, s)
	}
	return s.Expect.Client == nil && target.Unserved(t, s.AllRequests()) == ""
}

type job struct {
	s *scenario.Scenario
	t target.Target
	i int
	// rep places the job among the runs of a repeated scenario; nil when
	// it runs once.
	rep *history.Repetition
	// try counts the earlier tries of the run the harness was starved in
	// (see starvedTries).
	try int
}

// token is j's run token; a run tried again has one of its own, so nothing
// an earlier try left behind counts in it.
func (j job) token(seed string) string {
	token := runToken(seed, j.s, j.t, j.rep)
	if j.try == 0 {
		return token
	}
	return runtoken.Derive(token, "try", strconv.Itoa(j.try))
}

// pair is a scenario on a target and its runs: n of them, of which allow may
// fail, the first of index first among all of Run's.
type pair struct {
	s        *scenario.Scenario
	t        target.Target
	first, n int
	allow    int
}

// job returns the k-th run (from 1) of p.
func (p pair) job(k int) job {
	j := job{s: p.s, t: p.t, i: p.first + k - 1}
	if p.n > 1 {
		j.rep = &history.Repetition{Index: k, Of: p.n, AllowFailures: p.allow}
	}
	return j
}

// runner runs groups of jobs and collects their histories.
type runner struct {
	opts       Options
	mu         sync.Mutex
	out        []*history.History
	harnessErr error
}

// group runs jobs on one pair of fakes at addrs (port 0 where empty) and one
// instance per target. Isolated scenarios get fakes and an instance of their
// own: alongside the shared ones, or, when serial, after them one at a time.
func (r *runner) group(ctx context.Context, pairs []pair, addrs target.FakeAddrs, serial bool) error {
	var shared, isolated []pair
	for _, p := range pairs {
		if r.isolated(p.s, p.t) {
			isolated = append(isolated, p)
		} else {
			shared = append(shared, p)
		}
	}
	do := func(env *fakepair.Pair, instances map[target.Target]target.Instance) func(j job) (*history.History, error) {
		return func(j job) (*history.History, error) {
			if r.isolated(j.s, j.t) {
				return runIsolated(ctx, j, r.opts, addrs)
			}
			inst := instances[j.t]
			h := runOne(ctx, j, env, inst, r.opts)
			if err := inst.CannotRun(); err != nil {
				return nil, err
			}
			return h, nil
		}
	}
	first := pairs
	if serial {
		first = shared
	}
	var env *fakepair.Pair
	instances := map[target.Target]target.Instance{}
	if len(shared) > 0 {
		var err error
		if env, err = startFakes(fakepair.Config{}, r.opts, addrs); err != nil {
			return err
		}
		for _, p := range shared {
			if _, ok := instances[p.t]; ok {
				continue
			}
			inst, err := startTarget(ctx, r.opts, p.t, "", fakesOf(env), nil)
			if err != nil {
				env.Close()
				closeAll(instances)
				return err
			}
			instances[p.t] = inst
		}
	}
	r.pool(ctx, first, r.opts.Parallel, r.opts.holding, do(env, instances))
	if env != nil {
		// The fakes first: closing the ledger ends calls a target left
		// running, so the target's own close need not wait for them.
		env.Close()
		closeAll(instances)
	}
	if serial {
		r.pool(ctx, isolated, 1, 0, do(nil, nil))
	}
	return nil
}

// failed reports whether a run found that the harness or a target cannot
// run: no further run starts.
func (r *runner) failed() bool {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.harnessErr != nil
}

// isolated reports whether s runs on t on fakes and an instance of its own:
// every scenario does on a target that forwards to a real MCP server or
// chooses ledger settings (target.Traits.Ledger).
func (r *runner) isolated(s *scenario.Scenario, t target.Target) bool {
	tr := t.Traits()
	return r.opts.Isolate || s.Isolated() || tr.Forward != nil || tr.Ledger != (scenario.LedgerSettings{})
}

// starvedTries is how many times a run is tried at most while the harness
// is starved in it (rules.Result.Starved): a run that cannot be judged for
// the machine's load alone is tried again, admitted as a new run would be
// past the free ones (latenessProbe.settled), so a busy moment does not
// decide a verdict. The last try's history is the run's, with a note for
// each earlier one.
const starvedTries = 3

// holdLane is the expected wait (expectedWait) from which a run is held by
// its faults more than it works: a Retry-After, a slow or hung tool, a
// lingering cut, each fired several times. Such runs take the places of a
// lane of their own when it has any, so they do not keep the others from
// the CPU they leave idle.
const holdLane = time.Second

// pool runs the runs of pairs, longest expected wait first, on up to
// parallel workers, and those held by their faults (holdLane) on up to
// holding more when holding is not 0.
func (r *runner) pool(ctx context.Context, pairs []pair, parallel, holding int, do func(job) (*history.History, error)) {
	// Longest first: a scenario that must wait (a Retry-After, a slow tool)
	// starts early, so the others fill the other workers meanwhile.
	order := slices.Clone(pairs)
	sort.SliceStable(order, func(a, b int) bool { return expectedWait(order[a].s) > expectedWait(order[b].s) })
	lanes := [][]pair{order}
	if holding > 0 {
		held := sort.Search(len(order), func(i int) bool { return expectedWait(order[i].s) < holdLane })
		lanes = [][]pair{order[:held], order[held:]}
	}
	inFlight := 0 // runs started and not ended, under r.mu
	var admitting sync.Mutex
	var wg sync.WaitGroup
	for i, lane := range lanes {
		places := parallel
		if i == 0 && len(lanes) > 1 {
			places = holding
		}
		wg.Add(1)
		go func() {
			defer wg.Done()
			r.feed(ctx, lane, places, &inFlight, &admitting, do)
		}()
	}
	wg.Wait()
}

// feed runs the runs of pairs, in order, on up to parallel workers; each
// run is admitted (with admitting held: an Admission is asked one call at a
// time) as it would start, and counted in inFlight.
func (r *runner) feed(ctx context.Context, pairs []pair, parallel int, inFlight *int, admitting *sync.Mutex, do func(job) (*history.History, error)) {
	runs := 0
	for _, p := range pairs {
		runs += p.n
	}
	if runs == 0 {
		return
	}
	// A place per run at once; with an Admission, a run takes its place
	// and then waits to be admitted, so it is admitted as it would start.
	places := make(chan struct{}, min(parallel, runs))
	var wg sync.WaitGroup
feed:
	for _, p := range pairs {
		for k := 1; k <= p.n; k++ {
			select {
			case places <- struct{}{}:
			case <-ctx.Done():
				break feed
			}
			if ctx.Err() != nil || r.failed() {
				break feed
			}
			if err := r.opts.Sharing.take(ctx); err != nil {
				break feed
			}
			j := p.job(k)
			admitting.Lock()
			err := r.admit(ctx, j, inFlight)
			admitting.Unlock()
			if err != nil {
				r.opts.Sharing.free()
				if ctx.Err() == nil {
					r.fail(err)
				}
				break feed
			}
			if r.skip(j, inFlight) {
				r.opts.Sharing.free()
				<-places
				continue
			}
			wg.Add(1)
			go func(j job) {
				defer wg.Done()
				r.one(ctx, j, do, inFlight)
				r.mu.Lock()
				*inFlight--
				r.mu.Unlock()
				r.opts.Sharing.ended()
				r.opts.Sharing.free()
				<-places
			}(j)
		}
	}
	wg.Wait()
}

// admit waits for r.opts.Admission, if any, to admit j beside the runs in
// flight (all the sharing Runs', see Sharing) when j starts processes
// (spawns), then for the harness to serve this Run's inFlight runs without
// queueing them (see latenessProbe.settled), and counts it in.
func (r *runner) admit(ctx context.Context, j job, inFlight *int) error {
	own := r.running(inFlight)
	if a := r.opts.Admission; a != nil && spawns(j) {
		if err := r.opts.Sharing.admit(ctx, a, own); err != nil {
			return err
		}
	} else {
		r.opts.Sharing.started()
	}
	// The default --parallel's runs at once never crowded the harness:
	// beyond them, each waits to be served in time.
	if err := r.opts.probe.settled(ctx, own, RunsPerCPU*runtime.NumCPU()); err != nil {
		r.opts.Sharing.ended()
		return err
	}
	r.mu.Lock()
	*inFlight++
	r.mu.Unlock()
	return nil
}

// running returns a func that tells the runs in flight, counted in
// inFlight under r.mu.
func (r *runner) running(inFlight *int) func() int {
	return func() int {
		r.mu.Lock()
		defer r.mu.Unlock()
		return *inFlight
	}
}

// spawns reports whether run j starts processes that do the target's or
// the harness's work while the target's clocks run: a client target's
// command, the stdio MCP server a stdio scenario's target spawns (a
// ledger-stdio process, and another for each respawn), or the target's
// lives in a scenario that kills and resumes it.
func spawns(j job) bool {
	return j.t.Traits().Client || j.s.MCPTransport() == wire.MCPTransportStdio || j.s.Resumes()
}

// skip reports whether r.opts.Skip leaves out run j, admitted and counted
// in inFlight, and then counts it out.
func (r *runner) skip(j job, inFlight *int) bool {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.opts.Skip == nil || !r.opts.Skip(j.i) {
		return false
	}
	*inFlight--
	r.opts.Sharing.ended()
	return true
}

// fail records that the harness cannot run: no further run starts.
func (r *runner) fail(err error) {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.harnessErr == nil {
		r.harnessErr = err
	}
}

// one makes run j, again while the harness was starved in it (see
// starvedTries), and hands its last history on.
func (r *runner) one(ctx context.Context, j job, do func(job) (*history.History, error), inFlight *int) {
	r.opts.event(Event{Kind: EventRunStarted, Target: j.t.Name(), Scenario: j.s.Name, Run: j.rep, At: r.opts.Now()})
	h, err := do(j)
	var starved []string
	for err == nil && h != nil && j.try+1 < starvedTries {
		why := rules.Evaluate(h).Starved()
		if why == "" || r.failed() || r.opts.probe.settled(ctx, r.running(inFlight), RunsPerCPU*runtime.NumCPU()) != nil {
			break
		}
		j.try++
		starved = append(starved, fmt.Sprintf("try %d (token %s) could not be judged, so the run was tried again: %s", j.try, h.Token, why))
		h, err = do(j)
	}
	if h != nil {
		h.Notes = append(h.Notes, starved...)
	}
	if h != nil {
		r.opts.Logger.Debug("scenario run ended", "scenario", h.Scenario, "target", h.Target, "token", h.Token, "duration", h.Duration.D(), "error", h.Error)
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	if err != nil && r.harnessErr == nil {
		r.harnessErr = err
	}
	if r.out != nil {
		r.out[j.i] = h
	}
	if h != nil && r.opts.OnHistory != nil {
		r.opts.OnHistory(j.i, h)
	}
}

// expectedWait estimates how long s's faults hold its run back
// (upstream.Fault.Hold, ledger.Fault.Hold: a hung server until the
// gateway's tool timeout), a fault that fires always counted retryGuess
// times: a target retries it; and, over stdio, the start of the server
// process (serverStart). It only orders the runs.
func expectedWait(s *scenario.Scenario) time.Duration {
	firings := func(t fault.Times) time.Duration {
		if t == fault.Always {
			return retryGuess
		}
		return 1
	}
	var d time.Duration
	if s.MCPTransport() == wire.MCPTransportStdio {
		d += serverStart
	}
	for _, f := range s.Faults.Upstream {
		d += f.Hold() * firings(f.Times)
	}
	giveUp := gateway.DefaultToolTimeout
	if s.Gateway != nil && s.Gateway.ToolTimeout > 0 {
		giveUp = s.Gateway.ToolTimeout.D()
	}
	for _, f := range s.Faults.MCP {
		d += f.Hold(giveUp) * firings(f.Times)
	}
	return d
}

// retryGuess is how many times expectedWait counts a fault that fires
// always: a few retries.
const retryGuess = 4

// serverStart is what expectedWait counts for a stdio MCP server's start:
// a process of its own (50-70 ms of CPU for replaycheck ledger-stdio, more
// wall time when the CPU is busy). Runs over stdio start before the runs in process, which fill the
// CPU beside them, instead of ending a suite or sweep all together.
const serverStart = 100 * time.Millisecond

// runIsolated runs s on fakes and an instance of t of its own, for
// scenarios that set ledger-global annotations or settings (the scenario's
// mcp.protocol and mcp.honour_cancellation over its target's), gateway knobs
// or MCP faults.
// The run owns its ledger: every MCP message arriving there, the target's
// session steps included (from its start on), is the run's. An instance, or
// a forwarded MCP server of the run's own, that does not start fails this
// run only: its history's Error holds the start error with the target's or
// the server's last output; an interrupt during the start is returned as an
// error.
func runIsolated(ctx context.Context, j job, opts Options, addrs target.FakeAddrs) (*history.History, error) {
	s, t := j.s, j.t
	token := j.token(opts.Seed)
	begin := opts.Now()
	fwd, err := forwardOf(&j, token)
	if err != nil {
		h := newHistory(s, t, nil, token, begin)
		h.Repetition = j.rep
		h.Error = err.Error()
		return h, nil
	}
	s = j.s
	cfg := s.MCP.Ledger().Over(t.Traits().Ledger).Config(ledger.Config{Annotations: s.Annotations, Forward: fwd})
	env, err := startFakes(fakepair.Config{Ledger: cfg, Owner: token}, opts, addrs)
	if err != nil {
		if fwd == nil || ctx.Err() != nil {
			return nil, err
		}
		// The run's own MCP server did not start: this run fails, with
		// what the server said and how it exited.
		h := newHistory(s, t, nil, token, begin)
		h.Repetition = j.rep
		h.Error = err.Error()
		h.Duration = history.Duration(opts.Now().Sub(begin))
		return h, nil
	}
	fakes := fakesOf(env)
	fakes.MCPTransport = s.MCPTransport()
	fakes.Killable = s.Resumes()
	inst, err := startTarget(ctx, opts, t, s.Name, fakes, s.Gateway)
	if err != nil {
		env.Close()
		if ctx.Err() != nil {
			return nil, err
		}
		h := newHistory(s, t, nil, token, begin)
		h.Repetition = j.rep
		h.Error, h.NotStarted = err.Error(), true
		h.Duration = history.Duration(opts.Now().Sub(begin))
		return h, nil
	}
	h := runOne(ctx, j, env, inst, opts)
	// The fakes first: closing the ledger ends calls a target left running,
	// so the target's own close need not wait for them.
	env.Close()
	inst.Close()
	if err := inst.CannotRun(); err != nil {
		return nil, err
	}
	return h, nil
}

// forwardOf returns the real MCP server j's run with token forwards to:
// the scenario's own (mcp.relay, mcp.command with its {{token}} and
// {{entry}} filled in, mcp.cassette), else its target's (see
// target.Traits.Forward), for which j's scenario becomes the one the target
// runs (target.Forward.Scenario); nil when there is none.
func forwardOf(j *job, token string) (*ledger.Forward, error) {
	if fwd := j.s.MCP.Forward(); fwd != nil {
		return target.RenderForward(fwd, token)
	}
	tf := j.t.Traits().Forward
	if tf == nil {
		return nil, nil
	}
	if len(j.s.Annotations) > 0 {
		return nil, fmt.Errorf("target %s forwards to a real MCP server, which advertises its own annotations; the scenario's annotations are the ledger's tools' hints", j.t.Name())
	}
	j.s = tf.Scenario(j.s)
	fwd, err := tf.For(token)
	if err != nil {
		return nil, fmt.Errorf("target %s: %w", j.t.Name(), err)
	}
	return fwd, nil
}

func closeAll(m map[target.Target]target.Instance) {
	for _, inst := range m {
		_ = inst.Close()
	}
}

// Selection picks scenarios to run. The zero value picks all.
type Selection struct {
	// Filter, when not nil, keeps scenarios whose name matches.
	Filter *regexp.Regexp
	// Tags, when not empty, keeps scenarios that have any of them.
	Tags []string
	// Targets, when not empty, keeps scenarios that apply to any of them
	// (see Applies), before sharding: the shards split the scenarios that
	// run, so an empty shard is one past the end of the suite.
	Targets []target.Target
	// Shard (1-based) of Shards keeps a deterministic slice of the
	// scenarios sorted by name; Shards 0 keeps all.
	Shard, Shards int
}

// Select returns the scenarios sel picks, in their original order.
func Select(all []*scenario.Scenario, sel Selection) []*scenario.Scenario {
	var kept []*scenario.Scenario
	for _, s := range all {
		if sel.Filter != nil && !sel.Filter.MatchString(s.Name) {
			continue
		}
		if len(sel.Tags) > 0 && !slices.ContainsFunc(sel.Tags, func(t string) bool { return slices.Contains(s.Tags, t) }) {
			continue
		}
		if len(sel.Targets) > 0 && !slices.ContainsFunc(sel.Targets, func(t target.Target) bool { return Applies(s, t) }) {
			continue
		}
		kept = append(kept, s)
	}
	if sel.Shards <= 1 {
		return kept
	}
	names := make([]string, len(kept))
	for i, s := range kept {
		names[i] = s.Name
	}
	sort.Strings(names)
	mine := map[string]bool{}
	for i, n := range names {
		if i%sel.Shards == sel.Shard-1 {
			mine[n] = true
		}
	}
	var out []*scenario.Scenario
	for _, s := range kept {
		if mine[s.Name] {
			out = append(out, s)
		}
	}
	return out
}
