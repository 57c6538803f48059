package main

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"regexp"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/spf13/cobra"
	"github.com/spf13/pflag"

	"github.com/replaycheck/replaycheck/fakes/fault"
	"github.com/replaycheck/replaycheck/internal/atomicfile"
	"github.com/replaycheck/replaycheck/internal/harness/explore"
	"github.com/replaycheck/replaycheck/internal/harness/scenario"
	"github.com/replaycheck/replaycheck/internal/harness/targetfile"
	"github.com/replaycheck/replaycheck/report"
)

// exploreOptions are the flags of `replaycheck explore`.
type exploreOptions struct {
	Paths       []string
	Target      string
	Kinds       []string
	Points      string
	Depth       int
	Fingerprint bool
	Random      int
	Seed        string
	MaxRuns     int
	Shard       string
	Parallel    int
	Timeout     time.Duration
	Stall       time.Duration
	Slow        time.Duration
	Linger      time.Duration
	Dribble     time.Duration
	// SlowSet, LingerSet and DribbleSet say that --slow, --linger and
	// --dribble were given; unset, they scale to the target
	// (explore.Options.Settings).
	SlowSet, LingerSet, DribbleSet bool
	Confirm                        int
	// OutDir is the directory the confirmed findings are written to as
	// scenario files (--out); "" writes none.
	OutDir string
	All    bool
	// Diff is a fingerprint saved by --fingerprint --json to compare this
	// sweep's with (--diff); "" compares with none.
	Diff string
	// Progress prints a line per finished run with the runs done, the total
	// and the time left (--progress), where not a terminal.
	Progress bool
	// Command is the command line as given (commandLine), for the next
	// step the report ends with; "" leaves it out.
	Command string
	reportFiles

	Out    io.Writer
	ErrOut io.Writer
	// Terminal reports whether ErrOut is a terminal (progress in place);
	// nil means detect it.
	Terminal *bool
}

