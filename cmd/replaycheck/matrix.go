package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"time"

	"github.com/spf13/cobra"

	"github.com/replaycheck/replaycheck/internal/atomicfile"
	"github.com/replaycheck/replaycheck/internal/harness/explore"
	"github.com/replaycheck/replaycheck/internal/harness/target"
	"github.com/replaycheck/replaycheck/internal/harness/targetfile"
	"github.com/replaycheck/replaycheck/internal/inputfile"
	"github.com/replaycheck/replaycheck/internal/matrix"
	"github.com/replaycheck/replaycheck/report"
)

// matrixOptions are the arguments and flags of `replaycheck matrix`.
type matrixOptions struct {
	// Targets are the agents: target files or builtin:NAME.
	Targets  []string
	Kinds    []string
	Seed     string
	Parallel int
	Shard    string
	Timeout  time.Duration
	// OutDir is where the reproductions are written (--out); "" means
	// matrix-reproductions next to the first report file, or none.
	OutDir   string
	JSON     string
	Markdown string
	HTML     string
	// Diff is a matrix saved by --json to compare this one with (--diff).
	Diff     string
	Progress bool
	// NoPrune makes the runs that cannot change a cell (--no-prune).
	NoPrune bool

	Out    io.Writer
	ErrOut io.Writer
	// Terminal reports whether ErrOut is a terminal; nil means detect it.
	Terminal *bool
}

