package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"regexp"
	"slices"
	"strings"
	"time"

	"github.com/spf13/cobra"

	"github.com/replaycheck/replaycheck/internal/harness/baseline"
	"github.com/replaycheck/replaycheck/internal/harness/history"
	"github.com/replaycheck/replaycheck/internal/harness/rules"
	"github.com/replaycheck/replaycheck/internal/harness/run"
	"github.com/replaycheck/replaycheck/internal/harness/scenario"
	"github.com/replaycheck/replaycheck/internal/harness/target"
	"github.com/replaycheck/replaycheck/internal/harness/targetfile"
	"github.com/replaycheck/replaycheck/internal/linefile"
	"github.com/replaycheck/replaycheck/report"
	"github.com/replaycheck/replaycheck/scenarios"
)

// defaultSuiteDir is where `replaycheck run` looks for scenarios when given
// no paths; when it does not exist, the suite built into the binary runs.
const defaultSuiteDir = "scenarios"

// runOptions are the flags of `replaycheck run`.
type runOptions struct {
	Paths    []string
	Targets  []string
	Parallel int
	Timeout  time.Duration
	Shard    string
	Filter   string
	Tags     []string
	// Verbose is how many -v were given: 1 adds a line per passing
	// scenario, 2 every scenario's timeline.
	Verbose int
	// Quiet prints only the total line and the failures (-q).
	Quiet bool
	Seed  string
	// Repeat multiplies every scenario's runs and allowed failures
	// (--repeat); 0 means 1.
	Repeat int
	reportFiles
	// Recheck is the saved --json file to re-check instead of running; more
	// than one is refused (report merge joins shards).
	Recheck []string
	// Baseline is a baseline file of known failures (--baseline).
	Baseline string
	// KeepRunDirs keeps client runs' scratch directories ({{run_dir}}).
	KeepRunDirs bool
	// LedgerFile is the file every run's ledger appends a synced line to
	// per write (--ledger); "" keeps the ledgers in memory only.
	LedgerFile string

	Out    io.Writer
	ErrOut io.Writer
	// Now is the clock; nil means time.Now.
	Now func() time.Time
	// Terminal reports whether ErrOut is a terminal (progress in place);
	// nil means detect it.
	Terminal *bool
	// Width is the terminal's width in columns for the table; 0 means
	// detect it (none when the table does not go to a terminal).
	Width int
	// Heartbeat ticks the progress display's look at slow target starts and
	// runs; nil means a ticker of tickEvery.
	Heartbeat <-chan time.Time
}

