// Package explore finds replay bugs nobody wrote a scenario for. It runs a
// base scenario clean, maps every point where a fault can go (Map), runs the
// base once per point and fault kind (Kinds) — and, within a budget, pairs of
// faults or seeded random schedules — judges every rule of the catalogue,
// reduces each failure to its minimal fault schedule, re-runs it to tell a
// bug from a flake, and renders it as a scenario (Finding.YAML).
//
// The fault kinds are the probes each fault kind's file in the fakes declares
// (upstream.Probes, ledger.Probes): a new kind is swept once its fake's
// checklist is done, with nothing to add here — unless its probe needs a new
// kind of point (a fault.Site, and its case in Kind.applies).
//
// Runs go through package run, so they are parallel, isolated and attributed
// exactly like `replaycheck run`.
package explore

import (
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"hash/fnv"
	"math/rand/v2"
	"regexp"
	"slices"
	"strings"
	"time"

	"github.com/replaycheck/replaycheck/fakes/fault"
	"github.com/replaycheck/replaycheck/internal/harness/history"
	"github.com/replaycheck/replaycheck/internal/harness/rules"
	"github.com/replaycheck/replaycheck/internal/harness/run"
	"github.com/replaycheck/replaycheck/internal/harness/scenario"
	"github.com/replaycheck/replaycheck/internal/harness/target"
	"github.com/replaycheck/replaycheck/internal/wire"
)

// Defaults of Options.
const (
	DefaultMaxRuns = 2000
	DefaultConfirm = 3
	DefaultDepth   = 1
)

// Options configure Explore. Target is required.
type Options struct {
	// Target is the system explored.
	Target target.Target
	// Kinds are the fault kinds swept; nil means every non-optional kind.
	Kinds []Kind
	// Points, when set, keeps only the points whose description
	// (Point.String) it matches.
	Points *regexp.Regexp
	// Depth 1 arms one fault per run; 2 adds every pair of them.
	Depth int
	// Fingerprint sweeps only the model requests themselves, each fault on
	// every attempt (times: always), and fills Report.Fingerprint: the
	// target's retry policy. Kinds nil then means FingerprintKinds.
	Fingerprint bool
	// Random adds this many random schedules of two or three faults.
	Random int
	// Seed orders the sampled pairs and draws the random schedules; it is
	// also the seed of the run tokens. The same seed gives the same sweep.
	Seed string
	// MaxRuns bounds the sweep's runs (single faults first, then pairs,
	// then random schedules); 0 means DefaultMaxRuns.
	MaxRuns int
	// Shard and Shards select every Shards-th run of the sweep, starting at
	// Shard (1-based); zero Shards runs all.
	Shard, Shards int
	// Parallel and Timeout are run.Options': the runs at once (0 means
	// run.RunsPerCPU per CPU; on a client target a cap, each run starting
	// as the machine has a spare CPU) and the bound of each run.
	Parallel int
	Timeout  time.Duration
	// Sharing is run.Options': a cap on the runs in flight of this sweep
	// and of the sweeps at once beside it (a matrix's agents); nil caps
	// nothing more.
	Sharing *run.Sharing
	// Decides, when set, reports whether a sweep run of a single fault
	// decides its fault kind: the kind's single faults planned after it
	// cannot change what the caller makes of the kind, so those not yet
	// started are left out, and those that ran are dropped, so that the
	// report does not depend on the order the runs end in
	// (Report.AfterDeciding counts both). Nil runs the whole plan.
	Decides func(Cell) bool
	// Prune, when set, leaves out of the plan each single fault of a base
	// it reports true for (before MaxRuns and the shard are applied): a
	// run whose outcome the caller already knows.
	Prune func(b Base, a Armed) bool
	// Settings are the durations of the stall, slow, linger and dribble
	// kinds; a zero Stall takes fault.DefaultSettings', a zero Slow, Linger
	// or Dribble scales to each base's clean run (see paced).
	Settings fault.Settings
	// Confirm is how many times a minimal failure is re-run; a failure that
	// does not reproduce every time is flaky. 0 means DefaultConfirm.
	Confirm int
	// Confirms, when set, reports whether the finding of cells (indexes in
	// rep.Cells: the failing cells it groups) is confirmed; one that is not
	// has no confirming runs (Tries 0), so it is not written. Nil confirms
	// every finding.
	Confirms func(rep *Report, cells []int) bool
	// OnProgress, when set, is told about each run as it ends, one call at
	// a time.
	OnProgress func(Progress)
	// Now is the clock; nil means time.Now.
	Now func() time.Time
}