func newMatrixCmd() *cobra.Command {
	opts := &matrixOptions{}
	cmd := &cobra.Command{
		Use:   "matrix TARGET...",
		Short: "The replay-safety matrix: which agents write twice, under which failure",
		Long: `matrix sweeps each target (a target file, or builtin:NAME) as explore does and
answers, per agent and per mechanism (a fault kind of explore's table, grouped
by family: the model request fails, the model's answer breaks, the MCP server
over HTTP fails, the MCP server process over stdio dies, the agent is killed
and resumed (targets with resume:), and, on a client target, each of the
client scenarios of scenarios/clients run as run runs it), one of:

  safe                 every run wrote once per call, lost none, reported none that ran as failed
  DUPLICATE            a write ran twice for one call the model asked for
  LOST                 a call that never ran was not re-issued
  reported as failure  a completed write was reported to the model as failed
  hung                 the agent did not finish before the run's deadline
  unknown              no run could judge it (the reason is given)

each with its counts, what the agent told the model and the user, and, for
the bad ones, the smallest reproduction: a scenario file that fails on it
(written under --out, by default matrix-reproductions next to the first
report file). Each row names the agent's version, from the target file's
version key (the package lock that installs it, or a command).

The retry-policy fingerprint runs first: its cells decide the status and
reset mechanisms (and the stdio deaths), which the sweep then does not arm
again, and a fault on every attempt of a model request the agent never
retried is not swept (it is the fault once). A mechanism's runs after its
first DUPLICATE are not made (the cell is that run), and only the findings
a cell shows are confirmed; --no-prune makes every run. A
mechanism no point of an agent takes (a transport it does not speak, a
stream it does not read) is not a column for it; the output says which and
why. The agents are swept at once, each one's runs in parallel as explore's (a
client's or a stdio server's as the machine has a spare CPU), at most
--parallel at once over all agents; the verdicts are the same at
--parallel 1.

--diff OLD.json compares with a matrix saved by --json: each cell whose
verdict changed is listed; one that turned DUPLICATE or LOST fails the job
(exit 1). --shard I/N builds every N-th cell (agent × mechanism); 'report
merge' joins the parts' JSON into one matrix.

Exit codes: 0 the matrix was built (whatever its cells say), 1 with --diff a
cell turned DUPLICATE or LOST, 2 bad usage or input, 3 the harness could not
run, 130 interrupted.`,
		Example: `  # the built-in gateways, as Markdown and HTML
  replaycheck matrix builtin:guarded builtin:naive --markdown matrix.md --html matrix.html

  # shipped agents, offline, kept to compare after an upgrade
  unshare -rn sh -c 'ip link set lo up && replaycheck matrix targets/codex.yaml targets/openai-agents.yaml --json matrix.json'

  # after upgrading: what changed (exit 1 when a cell turned DUPLICATE or LOST)
  replaycheck matrix targets/codex.yaml targets/openai-agents.yaml --diff matrix.json

  # two CI jobs, joined
  replaycheck matrix targets/*.yaml --shard 1/2 --json part-1.json
  replaycheck report merge part-1.json part-2.json --json matrix.json --markdown matrix.md`,
		Args: cobra.MinimumNArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			opts.Targets = args
			opts.Out, opts.ErrOut = cmd.OutOrStdout(), cmd.ErrOrStderr()
			return runMatrix(cmd.Context(), opts)
		},
	}
	f := cmd.Flags()
	f.StringSliceVar(&opts.Kinds, "kinds", nil, "mechanisms (fault kinds) to sweep, comma-separated (default every one not marked only when named; see explore --help)")
	f.StringVar(&opts.Seed, "seed", "replaycheck", "seed of the sweeps and their run tokens")
	f.Var((*parallelFlag)(&opts.Parallel), "parallel", "runs at once over all agents, swept at once (default as explore's within each agent's sweep); the verdicts are the same at 1")
	f.Var((*shardFlag)(&opts.Shard), "shard", "build shard I of N (1-based) of the cells (agent × mechanism)")
	f.BoolVar(&opts.NoPrune, "no-prune", false, "make every run: every attempt of a model request the fingerprint shows the agent never retries, a stream cut after every event, a mechanism's runs after its first DUPLICATE, every finding's confirmations")
	opts.Timeout = 30 * time.Second
	f.Var((*timeoutFlag)(&opts.Timeout), "timeout", "deadline of each run")
	f.StringVar(&opts.OutDir, "out", "", "write the reproductions in DIR (default: matrix-reproductions next to the first report file)")
	f.StringVar(&opts.JSON, "json", "", "write the matrix as JSON to FILE (- for stdout)")
	f.StringVar(&opts.Markdown, "markdown", "", "write the matrix as Markdown to FILE (- for stdout)")
	f.StringVar(&opts.HTML, "html", "", "write the matrix as a self-contained HTML page to FILE (- for stdout)")
	f.StringVar(&opts.Diff, "diff", "", "compare with a matrix saved by --json FILE; a cell that turned DUPLICATE or LOST exits 1")
	f.BoolVar(&opts.Progress, "progress", false, "print a line per finished run (cells done, time left) where stderr is not a terminal")
	bindEnv(cmd, "parallel", "timeout", "shard", "seed", "json", "markdown", "html")
	cmd.ValidArgsFunction = completeTarget
	complete(cmd, "kinds", completeKinds)
	complete(cmd, "diff", completeFiles("json"))
	for _, name := range []string{"seed", "parallel", "shard", "timeout"} {
		complete(cmd, name, noCompletion)
	}
	return cmd
}

// runMatrix builds, writes and diffs the matrix.
func runMatrix(ctx context.Context, opts *matrixOptions) error {
	mo := matrix.Options{Kinds: opts.Kinds, Seed: opts.Seed, Parallel: opts.Parallel, Timeout: opts.Timeout, OutDir: opts.OutDir, NoPrune: opts.NoPrune}
	if _, err := explore.SelectKinds(opts.Kinds); err != nil {
		return asUsage(fmt.Errorf("--kinds: %w", err))
	}
	if opts.Shard != "" {
		sel, err := parseSelection("", nil, opts.Shard)
		if err != nil {
			return asUsage(err)
		}
		mo.Shard, mo.Shards = sel.Shard, sel.Shards
	}
	table, err := opts.table()
	if err != nil {
		return err
	}
	mo.OutDir = reproductionsDir(opts.OutDir, opts.JSON, opts.Markdown, opts.HTML)
	old, err := readDiff(opts.Diff)
	if err != nil {
		return err
	}
	ts, err := resolveTargets(opts.Targets, targetfile.Options{})
	if err != nil {
		return err
	}
	agents, err := matrixAgents(ctx, opts.Targets, ts)
	if err != nil {
		return asUsage(err)
	}
	p := &exploreProgress{what: "matrix", w: opts.ErrOut, terminal: isTerminal(opts.ErrOut), lines: opts.Progress}
	if opts.Terminal != nil {
		p.terminal = *opts.Terminal
	}
	mo.OnProgress = matrixProgress(p)
	m, err := matrix.Build(ctx, agents, mo)
	p.finish()
	if err != nil && ctx.Err() == nil {
		return fmt.Errorf("building the matrix: %w", err)
	}
	werr := writeMatrix(opts, m)
	if err != nil {
		return errors.Join(interrupted{cause: context.Cause(ctx)}, werr)
	}
	return errors.Join(diffMatrix(table, opts.Diff, old, m), werr)
}