func newRunCmd() *cobra.Command {
	opts := &runOptions{}
	cmd := &cobra.Command{
		Use:   "run [PATH...]",
		Short: "Run scenarios against a target and check the replay rules",
		Long: `run sends each scenario's requests through the target, with the faults the
scenario arms on the fakes (a ledger MCP server and a model upstream), records
what every side saw, and checks the scenario's counts and replay rules.

PATH is a scenario file or a directory searched for *.yaml files. With no PATH
it runs ./scenarios, or the suite built into the binary when there is none.

Targets:
  builtin:guarded          the built-in gateway with every replay bug off (default)
  builtin:naive            the built-in gateway with every replay bug on
  builtin:BUG[,BUG]        the built-in gateway with those bugs on, for example
                           builtin:replay-after-dispatch
  FILE                     a target file: kind proxy (a gateway at a URL, optionally
                           started with a rendered config) or kind client (a command
                           run per scenario); see targets/ and 'replaycheck schema --target'

--target repeats: every scenario runs on every target (a scenario with
expect.client runs on client targets only). A proxy the harness starts runs
once per run (and once per isolated scenario) in its own process group, and is
stopped with it at the end, on error and on Ctrl-C.

Every scenario run gets its own run token, so scenarios run in parallel on one
target and one pair of fakes without their counts mixing. A scenario that sets
gateway knobs or annotations, or arms MCP faults, gets fakes and a target of
its own. Each scenario has a deadline (--timeout, or its own timeout) that
restarts whenever the fakes see the run's traffic, so a busy machine
stretches a run instead of cutting it, and ends it at 10 times that however
busy; a target that hangs fails that scenario and the suite goes on. A run
that failed only because a timeout expired (a count short, an error answer
or none by the deadline) while the harness's own timers ran late by half that timeout is
unknown, "the harness was starved", never a failure: re-run it on a quieter
machine or with a lower --parallel. So is a run whose counts fell short
because the harness's stdio server never forwarded a call the target sent
and gave up. A replay rule broken is a failure however busy the machine.

Races: a scenario with repeat: N runs N times on each target (in parallel,
each run with its own token) and passes when at most expect.allow_failures of
the runs fail (default 0: every run must pass); it is unknown when runs that
could not be judged might have taken it over that. --repeat M multiplies both
for every scenario (a scenario without repeat runs M times, none may fail).
Reports show the rate ("3 of 20 runs failed: writes 2 (runs 4, 9, 17)") and
the first failing run; the JSON report keeps every run's history, up to the
first 100 runs of a scenario and the first of each verdict (the others are
judged and counted; --recheck refuses such a report). More than 1,000,000
scenario runs in all (--repeat × repeat × targets) is refused (exit 2).

Output: progress goes to stderr: a line per finished scenario run (in place
on a terminal), notices (scenario runs skipped), and a heartbeat at most every 10s while a target takes more
than 2s to start ("waiting for target litellm to be ready… 12s", then "target
litellm ready in 12.3s") or a run more than 5s ("still running: …"). The
table, the total line and the failures' checks and timelines go to stdout.
-q leaves out the table and the per-scenario lines: the total line and the
failures' checks, however large the suite (heartbeats stay). -v adds one line
per passing scenario, -vv every scenario's timeline. On a terminal the table
is cut to its width ($COLUMNS when set). Names are printed with control
characters escaped (\n, \x1b).

Reports: --junit, --json and --markdown are written whatever the outcome;
FILE - writes that report to stdout instead (one report at most), and the
table and total then go to stderr, so 'run --json - | jq' reads only JSON.
A run that does not complete (exit 2, 3 or 130) writes them too, with what
ended before it stopped and the error: a testcase with an <error> in JUnit,
a banner in Markdown, the "abort" field in JSON; runs an interrupt cut short
are named there, not judged. --markdown "$GITHUB_STEP_SUMMARY" appends (other
steps share that file) and every summary lists failures first and stays
under GitHub's 1 MiB limit, counting the rows left out. Shards' JSON reports
merge into one with 'replaycheck report merge'. A report replaces its file
through a temporary file in the same directory: a write that fails (a full
disk) leaves the old file as it was, never a truncated one, and is printed.

HTML report: --html FILE is written like them (also on exit 2, 3 and 130):
one self-contained page (no script, nothing fetched) with a summary table and
each scenario's timeline as a sequence diagram of the app, the target, the
model upstream and the ledger, the injected fault marked where it hit and
every repeated execution of a tool call in red; passing scenarios are
collapsed. It is the picture to attach to a bug report.

Sharding: --shard I/N splits the selected scenarios that run on the targets,
sorted by name (list --shard I/N --target T shows a shard). Fewer than N
leave some shards empty; an empty shard says "shard I/N selects no
scenario" on stderr, writes empty reports and exits 0, so a CI matrix may be
larger than the suite.

Isolated scenarios (gateway knobs, annotations, MCP faults) start a target
instance of their own: one that does not start fails that scenario only,
with the start error and the target's last output lines; a target instance
that scenarios share and that does not start ends the run (exit 3).

Exit codes:
  0    every rule held; with --baseline, every check that failed is listed
  1    a rule was broken, or a check could not judge (unknown is not a pass;
       with no rule broken, the last line says which runs could not judge);
       with --baseline, a failure it does not list or an entry that now passes
  2    bad usage or a bad scenario or target file
  3    the harness or the target could not run (a proxy that does not start),
       or every rule held but a report could not be written (a broken rule
       still exits 1 when a report cannot be written)
  130  interrupted (Ctrl-C or SIGTERM); the reports hold what ended`,
		Example: `  # the built-in suite on the built-in guarded gateway (the main job)
  replaycheck run

  # the seed scenarios on the naive gateway, with each timeline
  replaycheck run scenarios/seed --target builtin:naive -v

  # one CI shard of three, with JUnit and a Markdown summary
  replaycheck run --shard 2/3 --junit junit.xml --markdown "$GITHUB_STEP_SUMMARY"

  # a large suite in CI: only the total and the failures, the JSON on stdout
  replaycheck run -q --json - | jq '.results | length'

  # the seed scenarios on a proxy started from a target file, and on LiteLLM
  replaycheck run scenarios/seed --target targets/gateway-process.yaml
  replaycheck run scenarios/seed --target targets/litellm.yaml --timeout 120s

  # run every scenario 20 times: a duplicate in any run fails it
  replaycheck run scenarios/seed --repeat 20

  # the seed scenarios on the naive gateway as an HTML report with sequence diagrams
  replaycheck run scenarios/seed --target builtin:naive --html report.html

  # re-check a saved run with the current rules
  replaycheck run --recheck run.json

  # count the writes outside the harness: one synced line per write, whose
  # entry (alpha-TOKEN) names the run; the JSON report has each run's token
  replaycheck run scenarios/seed --ledger ledger.txt --json run.json

  # fail only on failures the baseline does not list, or on entries that now pass
  replaycheck run --target builtin:naive --baseline baseline.yaml`,
		RunE: func(cmd *cobra.Command, args []string) error {
			opts.Paths = args
			opts.Out, opts.ErrOut = cmd.OutOrStdout(), cmd.ErrOrStderr()
			return runRun(cmd.Context(), opts)
		},
	}
	addSuiteFlags(cmd, opts)
	addReportFlags(cmd, &opts.reportFiles)
	f := cmd.Flags()
	f.StringVar(&opts.Baseline, "baseline", "", "known failures (replaycheck baseline): fail only on new ones and on entries that now pass")
	f.BoolVarP(&opts.Quiet, "quiet", "q", false, "print only the total line and the failures' checks (no table, no line per scenario)")
	f.StringVar(&opts.LedgerFile, "ledger", "", "append every write of every run to this file, one line synced before the tool answers (existing lines are kept), as serve --ledger does: a count outside the harness; a run's lines carry its token in their entry (alpha-TOKEN)")
	cmd.MarkFlagsMutuallyExclusive("quiet", "verbose")
	cmd.MarkFlagsMutuallyExclusive("ledger", "recheck")
	bindEnv(cmd, "junit", "json", "markdown", "html", "baseline")
	complete(cmd, "baseline", completeFiles("yaml", "yml"))
	return cmd
}