func newExploreCmd() *cobra.Command {
	opts := &exploreOptions{}
	cmd := &cobra.Command{
		Use:   "explore [BASE_SCENARIO...]",
		Short: "Find where a target can duplicate a write, with no scenario written by hand",
		Long: `explore runs each base scenario once without faults, maps every point where a
fault can go — each model request, each event boundary of each streamed answer
(after the headers, after the k-th event, right after the complete tool call,
before the terminal event) and each MCP tools/call — then runs the base once
per point and fault kind, judging every replay rule of the catalogue.

Each failure is reduced to its minimal fault schedule; failures that break
the same first rule with faults of one family (any model-side fault, or one
MCP fault kind) at one step (initial, follow_up, tools/call, an MCP session
step) are one finding, a mechanism, however many bases and fault kinds show
it. The smallest of them is its reproduction, re-run (--confirm times, 3 by
default): one that does not fail every time is reported as flaky. The report
opens with one line per finding, then each in detail; --all adds every cell.
With --out DIR each confirmed finding is written as a scenario file that
fails on this target and passes on one without the bug — also one that does
not retry at all (it expects no duplicate write, and the broken rules only
where the run can judge them: expect.rules_if_judged): a regression test in
one step. Each finding says what a fix looks like (its rule's advice, which
'replaycheck rules NAME' prints with an example), and the report ends with
the next step: the command that writes the findings (without --out), or the
one that runs them on the target once it is fixed (with it).

With no BASE_SCENARIO it explores one streamed tool-call request per dialect
(on the built-in gateway also a keyed write, four parallel calls, a short tool
timeout and a fallback group); on a client target, one run of its command. A
base that fails without any fault stops the sweep: nothing to explore until
it passes clean.

Fault kinds (--kinds, comma-separated; the default is every one not marked
"only when named"):
` + kindHelp() + `
--fingerprint sweeps only the statuses and the reset, each on every attempt of
each model request, and prints the target's retry policy: attempts (as the
upstream saw them, so a client's retries times a proxy's), the gaps between
them, whether Retry-After was honoured, the total time, what the app got and
how many times the tool ran; --json keeps it, and --diff FILE compares this
sweep's policy with one kept that way: what changed in attempts, gaps (beyond
timing jitter), Retry-After, outcome and tool runs, row by row. OUTER GAPS
are the waits between bursts of attempts, where an agent's own backoff wraps
its SDK's retries; ATTEMPTS N+ means the run hit --timeout first. On a base
that reaches the ledger over stdio it also arms each stdio server death at
every tools/call and counts the calls the ledger received and the processes
spawned (SPAWNS: the respawns).

The sweep runs in a fixed order; --depth 2 adds every pair of faults on
different requests and --random N adds N random schedules of two or three
faults, both drawn with --seed, so the same seed gives the same sweep. A
target that hangs or dies on one cell fails that cell and the sweep goes on;
Ctrl-C stops it and reports what was found so far (exit 130).

On a client target the runs start only as the machine has a spare CPU (at
most --parallel at once): a client's start costs CPU, its backoff none, and
crowded clients start slower and behave otherwise than alone. On a terminal
the progress shows in place with the time left; --progress prints it as a
line per run elsewhere (a CI log).

Reports: --junit, --json, --markdown and --html FILE; FILE - writes that
report to stdout (one at most) and the table then goes to stderr, so
'explore --json - | jq' reads only JSON. 'report merge' joins run reports, not
a sweep's shards.

Exit codes: 0 nothing found, 1 a finding (or a base that fails clean), 2 bad
usage or input, 3 the harness or the target could not run, 130 interrupted
(the reports hold what was found so far).`,
		Example: `  # where can the built-in naive gateway duplicate a write?
  replaycheck explore --target builtin:naive

  # my agent, one run of its command per cell, findings written as scenarios
  replaycheck explore --target targets/openai-agents.yaml --timeout 60s --out found/

  # only stream cuts of the follow-up, and pairs of faults, with a budget
  replaycheck explore --target targets/litellm.yaml --kinds drop,500 --points follow_up --depth 2 --max-runs 300

  # its retry policy as a table, saved to diff against the next version of the client
  replaycheck explore --target targets/openai-agents.yaml --fingerprint --json policy-v1.json

  # after upgrading the client: what changed in its retry policy
  replaycheck explore --target targets/openai-agents.yaml --fingerprint --diff policy-v1.json

  # a base scenario of my own, reports for CI
  replaycheck explore my-base.yaml --target builtin:guarded --junit explore.xml --json explore.json`,
		RunE: func(cmd *cobra.Command, args []string) error {
			opts.Paths, opts.Command = args, commandLine(cmd, args)
			opts.Out, opts.ErrOut = cmd.OutOrStdout(), cmd.ErrOrStderr()
			opts.SlowSet, opts.LingerSet, opts.DribbleSet = cmd.Flags().Changed("slow"), cmd.Flags().Changed("linger"), cmd.Flags().Changed("dribble")
			return runExplore(cmd.Context(), opts)
		},
	}
	f := cmd.Flags()
	f.StringVar(&opts.Target, "target", "builtin:guarded", "target to explore: builtin:NAME or a target FILE")
	f.StringSliceVar(&opts.Kinds, "kinds", nil, "fault kinds to sweep, comma-separated (default every one but stall)")
	f.StringVar(&opts.Points, "points", "", "sweep only the fault points whose description matches this regular expression, e.g. follow_up or tools/call")
	f.IntVar(&opts.Depth, "depth", explore.DefaultDepth, "faults per run: 1, or 2 to add every pair")
	f.BoolVar(&opts.Fingerprint, "fingerprint", false, "the target's retry policy: each status and reset on every attempt of each model request, as a table (JSON with --json)")
	f.IntVar(&opts.Random, "random", 0, "add N random schedules of two or three faults, drawn with --seed")
	f.StringVar(&opts.Seed, "seed", "replaycheck", "seed of the sampled pairs, the random schedules and the run tokens")
	f.IntVar(&opts.MaxRuns, "max-runs", explore.DefaultMaxRuns, "bound on the sweep's runs (single faults first, then pairs, then random schedules)")
	f.Var((*shardFlag)(&opts.Shard), "shard", "run shard I of N (1-based) of the sweep's cells")
	f.Var((*parallelFlag)(&opts.Parallel), "parallel", "runs at once (default 8 per CPU: the runs mostly wait, and as many again for runs a fault holds a second or more: a Retry-After, a slow tool); on a client target a cap: each run starts when a CPU is spare, so the clients do not slow each other")
	opts.Timeout = 30 * time.Second
	f.Var((*timeoutFlag)(&opts.Timeout), "timeout", "deadline of each run")
	f.DurationVar(&opts.Stall, "stall", fault.DefaultSettings.Stall, "how long the stall kind holds a model answer back (set it past your client's deadline)")
	f.DurationVar(&opts.Slow, "slow", fault.DefaultSettings.Slow, "how long the mcp-slow kind holds a tool's answer back; set it past your target's tool timeout (unset: 10 clean runs of each base, at least twice a base's gateway tool_timeout, at most the default)")
	f.DurationVar(&opts.Linger, "linger", fault.DefaultSettings.Linger, "how long drop-linger keeps a cut stream open, silent, before the cut (unset: 10 clean runs of each base, at most the default)")
	f.DurationVar(&opts.Dribble, "dribble", fault.DefaultSettings.Dribble, "how long the dribble kind waits before each event of a stream (unset: one clean run of each base, at most the default)")
	f.IntVar(&opts.Confirm, "confirm", explore.DefaultConfirm, "re-run each minimal failure this many times; one that does not fail every time is flaky")
	f.StringVar(&opts.OutDir, "out", "", "write each confirmed finding as a scenario file in DIR")
	f.BoolVar(&opts.All, "all", false, "list every cell of the matrix with its verdict and finding")
	f.BoolVar(&opts.Progress, "progress", false, "print a line per finished run (runs done of the total, failing so far, time left) where stderr is not a terminal, which shows it in place")
	f.StringVar(&opts.Diff, "diff", "", "with --fingerprint: compare the retry policy with one saved by --fingerprint --json FILE and print what changed")
	f.StringVar(&opts.JUnit, "junit", "", "write a JUnit XML report (one testcase per cell) to FILE (- for stdout)")
	f.StringVar(&opts.JSON, "json", "", "write the sweep (points, cells, findings) as JSON to FILE (- for stdout)")
	f.StringVar(&opts.Markdown, "markdown", "", "write a Markdown summary to FILE (- for stdout)")
	f.StringVar(&opts.HTML, "html", "", "write a self-contained HTML report (each cell's sequence diagram, failing cells first) to FILE (- for stdout)")
	bindEnv(cmd, "target", "parallel", "timeout", "shard", "seed", "junit", "json", "markdown", "html")
	cmd.ValidArgsFunction = completeScenarioPaths
	complete(cmd, "target", completeTarget)
	complete(cmd, "kinds", completeKinds)
	complete(cmd, "diff", completeFiles("json"))
	for _, name := range []string{"points", "depth", "random", "seed", "max-runs", "shard", "parallel", "timeout", "stall", "slow", "linger", "dribble", "confirm"} {
		complete(cmd, name, noCompletion)
	}
	return cmd
}