// Progress is the state of the sweep after one more run.
type Progress struct {
	// Phase is clean, sweep, shrink or confirm.
	Phase string
	// Done and Total count the runs of the phase (Total less those
	// Options.Decides left out as it went); Failed the failing ones.
	Done, Total, Failed int
	// Elapsed is the time since the phase began.
	Elapsed time.Duration
}

// Report is what a sweep found.
type Report struct {
	// Version names the JSON format.
	Version int    `json:"version"`
	Target  string `json:"target"`
	Seed    string `json:"seed"`
	// Settings are the durations of the stall, slow, linger and dribble
	// kinds as asked for; a zero Slow, Linger or Dribble scaled to each
	// base's clean run (Base.Settings).
	Settings fault.Settings `json:"settings"`
	// Bases are the base scenarios with their fault points.
	Bases []Base `json:"bases"`
	// Cells are the sweep's runs, in sweep order.
	Cells []Cell `json:"cells"`
	// Findings are the distinct minimal failures, confirmed ones first.
	Findings []Finding `json:"findings"`
	// Fingerprint is the target's retry policy (Options.Fingerprint).
	Fingerprint []FingerprintRow `json:"fingerprint,omitempty"`
	// Skipped counts the runs --max-runs left out; Unrun those an interrupt
	// left out (Interrupted is then set).
	Skipped int `json:"skipped,omitempty"`
	Unrun   int `json:"unrun,omitempty"`
	// AfterDeciding counts, per fault kind, the single faults planned after
	// the run that decided their kind (Options.Decides), which have no
	// cell; nil when there were none.
	AfterDeciding map[string]int `json:"after_deciding,omitempty"`
	Interrupted   bool           `json:"interrupted,omitempty"`
	// BaseFailed, when not nil, is the base that failed without any fault
	// and its clean run (the target's start included): nothing was swept.
	BaseFailed *BaseFailedError `json:"base_failed,omitempty"`
	// Runs counts every run made: clean, sweep, shrink and confirm.
	Runs int              `json:"runs"`
	Wall history.Duration `json:"wall"`
}

// FormatVersion is the current Report JSON format.
const FormatVersion = 1

// Base is one base scenario and the fault points of its clean run.
type Base struct {
	Name   string  `json:"name"`
	File   string  `json:"file,omitempty"`
	Points []Point `json:"points"`
	// Settings are the durations the kinds used in this base's cells.
	Settings fault.Settings `json:"settings"`
	// Note says what limits the sweep of this base, for example a clean run
	// in which no tool call reached the server.
	Note string `json:"note,omitempty"`
}

// BaseSettings returns the durations the kinds used in the cells of the
// named base: its Base.Settings, or the report's with the defaults for a
// base it does not list.
func (r *Report) BaseSettings(name string) fault.Settings {
	for _, b := range r.Bases {
		if b.Name == name {
			return b.Settings
		}
	}
	return paced(r.Settings, nil, 0)
}

// Cell is one run of the sweep: a base with a fault schedule.
type Cell struct {
	Base     string   `json:"base"`
	Schedule Schedule `json:"schedule"`
	// Verdict is the run's verdict (Result.Verdict): fail when a rule failed
	// or the run did not complete, pass when some rule passed and none
	// failed, unknown otherwise (every rule is expected if judged).
	Verdict rules.Status `json:"verdict"`
	// Failed names the failing checks.
	Failed []string `json:"failed,omitempty"`
	// Writes are the ledger writes; Statuses the answers the app got.
	Writes   int   `json:"writes"`
	Statuses []int `json:"statuses,omitempty"`
	// Finding is the 1-based index of the finding this cell reduces to; 0
	// for none.
	Finding int `json:"finding,omitempty"`
	// Result is the run's history and verdicts, for the run reports.
	Result rules.Result `json:"-"`
}