// addSuiteFlags adds the flags that choose, run or re-check the suite, which
// `run` and `baseline` share.
func addSuiteFlags(cmd *cobra.Command, opts *runOptions) {
	f := cmd.Flags()
	f.StringArrayVar(&opts.Targets, "target", []string{"builtin:guarded"}, "target to run on: builtin:NAME or a target FILE (repeatable)")
	f.Var((*parallelFlag)(&opts.Parallel), "parallel", "scenario runs at once (default 8 per CPU: the runs mostly wait, and as many again for runs a fault holds a second or more: a Retry-After, a slow tool); on a client target a cap: each run starts when a CPU is spare, so the clients do not slow each other")
	opts.Timeout = run.DefaultTimeout
	f.Var((*timeoutFlag)(&opts.Timeout), "timeout", "deadline of each scenario run: how long the fakes may see nothing of it")
	f.Var((*shardFlag)(&opts.Shard), "shard", "run shard I of N (1-based) of the scenarios sorted by name")
	f.Var((*patternFlag)(&opts.Filter), "filter", "run only scenarios whose name matches this regular expression")
	f.StringArrayVar(&opts.Tags, "tag", nil, "run only scenarios with this tag (repeatable: any of them)")
	f.CountVarP(&opts.Verbose, "verbose", "v", "-v: a line for each passing scenario too; -vv: every scenario's timeline")
	f.StringVar(&opts.Seed, "seed", "replaycheck", "seed of the run tokens")
	opts.Repeat = 1
	f.Var((*runCount)(&opts.Repeat), "repeat", "run every scenario N times its own repeat (each run with its own token) and judge the rate; expect.allow_failures is multiplied too")
	f.StringArrayVar(&opts.Recheck, "recheck", nil, "re-check the histories of a saved --json FILE instead of running (one file; merge shards with 'report merge')")
	f.BoolVar(&opts.KeepRunDirs, "keep-run-dirs", false, "keep each client run's scratch directory ({{run_dir}}); the JSON report names it")
	bindEnv(cmd, "target", "parallel", "timeout", "shard", "filter", "tag", "seed", "repeat")
	cmd.ValidArgsFunction = completeScenarioPaths
	complete(cmd, "target", completeTarget)
	complete(cmd, "tag", completeTag)
	complete(cmd, "recheck", completeFiles("json"))
	for _, name := range []string{"parallel", "timeout", "shard", "filter", "seed", "repeat"} {
		complete(cmd, name, noCompletion)
	}
}

