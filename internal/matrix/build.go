package matrix

import (
	"context"
	"errors"
	"fmt"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/replaycheck/replaycheck/fakes/fault"
	"github.com/replaycheck/replaycheck/internal/harness/explore"
	"github.com/replaycheck/replaycheck/internal/harness/history"
	"github.com/replaycheck/replaycheck/internal/harness/target"
)

// Agent is one row to build: a target and what the report says of it.
type Agent struct {
	Target target.Target
	// File is the target file ("" for a builtin: target); Version the
	// agent's version read from it ("" when unknown).
	File    string
	Version string
}

// Options configure Build. The zero value sweeps every non-optional kind
// with explore's defaults, one agent after the other.
type Options struct {
	// Kinds restricts the mechanisms to these fault kinds (explore's
	// names); nil means every kind not marked optional.
	Kinds []string
	// Seed seeds the sweeps; "" means "replaycheck".
	Seed string
	// Parallel caps the runs at once within an agent's sweep (see
	// explore.Options.Parallel); 0 means explore's default.
	Parallel int
	// Timeout is each run's deadline; 0 means 30s.
	Timeout time.Duration
	// OutDir is where each agent's reproductions are written, in a
	// directory of its own; "" writes none.
	OutDir string
	// Shard and Shards select every Shards-th agent, starting at Shard
	// (1-based); zero Shards builds every row.
	Shard, Shards int
	// OnProgress, when set, is called as the sweeps advance.
	OnProgress func(Progress)
}

// Progress is the matrix's progress: the agent being swept (1-based, of
// Agents) and its sweep's own progress.
type Progress struct {
	Agent, Agents int
	Target        string
	explore.Progress
}

// Build sweeps each agent (of the shard) and returns its matrix. An agent
// that cannot be swept (its base fails clean, its target does not start)
// has a row with Error and no cells; ctx's cancellation ends the matrix
// with the rows built so far and ctx's error.
func Build(ctx context.Context, agents []Agent, opts Options) (*Matrix, error) {
	start := time.Now()
	if opts.Seed == "" {
		opts.Seed = "replaycheck"
	}
	if opts.Timeout <= 0 {
		opts.Timeout = 30 * time.Second
	}
	kinds, err := explore.SelectKinds(opts.Kinds)
	if err != nil {
		return nil, err
	}
	m := &Matrix{Version: FormatVersion, Kind: KindMatrix, Seed: opts.Seed}
	if opts.Shards > 0 {
		m.Shard = fmt.Sprintf("%d/%d", opts.Shard, opts.Shards)
	}
	for i, a := range agents {
		if opts.Shards > 0 && i%opts.Shards != opts.Shard-1 {
			continue
		}
		row, err := buildRow(ctx, a, kinds, opts, func(p explore.Progress) {
			if opts.OnProgress != nil {
				opts.OnProgress(Progress{Agent: i + 1, Agents: len(agents), Target: a.Target.Name(), Progress: p})
			}
		})
		if err != nil {
			m.Wall = history.Duration(time.Since(start))
			return m, err
		}
		m.Rows = append(m.Rows, row)
	}
	m.Wall = history.Duration(time.Since(start))
	return m, nil
}