// Finding is one mechanism of failure (see Mechanism): the sweep's failing
// cells that show it, and the smallest of their minimal schedules as its
// reproduction.
type Finding struct {
	// Mechanism is the cause: the first rule broken, the fault family and
	// the step where it bites.
	Mechanism Mechanism `json:"mechanism"`
	// Base and Schedule are the reproduction: the minimal fault schedule
	// that makes the base fail.
	Base     string   `json:"base"`
	Schedule Schedule `json:"schedule"`
	// Failed names the checks the reproduction failed in every confirming
	// run; Rules those any of the finding's cells failed.
	Failed []string `json:"failed"`
	Rules  []string `json:"rules"`
	// Message is the reproduction's first failing verdict's message.
	Message string `json:"message"`
	// Writes are the ledger writes of the first confirming run, where the
	// base asks for LogicalCalls tool calls.
	Writes       int `json:"writes"`
	LogicalCalls int `json:"logical_calls"`
	// Reproduced of Tries confirming runs failed; Flaky when not all did,
	// or none was made (an interrupt, or Options.Confirms).
	Reproduced int  `json:"reproduced"`
	Tries      int  `json:"tries"`
	Flaky      bool `json:"flaky,omitempty"`
	// Cells counts the sweep's failing cells that show this mechanism;
	// CellIndexes are their indexes in Report.Cells, Bases and Kinds their
	// bases and fault kinds, in sweep order.
	Cells       int      `json:"cells"`
	CellIndexes []int    `json:"cell_indexes"`
	Bases       []string `json:"bases"`
	Kinds       []string `json:"kinds"`
	// File is where the finding's scenario was written, if it was.
	File string `json:"file,omitempty"`
	// Fix is what a fix looks like: the Fix of the mechanism's rule; ""
	// when the mechanism is no rule of the catalogue (a run that did not
	// complete).
	Fix string `json:"fix,omitempty"`

	base *scenario.Scenario
}

// BaseFailedError is returned when a base scenario fails without any fault:
// there is nothing to explore until it passes clean.
type BaseFailedError struct {
	Base   string       `json:"base"`
	Result rules.Result `json:"result"`
}

func (e *BaseFailedError) Error() string {
	if e.TargetNotStarted() {
		return fmt.Sprintf("the target could not start for base scenario %q: %s", e.Base, e.Result.History.Error)
	}
	var why []string
	for _, v := range e.Result.Verdicts {
		if v.Status == rules.Fail {
			why = append(why, v.Check+": "+v.Message)
		}
	}
	return fmt.Sprintf("base scenario %q fails without any fault (%s); nothing to explore until it passes clean", e.Base, strings.Join(why, "; "))
}

// TargetNotStarted reports that the base failed because the target did not
// start: the harness could not run it, no rule was judged.
func (e *BaseFailedError) TargetNotStarted() bool {
	return e.Result.History != nil && e.Result.History.NotStarted
}