// runRun loads, selects and runs the scenarios, checks them (against the
// baseline, when given) and reports. A run that does not complete still
// writes every requested report, with what ended and why it stopped.
func runRun(ctx context.Context, opts *runOptions) error {
	var known *baseline.Baseline
	var suite report.Suite
	err := opts.checkStdout()
	if err == nil && opts.Baseline != "" {
		b, lerr := baseline.Load(opts.Baseline)
		if lerr != nil {
			err = asUsage(lerr)
		}
		known = &b
	}
	if err == nil {
		suite, err = runSuite(ctx, opts)
	}
	if err != nil {
		return reportAbort(opts, suite, known, err)
	}
	return emit(opts, suite, known)
}

// reportAbort reports a run that did not complete: the results that ended
// (judged against the baseline, when given), and err in every report. It
// returns err, joined with any error writing the reports.
func reportAbort(opts *runOptions, suite report.Suite, known *baseline.Baseline, err error) error {
	if suite.Run == nil {
		suite.Run = runInfo(opts)
	}
	if suite.Abort == nil {
		suite.Abort = &report.Abort{}
	}
	suite.Abort.Kind, suite.Abort.Error = abortKind(err), err.Error()
	if in := (interrupted{}); errors.As(err, &in) {
		// The kind says "interrupted"; the error says by what.
		suite.Abort.Error = strings.TrimPrefix(in.Error(), "interrupted: ")
	}
	if known != nil && len(suite.Results) > 0 {
		o := baseline.Check(*known, suite.Results)
		suite.Baseline = &o
	}
	var errs []error
	if len(suite.Results) > 0 {
		errs = append(errs, tableError(report.WriteTable(opts.tableOut(), suite, opts.tableOptions())))
	}
	errs = append(errs, opts.write(opts.Out, suite))
	return errors.Join(append([]error{err}, errs...)...)
}

// abortKind says which kind of abort err is, as exitCode sorts errors.
func abortKind(err error) report.AbortKind {
	var u usageError
	switch {
	case errors.Is(err, errInterrupted):
		return report.AbortInterrupted
	case errors.As(err, &u), isCobraUsage(err):
		return report.AbortUsage
	default:
		return report.AbortHarness
	}
}

// runInfo says how opts run the suite, for the reports.
func runInfo(opts *runOptions) *report.RunInfo {
	info := &report.RunInfo{Replaycheck: versionString(), Seed: opts.Seed, Shard: opts.Shard}
	if len(opts.Recheck) > 0 {
		// A re-check renders the saved run's seed and shard.
		info.Seed, info.Shard = "", ""
	}
	return info
}