// kindHelp lists the fault kinds, one per line, for the help text.
func kindHelp() string {
	var b strings.Builder
	for _, k := range explore.Kinds() {
		opt := ""
		if k.Optional {
			opt = " (only when named)"
		}
		fmt.Fprintf(&b, "  %-18s %s%s\n", k.Name, k.Doc, opt)
	}
	return b.String()
}

// runExplore checks the flags, explores and reports.
func runExplore(ctx context.Context, opts *exploreOptions) error {
	xo, err := exploreSettings(opts)
	if err != nil {
		return asUsage(err)
	}
	// FILE - writes that report to stdout, and the table goes to stderr.
	if err := opts.checkStdout(); err != nil {
		return err
	}
	table := opts.Out
	if opts.toStdout() != "" {
		table = opts.ErrOut
	}
	ts, err := resolveTargets([]string{opts.Target}, targetfile.Options{})
	if err != nil {
		return err
	}
	xo.Target = ts[0]
	var bases []*scenario.Scenario
	if len(opts.Paths) > 0 {
		if bases, err = scenario.Load(opts.Paths...); err != nil {
			return asUsage(err)
		}
	} else if bases, err = explore.DefaultBases(xo.Target); err != nil {
		return err
	}
	if err := explore.Applicable(bases, xo.Target); err != nil {
		return asUsage(err)
	}
	saved, err := readFingerprint(opts.Diff)
	if err != nil {
		return asUsage(err)
	}
	p := &exploreProgress{what: "explore", w: opts.ErrOut, terminal: isTerminal(opts.ErrOut), lines: opts.Progress}
	if opts.Terminal != nil {
		p.terminal = *opts.Terminal
	}
	xo.OnProgress = p.update
	rep, err := explore.Explore(ctx, bases, xo)
	p.finish()
	// A base that fails clean ends the sweep, but its reports are written:
	// a CI job shows why. A target that did not start is the harness's
	// failure to run (exit 3, as run says), anything else a failure.
	var clean *explore.BaseFailedError
	outcome := error(nil)
	switch {
	case errors.As(err, &clean) && clean.TargetNotStarted():
		outcome = fmt.Errorf("exploring %s: %w", xo.Target.Name(), err)
	case errors.As(err, &clean):
		fmt.Fprintln(table, err)
		outcome = notPassed{unmet: []string{report.TerminalText(clean.Base) + " on " + report.TerminalText(xo.Target.Name())}}
		if brokenRule(clean.Result) {
			outcome = errRulesBroken
		}
	case err != nil:
		return fmt.Errorf("exploring %s: %w", xo.Target.Name(), err)
	}
	// A report that cannot be written (the findings, the table too) does not
	// hide the outcome (an interrupt, a finding) or the other reports: it is
	// joined to it.
	var werrs []error
	if opts.OutDir != "" {
		werrs = append(werrs, explore.WriteFindings(opts.OutDir, rep))
	}
	ro := report.ExploreOptions{All: opts.All, Next: nextStep(opts, rep)}
	werrs = append(werrs, tableError(report.WriteExploreTable(table, rep, ro)))
	if saved != nil {
		changes := explore.DiffFingerprints(saved.Fingerprint, rep.Fingerprint)
		werrs = append(werrs, tableError(report.WriteFingerprintDiff(table, opts.Diff, changes, len(rep.Fingerprint))))
	}
	werrs = append(werrs, writeReportFiles(opts.Out, []reportFile{
		{opts.JUnit, func(w io.Writer) error { return report.WriteJUnit(w, report.ExploreSuite(rep)) }},
		{opts.JSON, func(w io.Writer) error { return report.WriteExploreJSON(w, rep) }},
		{opts.Markdown, func(w io.Writer) error { return report.WriteExploreMarkdown(w, rep, ro) }},
		{opts.HTML, func(w io.Writer) error {
			return report.WriteHTMLWith(w, report.ExploreSuite(rep), report.HTMLOptions{Preface: report.ExploreFindingsText(rep)})
		}},
	}))
	werr := errors.Join(werrs...)
	if outcome != nil {
		return errors.Join(outcome, werr)
	}
	if rep.Interrupted {
		fmt.Fprintf(opts.ErrOut, "explore interrupted: %d cells not run; the report holds what was found so far\n", rep.Unrun)
		return errors.Join(interrupted{cause: context.Cause(ctx)}, werr)
	}
	if len(rep.Findings) > 0 {
		return errors.Join(errRulesBroken, werr)
	}
	return werr
}