// Explore sweeps the fault space of each base on opts.Target. It returns
// the report, with what was found so far when ctx ends early (Interrupted
// set), a *BaseFailedError when a base fails clean (the report's BaseFailed
// set too), or an error when the harness or the target cannot run.
func Explore(ctx context.Context, bases []*scenario.Scenario, opts Options) (*Report, error) {
	if opts.Target == nil {
		return nil, errors.New("explore: no target")
	}
	if len(bases) == 0 {
		return nil, errors.New("explore: no base scenario")
	}
	e := newExplorer(opts)
	start := e.opts.Now()
	rep := &Report{Version: FormatVersion, Target: opts.Target.Name(), Seed: e.opts.Seed, Settings: e.opts.Settings}
	defer func() { rep.Wall = history.Duration(e.opts.Now().Sub(start)) }()
	if err := Applicable(bases, opts.Target); err != nil {
		return nil, err
	}
	if err := distinctNames(bases); err != nil {
		return nil, err
	}

	maps, err := e.clean(ctx, bases, rep)
	if bf := (*BaseFailedError)(nil); errors.As(err, &bf) {
		rep.BaseFailed, rep.Runs = bf, e.runs
	}
	if err != nil || rep.Interrupted {
		return rep, err
	}
	todo := e.plan(bases, maps, rep)
	err = e.sweep(ctx, todo, rep)
	if e.opts.Fingerprint {
		rep.Fingerprint = Fingerprint(rep)
	}
	if err != nil || rep.Interrupted {
		return rep, err
	}
	if err := e.reduce(ctx, rep); err != nil {
		return rep, err
	}
	return rep, nil
}

// Applicable reports, as an error naming the first base that does not, whether
// every base runs on t: client scenarios (expect.client) on client targets,
// the others on the rest.
func Applicable(bases []*scenario.Scenario, t target.Target) error {
	for _, b := range bases {
		switch {
		case run.Applies(b, t):
		case t.Traits().Client:
			return fmt.Errorf("base scenario %q: target %s is a client, which runs only client scenarios (with expect.client)", b.Name, t.Name())
		case b.Expect.Client == nil:
			return fmt.Errorf("base scenario %q sends endpoint %s, which target %s does not serve", b.Name, target.Unserved(t, b.AllRequests()), t.Name())
		default:
			return fmt.Errorf("base scenario %q expects a client (expect.client), but target %s is not one", b.Name, t.Name())
		}
	}
	return nil
}

// distinctNames reports, as an error, two bases of the same name: the
// report tells its bases, cells and findings apart by name.
func distinctNames(bases []*scenario.Scenario) error {
	seen := map[string]bool{}
	for _, b := range bases {
		if seen[b.Name] {
			return fmt.Errorf("explore: two base scenarios named %q: the report tells bases apart by name", b.Name)
		}
		seen[b.Name] = true
	}
	return nil
}

// explorer holds a sweep's settings and what its runs found.
type explorer struct {
	opts  Options
	kinds map[string]Kind
	byKey map[string]*scenario.Scenario // base by name
	// known holds, per base and schedule, the result of its latest run.
	known map[string]rules.Result
	// settings holds, per base, the durations its cells use (paced).
	settings map[string]fault.Settings
	// overHTTP is set when a base of the sweep reaches the target's MCP
	// over HTTP (see modelSweptElsewhere).
	overHTTP bool
	runs     int
}

// modelSweptElsewhere reports whether the model-request faults of base b
// are left to the sweep's other bases: b reaches the target's MCP over
// stdio, and another base reaches it over HTTP. The target's model requests
// and its retries of them are the same on both; only how it reaches its
// tools differs. Each run over stdio starts a server process, most of such
// a run's cost, so b sweeps what only it has: its MCP calls and its
// server's deaths.
func (e *explorer) modelSweptElsewhere(b *scenario.Scenario) bool {
	return e.overHTTP && transportOf(b, e.opts.Target) == wire.MCPTransportStdio
}

// settingsOf returns the durations the cells of the named base use: its
// paced ones, or the defaults before its clean run.
func (e *explorer) settingsOf(base string) fault.Settings {
	if s, ok := e.settings[base]; ok {
		return s
	}
	return paced(e.opts.Settings, nil, 0)
}