// runSuite loads, selects, runs and checks the scenarios, or with --recheck
// re-checks a saved run; `run` and `baseline` share it. When the run does
// not complete (the harness or a target fails, or ctx is cancelled: an
// interrupt), it returns the results that ended with the error, and for an
// interrupt an Abort naming the runs cut short and counting those never
// started.
func runSuite(ctx context.Context, opts *runOptions) (report.Suite, error) {
	if opts.Now == nil {
		opts.Now = time.Now
	}
	if len(opts.Recheck) > 1 {
		return report.Suite{}, asUsage(fmt.Errorf("--recheck takes one file, got %d (%s): merge the reports of shards with 'replaycheck report merge', then re-check the merged file",
			len(opts.Recheck), strings.Join(opts.Recheck, ", ")))
	}
	if len(opts.Recheck) == 1 {
		return recheck(opts.Recheck[0])
	}
	sel, err := selection(opts)
	if err != nil {
		return report.Suite{}, asUsage(err)
	}
	if opts.Repeat < 0 {
		return report.Suite{}, asUsage(fmt.Errorf("--repeat %d: %s", opts.Repeat, runCountWant))
	}
	targets, err := resolveTargets(opts.Targets, targetfile.Options{KeepRunDirs: opts.KeepRunDirs})
	if err != nil {
		return report.Suite{}, err
	}
	all, err := loadSuite(opts.Paths)
	if err != nil {
		return report.Suite{}, asUsage(err)
	}
	whole := run.Select(all, run.Selection{Filter: sel.Filter, Tags: sel.Tags})
	if len(whole) == 0 {
		return report.Suite{}, asUsage(fmt.Errorf("no scenario matches the selection (%d loaded)", len(all)))
	}
	if err := checkApplies(opts.ErrOut, whole, targets); err != nil {
		return report.Suite{}, err
	}
	// Shards split the scenarios that run on the targets.
	sel.Targets = targets
	picked := run.Select(all, sel)
	if len(picked) == 0 {
		// A CI matrix larger than the suite: this shard has nothing to do.
		fmt.Fprintf(opts.ErrOut, "shard %d/%d selects no scenario (%d in the selection run on the targets): nothing to run\n",
			sel.Shard, sel.Shards, len(run.Select(all, run.Selection{Filter: sel.Filter, Tags: sel.Tags, Targets: targets})))
		return report.Suite{Run: runInfo(opts)}, nil
	}
	runs, err := run.Count(picked, targets, opts.Repeat)
	if err != nil {
		return report.Suite{}, asUsage(fmt.Errorf("%w: lower --repeat or the scenario's repeat", err))
	}
	var ledgerFile *linefile.File
	if opts.LedgerFile != "" {
		if ledgerFile, err = linefile.Open(opts.LedgerFile, linefile.Options{Sync: true}); err != nil {
			return report.Suite{}, asUsage(fmt.Errorf("--ledger: %w", err))
		}
		defer ledgerFile.Close()
	}
	p := newProgress(opts, runs)
	p.beat(opts.Heartbeat)
	c := newCollector(picked, targets)
	start := opts.Now()
	_, err = run.Run(ctx, picked, run.Options{
		Targets: targets, Parallel: opts.Parallel, Timeout: opts.Timeout, Seed: opts.Seed, Now: opts.Now, Repeat: opts.Repeat,
		LedgerLines: ledgerFile, OnEvent: p.event,
		// The runner calls this one at a time, as each run ends: each
		// history is checked once, here, for the progress line and the
		// suite, and only what the reports need is kept.
		OnHistory: func(_ int, h *history.History) {
			if ctx.Err() != nil {
				c.cutShort(h)
				return
			}
			r := rules.Evaluate(h)
			c.add(r)
			p.done(r)
		},
		Forget: true,
	})
	p.finish()
	suite := report.Suite{Wall: durationSince(opts.Now, start), Run: runInfo(opts), Results: c.results()}
	if cause := context.Cause(ctx); ctx.Err() != nil {
		suite.Abort = &report.Abort{CutShort: c.cutRuns(), NotStarted: runs - c.ended - len(c.cut)}
		return suite, interrupted{cause}
	}
	if err != nil {
		return suite, fmt.Errorf("running the suite: %w", err)
	}
	return suite, nil
}

// collector keeps the results of a run's scenario runs as they end: each
// (scenario, target) pair's result, or the tally of a repeated one's runs,
// in scenario order, then target order.
type collector struct {
	order []pairKey
	// single holds the result of a pair that runs once; tally the runs of
	// a repeated one.
	single map[pairKey]*rules.Result
	tally  map[pairKey]*rules.Tally
	// ended counts the runs judged; cut are those an interrupt cut short.
	ended int
	cut   []report.RunRef
}

type pairKey struct{ scenario, target string }

func newCollector(picked []*scenario.Scenario, targets []target.Target) *collector {
	c := &collector{single: map[pairKey]*rules.Result{}, tally: map[pairKey]*rules.Tally{}}
	for _, s := range picked {
		for _, t := range targets {
			if run.Applies(s, t) {
				c.order = append(c.order, pairKey{s.Name, t.Name()})
			}
		}
	}
	return c
}