// buildRow sweeps one agent: the retry-policy fingerprint, which decides
// the kinds it sweeps, then the other kinds.
func buildRow(ctx context.Context, a Agent, kinds []explore.Kind, opts Options, progress func(explore.Progress)) (Row, error) {
	start := time.Now()
	row := Row{Target: a.Target.Name(), File: a.File, Version: a.Version}
	bases, err := explore.DefaultBases(a.Target)
	if err != nil {
		return row, fmt.Errorf("matrix row %s: %w", row.Target, err)
	}
	var printed, swept []explore.Kind
	for _, k := range kinds {
		if k.Fingerprinted() {
			printed = append(printed, k)
		} else {
			swept = append(swept, k)
		}
	}
	xo := explore.Options{
		Target: a.Target, Depth: explore.DefaultDepth, Seed: opts.Seed, MaxRuns: explore.DefaultMaxRuns,
		Parallel: opts.Parallel, Timeout: opts.Timeout, Confirm: explore.DefaultConfirm,
		Settings: fault.Settings{Stall: fault.DefaultSettings.Stall}, OnProgress: progress,
	}
	var reps []*explore.Report
	for _, phase := range []struct {
		name  string
		kinds []explore.Kind
	}{{"fingerprint", printed}, {"sweep", swept}} {
		if len(phase.kinds) == 0 {
			continue
		}
		po := xo
		po.Kinds, po.Fingerprint = phase.kinds, phase.name == "fingerprint"
		rep, err := explore.Explore(ctx, bases, po)
		var clean *explore.BaseFailedError
		switch {
		case errors.As(err, &clean):
			row.Error = err.Error()
			row.Wall = history.Duration(time.Since(start))
			return row, nil
		case err != nil:
			return row, fmt.Errorf("matrix row %s: %w", row.Target, err)
		case rep.Interrupted:
			return row, fmt.Errorf("matrix row %s: %w", row.Target, context.Cause(ctx))
		}
		if opts.OutDir != "" {
			dir := filepath.Join(opts.OutDir, slug(row.Target), phase.name)
			if err := explore.WriteFindings(dir, rep); err != nil {
				return row, fmt.Errorf("matrix row %s: %w", row.Target, err)
			}
		}
		if po.Fingerprint {
			row.Fingerprint = rep.Fingerprint
		}
		row.Runs += rep.Runs
		reps = append(reps, rep)
		for _, k := range phase.kinds {
			if c, ok := cellOf(k, rep, phase.name); ok {
				row.Cells = append(row.Cells, c)
			}
		}
	}
	row.Cells = inFamilyOrder(row.Cells)
	row.Pruned = pruned(kinds, row.Cells, opts.Kinds == nil)
	if err := addTargetColumns(ctx, a.Target, opts, &row, progress); err != nil {
		return row, fmt.Errorf("matrix row %s: %w", row.Target, err)
	}
	row.Wall = history.Duration(time.Since(start))
	return row, nil
}

// pruned lists the kinds of all not in cells (no point of the agent's runs
// takes them) and, with optional, the optional kinds, each with why.
func pruned(all []explore.Kind, cells []Cell, optional bool) []Pruned {
	var out []Pruned
	for _, k := range explore.Kinds() {
		switch {
		case slices.ContainsFunc(cells, func(c Cell) bool { return c.Mechanism == k.Name }):
		case !slices.ContainsFunc(all, func(a explore.Kind) bool { return a.Name == k.Name }) && k.Optional && optional:
			out = append(out, Pruned{Mechanism: k.Name, Reason: "only when named (--kinds)"})
		case !slices.ContainsFunc(all, func(a explore.Kind) bool { return a.Name == k.Name }):
			// Not asked for (--kinds): the matrix pruned nothing.
		case k.Transport != "":
			out = append(out, Pruned{Mechanism: k.Name, Reason: "the agent does not reach an MCP server over " + string(k.Transport)})
		default:
			out = append(out, Pruned{Mechanism: k.Name, Reason: "no point of the agent's runs takes it (no streamed answer, no such step)"})
		}
	}
	return out
}

// inFamilyOrder sorts cells by family, keeping the table's order within
// one.
func inFamilyOrder(cells []Cell) []Cell {
	slices.SortStableFunc(cells, func(a, b Cell) int {
		return slices.Index(Families(), a.Family) - slices.Index(Families(), b.Family)
	})
	return cells
}

// nonWord matches what a directory name leaves out of a target name.
var nonWord = regexp.MustCompile(`[^A-Za-z0-9._-]+`)

// slug is a target name as a directory name: builtin:naive is
// builtin-naive.
func slug(name string) string {
	s := strings.Trim(nonWord.ReplaceAllString(name, "-"), "-")
	if s == "" {
		return "target-" + strconv.Itoa(len(name))
	}
	return s
}