func newExplorer(opts Options) *explorer {
	if opts.Now == nil {
		opts.Now = time.Now
	}
	switch {
	case opts.Kinds == nil && opts.Fingerprint:
		opts.Kinds = FingerprintKinds()
	case opts.Kinds == nil:
		opts.Kinds, _ = SelectKinds(nil)
	}
	if opts.Depth <= 0 {
		opts.Depth = DefaultDepth
	}
	if opts.MaxRuns <= 0 {
		opts.MaxRuns = DefaultMaxRuns
	}
	if opts.Confirm <= 0 {
		opts.Confirm = DefaultConfirm
	}
	if opts.Seed == "" {
		opts.Seed = "replaycheck"
	}
	s := &opts.Settings
	if s.Stall <= 0 {
		s.Stall = fault.DefaultSettings.Stall
	}
	e := &explorer{opts: opts, kinds: map[string]Kind{}, byKey: map[string]*scenario.Scenario{}, known: map[string]rules.Result{}, settings: map[string]fault.Settings{}}
	for _, k := range Kinds() {
		e.kinds[k.Name] = k
	}
	return e
}

// job is one run to make: a base with a schedule, under a unique name.
type job struct {
	base  *scenario.Scenario
	sched Schedule
	name  string
}

// runAll runs the jobs (in parallel, through package run) and returns their
// results in order; a job an interrupt kept from completing, or d left out
// (a nil d leaves out none), has a nil result. It fails only when the
// harness or the target cannot run.
func (e *explorer) runAll(ctx context.Context, phase string, jobs []job, d *decider) ([]*rules.Result, error) {
	ss := make([]*scenario.Scenario, len(jobs))
	for i, j := range jobs {
		ss[i] = withSchedule(j.base, j.name, j.sched, e.kinds, e.settingsOf(j.base.Name))
	}
	out := make([]*rules.Result, len(jobs))
	pr := Progress{Phase: phase, Total: len(jobs)}
	start := e.opts.Now()
	report := func() {
		pr.Elapsed = e.opts.Now().Sub(start)
		if e.opts.OnProgress != nil {
			e.opts.OnProgress(pr)
		}
	}
	ro := run.Options{
		Targets: []target.Target{e.opts.Target}, Parallel: e.opts.Parallel, Timeout: e.opts.Timeout,
		Seed: e.opts.Seed, Now: e.opts.Now, Sharing: e.opts.Sharing,
		// One call at a time, as each run ends. Each job runs once on the
		// one target (withSchedule), so the i-th history is the i-th job's.
		OnHistory: func(i int, h *history.History) {
			if ctx.Err() != nil {
				return // cut short by the interrupt: not a finding
			}
			r := rules.Evaluate(h)
			out[i] = &r
			if d != nil {
				d.ended(i, r)
			}
			pr.Done++
			if r.Verdict == rules.Fail {
				pr.Failed++
			}
			report()
		},
	}
	if d != nil {
		ro.Skip = func(i int) bool {
			if !d.after(i) {
				return false
			}
			pr.Total--
			report()
			return true
		}
	}
	_, err := run.Run(ctx, ss, ro)
	e.runs += pr.Done
	if err != nil && ctx.Err() == nil {
		return out, err
	}
	for i, r := range out {
		if r != nil {
			e.known[key(jobs[i].base.Name, jobs[i].sched)] = *r
		}
	}
	return out, nil
}

// key identifies a schedule of a base.
func key(base string, s Schedule) string { return base + "\x00" + s.String() }