// add keeps a judged run.
func (c *collector) add(r rules.Result) {
	c.ended++
	h := r.History
	k := pairKey{h.Scenario, h.Target}
	if h.Repetition == nil {
		c.single[k] = &r
		return
	}
	t, ok := c.tally[k]
	if !ok {
		t = rules.NewTally(h.Repetition.AllowFailures)
		c.tally[k] = t
	}
	t.Add(h.Repetition.Index, r)
}

// cutShort names a run that ended after an interrupt, not judged.
func (c *collector) cutShort(h *history.History) {
	ref := report.RunRef{Scenario: h.Scenario, Target: h.Target, File: h.File}
	if h.Repetition != nil {
		ref.Run = h.Repetition.Index
	}
	c.cut = append(c.cut, ref)
}

// results are the kept results in order; a repeated pair's runs judged
// together.
func (c *collector) results() []rules.Result {
	var out []rules.Result
	for _, k := range c.order {
		if r, ok := c.single[k]; ok {
			out = append(out, *r)
		} else if t, ok := c.tally[k]; ok {
			out = append(out, t.Result())
		}
	}
	return out
}

// cutRuns are the runs an interrupt cut short, in the results' order.
func (c *collector) cutRuns() []report.RunRef {
	pos := make(map[pairKey]int, len(c.order))
	for i, k := range c.order {
		pos[k] = i
	}
	slices.SortStableFunc(c.cut, func(a, b report.RunRef) int {
		if d := pos[pairKey{a.Scenario, a.Target}] - pos[pairKey{b.Scenario, b.Target}]; d != 0 {
			return d
		}
		return a.Run - b.Run
	})
	return c.cut
}

// recheck re-runs the checker over the histories of a saved JSON report (the
// checker may have changed since); the saved verdicts are not used.
func recheck(path string) (report.Suite, error) {
	saved, err := readReport(path)
	if err != nil {
		return report.Suite{}, asUsage(fmt.Errorf("--recheck: %w", err))
	}
	if len(saved.Results) == 0 && saved.Abort == nil {
		// An empty shard's report, say: no green from nothing (as report merge).
		return report.Suite{}, asUsage(fmt.Errorf("--recheck %s: no result in the report: nothing to re-check", path))
	}
	out := report.Suite{Version: saved.Version, Wall: saved.Wall, Run: saved.Run}
	for _, r := range saved.Results {
		if r.Repeat == nil {
			out.Results = append(out.Results, rules.Evaluate(r.History))
			continue
		}
		if r.Repeat.Omitted > 0 {
			return report.Suite{}, asUsage(fmt.Errorf("--recheck %s: %s on %s ran %d times and the report keeps the histories of %d (a long repeat keeps the first %d and the first of each verdict): re-checking needs every run",
				path, r.History.Scenario, r.History.Target, r.Repeat.Runs, len(r.Repeat.Results), rules.KeptRuns))
		}
		// A repeated scenario: every run again, then the runs together.
		for i, run := range r.Repeat.Results {
			if run.History == nil || run.History.Repetition == nil {
				return report.Suite{}, asUsage(fmt.Errorf("--recheck %s: run %d of %s on %s has no history of its repetition", path, i+1, r.History.Scenario, r.History.Target))
			}
			out.Results = append(out.Results, rules.Evaluate(run.History))
		}
	}
	out.Results = rules.Combine(out.Results)
	if saved.Abort != nil {
		// The saved run did not complete (a target that could not start, an
		// interrupt): its results are re-checked, and it still did not.
		return out, fmt.Errorf("--recheck %s: the saved run did not complete: %s", path, saved.Abort.Error)
	}
	return out, nil
}

// emit writes the terminal report and the requested files, and turns the
// verdicts into the command's outcome: with a baseline (known not nil), only
// new failures and stale entries fail it. A report that cannot be written
// (the table too: stdout on a full disk) is joined to the verdict, not put
// in its place: a broken rule still exits 1, and only a run whose rules all
// held exits 3 for it.
func emit(opts *runOptions, suite report.Suite, known *baseline.Baseline) error {
	if known != nil {
		o := baseline.Check(*known, suite.Results)
		suite.Baseline = &o
	}
	if suite.Run == nil {
		suite.Run = runInfo(opts)
	}
	terr := tableError(report.WriteTable(opts.tableOut(), suite, opts.tableOptions()))
	return errors.Join(verdictOutcome(suite), terr, opts.write(opts.Out, suite))
}