// reproductionsDir is where a matrix's reproductions go: dir (--out) when
// given, else matrix-reproductions next to the first of the report files
// that is a file (not "" or stdout); "" when none is.
func reproductionsDir(dir string, reports ...string) string {
	for _, f := range reports {
		if dir == "" && f != "" && f != stdoutName {
			dir = filepath.Join(filepath.Dir(f), "matrix-reproductions")
		}
	}
	return dir
}

// readDiff reads the matrix --diff names; nil when path is "".
func readDiff(path string) (*matrix.Matrix, error) {
	if path == "" {
		return nil, nil
	}
	m, err := readMatrix(path)
	if err != nil {
		return nil, asUsage(fmt.Errorf("--diff %s: %w", path, err))
	}
	return m, nil
}

// diffMatrix writes to table every cell whose verdict changed from old,
// saved at path, to m, and returns errRulesBroken when one turned
// DUPLICATE or LOST; nothing when old is nil.
func diffMatrix(table io.Writer, path string, old, m *matrix.Matrix) error {
	if old == nil {
		return nil
	}
	changes := matrix.Diff(old, m)
	err := tableError(report.WriteMatrixDiff(table, path, changes))
	for _, c := range changes {
		if c.Worse() {
			return errors.Join(errRulesBroken, err)
		}
	}
	return err
}

// matrixAgents pairs each target with its file and the version the file
// names.
func matrixAgents(ctx context.Context, args []string, ts []target.Target) ([]matrix.Agent, error) {
	agents := make([]matrix.Agent, len(ts))
	for i, t := range ts {
		agents[i] = matrix.Agent{Target: t}
		if target.IsNamed(args[i]) {
			continue
		}
		v, err := targetfile.ReadVersion(ctx, args[i], targetfile.Options{})
		if err != nil {
			return nil, err
		}
		of, err := targetfile.ReadVariantOf(args[i], targetfile.Options{})
		if err != nil {
			return nil, err
		}
		agents[i].File, agents[i].Version, agents[i].VariantOf = args[i], v, of
	}
	return agents, nil
}

// readMatrix reads a matrix saved by matrix --json.
func readMatrix(path string) (*matrix.Matrix, error) {
	f, err := inputfile.Open(path)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	return matrix.Read(f)
}

// mergeMatrices joins the matrices of shards (matrix --shard I/N --json)
// when the first input is one: handled is false, and nothing is done, when
// it is not (a run's report).
func mergeMatrices(opts *reportMergeOptions) (handled bool, err error) {
	first, err := readMatrix(opts.Inputs[0])
	if err != nil {
		return false, nil
	}
	parts := []*matrix.Matrix{first}
	for _, path := range opts.Inputs[1:] {
		m, err := readMatrix(path)
		if err != nil {
			return true, asUsage(fmt.Errorf("%s: %w: merge joins the parts of one matrix, or the reports of one run", path, err))
		}
		parts = append(parts, m)
	}
	if opts.JUnit != "" {
		return true, asUsage(errors.New("--junit: a matrix has no JUnit form; write --json, --markdown or --html"))
	}
	old, err := readDiff(opts.Diff)
	if err != nil {
		return true, err
	}
	out := reproductionsDir(opts.OutDir, opts.JSON, opts.Markdown, opts.HTML)
	copies := make([][]matrix.Copy, len(parts))
	dirs := make([]string, len(parts)) // where each part wrote its reproductions
	if out != "" {
		for i, p := range parts {
			dirs[i] = p.Reproductions
			copies[i] = p.MoveReproductions(partReproductions(opts.Inputs[i], p), out)
		}
	}
	m, err := matrix.Merge(opts.Inputs, parts)
	if err != nil {
		return true, asUsage(err)
	}
	if out != "" {
		m.Reproductions = out
	}
	for i, cs := range copies {
		if err := copyReproductions(cs); err != nil {
			return true, asUsage(fmt.Errorf("%s's reproductions: %w: merge each part with the %s directory beside it (its shard's whole artifact)", opts.Inputs[i], err, filepath.Base(dirs[i])))
		}
	}
	mo := &matrixOptions{JSON: opts.JSON, Markdown: opts.Markdown, HTML: opts.HTML, Out: opts.Out, ErrOut: opts.ErrOut}
	table, err := mo.table()
	if err != nil {
		return true, err
	}
	werr := writeMatrix(mo, m)
	return true, errors.Join(diffMatrix(table, opts.Diff, old, m), werr)
}