// nextStep is what to do after the sweep's findings: without --out, the
// command as given with --out added, which writes each confirmed one as a
// scenario file; with --out, the command that runs the files written on the
// target once it is fixed. Nil when there is no command line to go on, or
// nothing to write (every finding flaky) or written (the files could not
// be).
func nextStep(opts *exploreOptions, rep *explore.Report) *report.NextStep {
	switch {
	case opts.Command == "":
		return nil
	case opts.OutDir == "" && slices.ContainsFunc(rep.Findings, func(f explore.Finding) bool { return !f.Flaky }):
		return &report.NextStep{
			Say:     "--out DIR writes each finding's reproduction as a scenario file, a regression test that fails here and passes once the bug is fixed:",
			Command: opts.Command + " --out found",
		}
	case !slices.ContainsFunc(rep.Findings, func(f explore.Finding) bool { return f.File != "" }):
		return nil
	}
	return &report.NextStep{
		Say:     "once the target is fixed, run the reproductions on it; each passes where its bug is gone:",
		Command: "replaycheck run " + shellWord(opts.OutDir) + " --target " + shellWord(opts.Target),
	}
}

// commandLine renders the command as it was given: its path, its
// arguments, then the flags set on the command line (not those an
// environment variable set), each word quoted for a shell where it needs it.
func commandLine(cmd *cobra.Command, args []string) string {
	words := strings.Fields(cmd.CommandPath())
	for _, a := range args {
		words = append(words, shellWord(a))
	}
	cmd.Flags().Visit(func(f *pflag.Flag) {
		switch v, ok := f.Value.(pflag.SliceValue); {
		case ok:
			words = append(words, "--"+f.Name, shellWord(strings.Join(v.GetSlice(), ",")))
		case f.Value.Type() == "bool" && f.Value.String() == "true":
			words = append(words, "--"+f.Name)
		case f.Value.Type() == "bool":
			words = append(words, "--"+f.Name+"=false")
		default:
			words = append(words, "--"+f.Name, shellWord(f.Value.String()))
		}
	})
	return strings.Join(words, " ")
}