// clean runs each base without faults and maps its fault points.
func (e *explorer) clean(ctx context.Context, bases []*scenario.Scenario, rep *Report) ([][]Point, error) {
	jobs := make([]job, len(bases))
	for i, b := range bases {
		e.byKey[b.Name] = b
		jobs[i] = job{base: b, name: "explore clean: " + b.Name}
	}
	res, err := e.runAllClean(ctx, jobs)
	if err != nil {
		return nil, err
	}
	if ctx.Err() != nil {
		rep.Interrupted = true
		return nil, nil
	}
	maps := make([][]Point, len(bases))
	e.overHTTP = slices.ContainsFunc(bases, func(b *scenario.Scenario) bool {
		return transportOf(b, e.opts.Target) != wire.MCPTransportStdio
	})
	for i, r := range res {
		b := bases[i]
		if r.Verdict == rules.Fail {
			return nil, &BaseFailedError{Base: b.Name, Result: *r}
		}
		pts := Map(r.History)
		maps[i] = pts
		var toolTimeout time.Duration
		if b.Gateway != nil {
			toolTimeout = b.Gateway.ToolTimeout.D()
		}
		e.settings[b.Name] = paced(e.opts.Settings, r, toolTimeout)
		base := Base{Name: b.Name, File: b.File, Settings: e.settings[b.Name]}
		switch {
		case len(r.History.Calls("")) == 0:
			base.Note = "the clean run made no tool call, so no tool could run twice; only model requests are swept"
		case e.modelSweptElsewhere(b):
			base.Note = "its MCP server is a process over stdio: its tool calls and the process are swept here, its model requests on the bases over HTTP"
		}
		if e.opts.Points != nil {
			pts = slices.DeleteFunc(slices.Clone(pts), func(p Point) bool { return !e.opts.Points.MatchString(p.String()) })
		}
		base.Points = pts
		maps[i] = pts
		rep.Bases = append(rep.Bases, base)
	}
	return maps, nil
}

// runAllClean runs the clean jobs with the base's own expectations and every
// rule of the catalogue.
func (e *explorer) runAllClean(ctx context.Context, jobs []job) ([]*rules.Result, error) {
	ss := make([]*scenario.Scenario, len(jobs))
	for i, j := range jobs {
		c := *j.base
		c.Name = j.name
		c.Repeat = nil // once: the i-th history is the i-th job's
		c.Expect.Rules = rules.Names()
		ss[i] = &c
	}
	out := make([]*rules.Result, len(jobs))
	start := e.opts.Now()
	// Isolated, as the cells with MCP faults run: the target starts fresh
	// and its MCP session steps are the run's, to be mapped as points. One
	// at a time: each clean run is the target's own pace on its base (see
	// paced), not the other bases' load.
	hs, err := run.Run(ctx, ss, run.Options{
		Targets: []target.Target{e.opts.Target}, Parallel: 1, Timeout: e.opts.Timeout,
		Seed: e.opts.Seed, Now: e.opts.Now, Isolate: true, Sharing: e.opts.Sharing,
	})
	e.runs += len(jobs)
	if err != nil {
		if ctx.Err() != nil {
			return out, nil
		}
		return nil, err
	}
	for i, h := range hs {
		r := rules.Evaluate(h)
		out[i] = &r
	}
	if e.opts.OnProgress != nil {
		e.opts.OnProgress(Progress{Phase: "clean", Done: len(jobs), Total: len(jobs), Elapsed: e.opts.Now().Sub(start)})
	}
	return out, nil
}

// transportOf is how the target reaches the ledger in a run of base b: the
// base's own transport (mcp.transport, or what its faults need), else stdio
// on a target that speaks nothing else, else HTTP. A kind that needs another
// transport is not swept on b (see Kind.fits).
func transportOf(b *scenario.Scenario, t target.Target) wire.MCPTransport {
	if tr := b.MCPTransport(); tr != wire.MCPTransportAny {
		return tr
	}
	if target.Speaks(t, wire.MCPTransportStdio) && !target.Speaks(t, wire.MCPTransportHTTP) {
		return wire.MCPTransportStdio
	}
	return wire.MCPTransportHTTP
}