// verdictOutcome turns a suite's verdicts into a command's outcome:
// errRulesBroken when a replay rule failed; notPassed (exit 1 too) when none
// did but a run failed its plain expectations or could not be judged;
// nothing wrong when every run passed or did not apply, unless none applied
// (a usage error: nothing was judged); or, judged against a baseline,
// errRulesBroken when a failure is new or an entry stale.
func verdictOutcome(suite report.Suite) error {
	if suite.Baseline != nil {
		if suite.Baseline.Broken() {
			return errRulesBroken
		}
		return nil
	}
	var np notPassed
	for _, r := range suite.Results {
		if r.History == nil {
			continue
		}
		name := report.TerminalText(r.History.Scenario) + " on " + report.TerminalText(r.History.Target)
		switch r.Verdict {
		case rules.Fail:
			if brokenRule(r) {
				return errRulesBroken
			}
			np.unmet = append(np.unmet, name)
		case rules.Unknown:
			np.unjudged = append(np.unjudged, name)
		}
	}
	if len(np.unmet)+len(np.unjudged) > 0 {
		return np
	}
	if t := suite.Totals(); t.Skipped > 0 && t.Skipped == t.Scenarios {
		what := "the one scenario run was"
		if t.Skipped > 1 {
			what = fmt.Sprintf("all %d scenario runs were", t.Skipped)
		}
		return asUsage(fmt.Errorf("no scenario applied to the target: %s skipped (see why above); select scenarios whose faults act on the dialects the target speaks", what))
	}
	return nil
}

// brokenRule reports whether a replay rule (not a plain count) failed in r,
// or, for a repeated scenario, in a failed run of it.
func brokenRule(r rules.Result) bool {
	if r.Repeat != nil {
		for _, f := range r.Repeat.Failures {
			for _, c := range f.Checks {
				if _, ok := rules.Lookup(c.Check); ok {
					return true
				}
			}
		}
		return false
	}
	for _, v := range r.Verdicts {
		if v.Status == rules.Fail && v.Kind == rules.KindRule {
			return true
		}
	}
	return false
}

// selection parses --filter, --tag and --shard.
func selection(opts *runOptions) (run.Selection, error) {
	return parseSelection(opts.Filter, opts.Tags, opts.Shard)
}

func parseSelection(filter string, tags []string, shard string) (run.Selection, error) {
	sel := run.Selection{Tags: tags}
	if filter != "" {
		re, err := regexp.Compile(filter)
		if err != nil {
			return sel, fmt.Errorf("--filter %q: %w", filter, err)
		}
		sel.Filter = re
	}
	if shard != "" {
		i, n, err := run.ParseShard(shard)
		if err != nil {
			return sel, fmt.Errorf("--shard %q: %w", shard, err)
		}
		sel.Shard, sel.Shards = i, n
	}
	return sel, nil
}

// loadSuite loads the scenarios at paths, or the default suite.
func loadSuite(paths []string) ([]*scenario.Scenario, error) {
	if len(paths) > 0 {
		return scenario.Load(paths...)
	}
	if fi, err := os.Stat(defaultSuiteDir); err == nil && fi.IsDir() {
		return scenario.Load(defaultSuiteDir)
	}
	return scenario.LoadFS(scenarios.FS, ".", "builtin:"+defaultSuiteDir)
}

func durationSince(now func() time.Time, start time.Time) history.Duration {
	return history.Duration(now().Sub(start))
}

// tableOut is where the table and the total line go: stdout, or stderr
// when a report is written to stdout (FILE -).
func (opts *runOptions) tableOut() io.Writer {
	if opts.reportFiles.toStdout() != "" {
		return opts.ErrOut
	}
	return opts.Out
}

// tableOptions are the table's options from -q, -v and the terminal.
func (opts *runOptions) tableOptions() report.TableOptions {
	width := opts.Width
	if width == 0 {
		width = terminalWidth(opts.tableOut(), opts.getenv())
	}
	return report.TableOptions{Verbose: opts.Verbose >= 1, Timelines: opts.Verbose >= 2, Quiet: opts.Quiet, Width: width}
}