// shellWord quotes s for a POSIX shell unless it is made only of letters,
// digits and the punctuation of paths, flags and target names.
func shellWord(s string) string {
	unsafe := func(r rune) bool {
		return !('a' <= r && r <= 'z' || 'A' <= r && r <= 'Z' || '0' <= r && r <= '9' || strings.ContainsRune("-_./:,=+@%", r))
	}
	if s != "" && !strings.ContainsFunc(s, unsafe) {
		return s
	}
	return "'" + strings.ReplaceAll(s, "'", `'\''`) + "'"
}

// exploreSettings turns the flags into explore options, naming the first
// bad one.
func exploreSettings(opts *exploreOptions) (explore.Options, error) {
	xo := explore.Options{
		Depth: opts.Depth, Fingerprint: opts.Fingerprint, Random: opts.Random, Seed: opts.Seed, MaxRuns: opts.MaxRuns, Parallel: opts.Parallel, Timeout: opts.Timeout,
		Settings: fault.Settings{Stall: opts.Stall, Slow: opts.Slow, Linger: opts.Linger, Dribble: opts.Dribble},
		Confirm:  opts.Confirm,
	}
	switch {
	case opts.Depth < 1 || opts.Depth > 2:
		return xo, fmt.Errorf("--depth %d: want 1 or 2", opts.Depth)
	case opts.Random < 0:
		return xo, fmt.Errorf("--random %d: want 0 or more", opts.Random)
	case opts.MaxRuns < 1:
		return xo, fmt.Errorf("--max-runs %d: want 1 or more", opts.MaxRuns)
	case opts.Stall <= 0 || opts.Slow <= 0 || opts.Linger <= 0 || opts.Dribble <= 0:
		return xo, fmt.Errorf("--stall, --slow, --linger and --dribble want positive durations")
	case opts.Confirm < 1:
		return xo, fmt.Errorf("--confirm %d: want 1 or more", opts.Confirm)
	case opts.Diff != "" && !opts.Fingerprint:
		return xo, fmt.Errorf("--diff compares retry-policy fingerprints: it needs --fingerprint")
	case opts.OutDir == stdoutName:
		return xo, fmt.Errorf("--out -: want a directory for the finding files (stdout cannot hold them; --json - writes the sweep there)")
	}
	if !opts.SlowSet {
		xo.Settings.Slow = 0
	}
	if !opts.LingerSet {
		xo.Settings.Linger = 0
	}
	if !opts.DribbleSet {
		xo.Settings.Dribble = 0
	}
	if len(opts.Kinds) > 0 || !opts.Fingerprint {
		kinds, err := explore.SelectKinds(opts.Kinds)
		if err != nil {
			return xo, fmt.Errorf("--kinds: %w", err)
		}
		xo.Kinds = kinds
	}
	if opts.Points != "" {
		re, err := regexp.Compile(opts.Points)
		if err != nil {
			return xo, fmt.Errorf("--points %q: %w", opts.Points, err)
		}
		xo.Points = re
	}
	if opts.Shard != "" {
		sel, err := parseSelection("", nil, opts.Shard)
		if err != nil {
			return xo, err
		}
		xo.Shard, xo.Shards = sel.Shard, sel.Shards
	}
	return xo, nil
}