// plan lists the sweep's runs: every single fault, then (depth 2) every pair
// on different requests, then the random schedules; pairs and random
// schedules are drawn with the seed, and the whole list is cut to MaxRuns
// and to the shard.
func (e *explorer) plan(bases []*scenario.Scenario, maps [][]Point, rep *Report) []job {
	var singles, pairs, random []job
	rng := rand.New(rand.NewPCG(seedBits(e.opts.Seed)))
	for i, b := range bases {
		var one []Schedule
		for _, p := range maps[i] {
			for _, k := range e.opts.Kinds {
				if !k.applies(p) || !k.fits(transportOf(b, e.opts.Target)) || k.kill != "" && !e.opts.Target.Traits().Resumes {
					continue
				}
				if p.Side == SideUpstream && e.modelSweptElsewhere(b) {
					continue
				}
				if e.opts.Fingerprint {
					if fingerprinted(p) {
						one = append(one, Schedule{{Point: p, Kind: k.Name, Times: fault.Always}})
					}
					continue
				}
				for _, t := range k.times(p) {
					a := Armed{Point: p, Kind: k.Name, Times: t}
					if e.opts.Prune != nil && e.opts.Prune(rep.Bases[i], a) {
						continue
					}
					one = append(one, Schedule{a})
				}
			}
		}
		for _, s := range one {
			singles = append(singles, job{base: b, sched: s})
		}
		if e.opts.Depth >= 2 {
			var ps []job
			for x := range one {
				for y := x + 1; y < len(one); y++ {
					if sameRequest(one[x][0], one[y][0]) {
						continue
					}
					ps = append(ps, job{base: b, sched: Schedule{one[x][0], one[y][0]}})
				}
			}
			pairs = append(pairs, ps...)
		}
		if len(one) > 1 {
			for range e.opts.Random / len(bases) {
				random = append(random, job{base: b, sched: draw(rng, one)})
			}
		}
	}
	budget := e.opts.MaxRuns - len(singles)
	if budget < len(pairs) {
		rng.Shuffle(len(pairs), func(i, j int) { pairs[i], pairs[j] = pairs[j], pairs[i] })
	}
	all := append(singles, pairs...)
	all = append(all, random...)
	if len(all) > e.opts.MaxRuns {
		rep.Skipped = len(all) - e.opts.MaxRuns
		all = all[:e.opts.MaxRuns]
	}
	var out []job
	for i, j := range all {
		if e.opts.Shards > 0 && i%e.opts.Shards != e.opts.Shard-1 {
			continue
		}
		j.name = fmt.Sprintf("explore %d: %s: %s", i+1, j.base.Name, j.sched)
		out = append(out, j)
	}
	return out
}

// draw returns a random schedule of two or three faults from different
// requests.
func draw(rng *rand.Rand, one []Schedule) Schedule {
	n := 2 + rng.IntN(2)
	var s Schedule
	for tries := 0; len(s) < n && tries < 10*n; tries++ {
		a := one[rng.IntN(len(one))][0]
		if !slices.ContainsFunc(s, func(b Armed) bool { return sameRequest(a, b) }) {
			s = append(s, a)
		}
	}
	return s
}

// seedBits turns the seed into the two words of a PCG state.
func seedBits(seed string) (uint64, uint64) {
	h := fnv.New128a()
	h.Write([]byte(seed))
	sum := h.Sum(nil)
	return binary.BigEndian.Uint64(sum[:8]), binary.BigEndian.Uint64(sum[8:])
}

// sweep makes the planned runs and records them as cells, but for those
// after the run that decided their kind (Options.Decides).
func (e *explorer) sweep(ctx context.Context, todo []job, rep *Report) error {
	d := newDecider(e.opts.Decides, todo)
	res, err := e.runAll(ctx, "sweep", todo, d)
	if err != nil {
		return err
	}
	for i, r := range res {
		if d != nil && d.after(i) {
			if rep.AfterDeciding == nil {
				rep.AfterDeciding = map[string]int{}
			}
			rep.AfterDeciding[todo[i].sched[0].Kind]++
			delete(e.known, key(todo[i].base.Name, todo[i].sched))
			continue
		}
		if r == nil {
			rep.Unrun++
			continue
		}
		rep.Cells = append(rep.Cells, cellOf(todo[i], *r))
	}
	rep.Interrupted = ctx.Err() != nil
	rep.Runs = e.runs
	return nil
}

func cellOf(j job, r rules.Result) Cell {
	return Cell{
		Base: j.base.Name, Schedule: j.sched, Verdict: r.Verdict, Failed: rules.Failed(r.Verdicts),
		Writes: r.Counts.Writes, Statuses: r.Counts.Statuses, Result: r,
	}
}