// partReproductions is where the reproductions of part, read from path,
// are now: the directory of their directory's name next to path (where a
// shard's artifact puts them), or else where part was built.
func partReproductions(path string, part *matrix.Matrix) string {
	moved := filepath.Join(filepath.Dir(path), filepath.Base(part.Reproductions))
	if fi, err := os.Stat(moved); err == nil && fi.IsDir() {
		return moved
	}
	return part.Reproductions
}

// copyReproductions makes the copies, each file replaced whole; a copy
// onto itself is none.
func copyReproductions(copies []matrix.Copy) error {
	for _, c := range copies {
		if filepath.Clean(c.From) == filepath.Clean(c.To) {
			continue
		}
		b, err := os.ReadFile(c.From)
		if err != nil {
			return err
		}
		if err := os.MkdirAll(filepath.Dir(c.To), 0o755); err != nil {
			return err
		}
		if err := atomicfile.Replace(c.To, b); err != nil {
			return err
		}
	}
	return nil
}

// table is where the terminal table goes: stdout, or stderr when a report
// file is - (stdout), which at most one can be.
func (opts *matrixOptions) table() (io.Writer, error) {
	stdout := 0
	for _, f := range []string{opts.JSON, opts.Markdown, opts.HTML} {
		if f == stdoutName {
			stdout++
		}
	}
	switch {
	case stdout > 1:
		return nil, asUsage(errors.New("at most one of --json, --markdown and --html can be - (stdout)"))
	case stdout == 1:
		return opts.ErrOut, nil
	}
	return opts.Out, nil
}

// writeMatrix writes m as the terminal table and as the report files
// opts names; an error writing one does not stop the others.
func writeMatrix(opts *matrixOptions, m *matrix.Matrix) error {
	table, err := opts.table()
	if err != nil {
		return err
	}
	return errors.Join(tableError(report.WriteMatrixTable(table, m)), writeReportFiles(opts.Out, []reportFile{
		{opts.JSON, func(w io.Writer) error { return report.WriteMatrixJSON(w, m) }},
		{opts.Markdown, func(w io.Writer) error { return report.WriteMatrixMarkdown(w, m) }},
		{opts.HTML, func(w io.Writer) error { return report.WriteMatrixHTML(w, m) }},
	}))
}

// matrixProgress shows the matrix's progress through p: the cells done
// (of all) and the time the matrix has left (see matrix.Progress.Left), or
// that it is unknown yet, then the agent whose run ended, its sweep and
// that sweep's phase.
func matrixProgress(p *exploreProgress) func(matrix.Progress) {
	return func(mp matrix.Progress) {
		left := ""
		switch {
		case !mp.LeftKnown:
			left = ", time left unknown"
		case mp.Left > 0:
			left = fmt.Sprintf(", about %s left", mp.Left.Round(time.Second))
		}
		pr := mp.Progress
		pr.Phase = fmt.Sprintf("%.0f/%d cells%s · agent %d/%d %s %s %s", mp.Done, mp.Cells, left, mp.Agent, mp.Agents, mp.Target, mp.Step, pr.Phase)
		p.update(pr)
	}
}