// readFingerprint reads the saved sweep --diff names; nil for "".
func readFingerprint(path string) (*explore.Report, error) {
	if path == "" {
		return nil, nil
	}
	f, err := os.Open(path)
	if err != nil {
		return nil, fmt.Errorf("--diff: %w", err)
	}
	defer f.Close()
	rep, err := explore.ReadReport(f)
	if err != nil {
		return nil, fmt.Errorf("--diff %s: %w", path, err)
	}
	if len(rep.Fingerprint) == 0 {
		return nil, fmt.Errorf("--diff %s: the report holds no fingerprint (write one with explore --fingerprint --json FILE)", path)
	}
	return rep, nil
}

// reportFile is a report to write: its path ("" for none, - for stdout)
// and how to write it.
type reportFile struct {
	path  string
	write func(io.Writer) error
}

// writeReportFiles writes each of files, the one to stdout on out; an
// error writing one does not stop the others, and the errors are joined.
func writeReportFiles(out io.Writer, files []reportFile) error {
	var errs []error
	for _, f := range files {
		switch f.path {
		case "":
		case stdoutName:
			var b bytes.Buffer
			if err := f.write(&b); err != nil {
				errs = append(errs, fmt.Errorf("writing a report to stdout: %w", err))
			} else {
				errs = append(errs, writeStdout(out, b.Bytes()))
			}
		default:
			errs = append(errs, writeReport(f.path, f.write))
		}
	}
	return errors.Join(errs...)
}

// writeReport writes a report to path through a temporary file
// (replaceFile), so that a failed write leaves no truncated report.
func writeReport(path string, write func(io.Writer) error) error {
	var b bytes.Buffer
	if err := write(&b); err != nil {
		return fmt.Errorf("writing %s: %w", path, err)
	}
	return atomicfile.Replace(path, b.Bytes())
}

// exploreProgress shows the sweep's progress: in place on a terminal (done
// and total, failures so far, an estimate of the time left), a line per
// phase otherwise, and with lines also a line per run.
type exploreProgress struct {
	mu sync.Mutex
	// what names the sweep at the start of each line: "explore", or the
	// matrix's agent.
	what     string
	w        io.Writer
	terminal bool
	lines    bool
	phase    string
	shown    bool
}

func (p *exploreProgress) update(pr explore.Progress) {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.terminal {
		fmt.Fprintf(p.w, "\r\033[K%s %s [%d/%d] %d failing%s", p.what, pr.Phase, pr.Done, pr.Total, pr.Failed, timeLeft(pr, " · "))
		p.shown = true
		return
	}
	switch {
	case pr.Done == pr.Total:
		fmt.Fprintf(p.w, "%s %s: %d runs, %d failing, in %s\n", p.what, pr.Phase, pr.Total, pr.Failed, pr.Elapsed.Round(10*time.Millisecond))
	case p.lines:
		fmt.Fprintf(p.w, "%s %s: %d/%d runs, %d failing, %s%s\n", p.what, pr.Phase, pr.Done, pr.Total, pr.Failed, pr.Elapsed.Round(time.Second), timeLeft(pr, ", "))
	}
}

// timeLeft estimates, after sep, the time the phase has left at the pace of
// its runs so far; "" before the first run ends.
func timeLeft(pr explore.Progress, sep string) string {
	if pr.Done == 0 || pr.Done >= pr.Total {
		return ""
	}
	left := time.Duration(float64(pr.Elapsed) / float64(pr.Done) * float64(pr.Total-pr.Done))
	return fmt.Sprintf("%sabout %s left", sep, left.Round(time.Second))
}

func (p *exploreProgress) finish() {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.terminal && p.shown {
		fmt.Fprint(p.w, "\r\033[K")
	}
}
