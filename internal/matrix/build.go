package matrix

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/replaycheck/replaycheck/fakes/fault"
	"github.com/replaycheck/replaycheck/internal/harness/explore"
	"github.com/replaycheck/replaycheck/internal/harness/history"
	"github.com/replaycheck/replaycheck/internal/harness/run"
	"github.com/replaycheck/replaycheck/internal/harness/target"
)

// Agent is one row to build: a target and what the report says of it.
type Agent struct {
	Target target.Target
	// File is the target file ("" for a builtin: target); Version the
	// agent's version read from it ("" when unknown).
	File    string
	Version string
	// VariantOf is the target file the agent's file is a variant of (its
	// variant_of, joined to its directory); "" for none. When that file is
	// another agent of the matrix at the same version, calling the same
	// model API, the model's columns are swept on its row only (see
	// modelRows).
	VariantOf string
}

// Options configure Build. The zero value sweeps every non-optional kind
// with explore's defaults, every agent at once.
type Options struct {
	// Kinds restricts the mechanisms to these fault kinds (explore's
	// names); nil means every kind not marked optional.
	Kinds []string
	// Seed seeds the sweeps; "" means "replaycheck".
	Seed string
	// Parallel caps the runs at once over all the agents' sweeps; 0 means
	// explore's default within each sweep (see explore.Options.Parallel)
	// and no cap over them. Either way, each sweep starts a run that starts
	// processes (a client's, a stdio server's) beside its own as the
	// machine has a spare CPU (run.CPUHeadroom), which the other sweeps'
	// runs use too.
	Parallel int
	// Timeout is each run's deadline; 0 means 30s.
	Timeout time.Duration
	// OutDir is where each agent's reproductions are written, in a
	// directory of its own; "" writes none.
	OutDir string
	// Shard and Shards select every Shards-th cell (agent × mechanism: the
	// agents in order, each one's kinds in the order of Kinds), starting
	// at Shard (1-based); zero Shards builds every cell. Merge joins the
	// shards' matrices.
	Shard, Shards int
	// NoPrune makes every run explore makes — the later attempts of the
	// model requests the fingerprint shows the agent never retries (see
	// laterAttempts), the cuts inside a region of a streamed answer (see
	// innerCut), a mechanism's runs after its first DUPLICATE (see
	// ranTwice), and the confirming runs of findings no cell shows (see
	// shownFindings) — and sweeps a variant's model columns on its own row
	// (see modelRows).
	NoPrune bool
	// OnProgress, when set, is called as the sweeps advance, one call at
	// a time.
	OnProgress func(Progress)
}

// Build sweeps the agents (the cells of the shard) and returns their
// matrix, the rows in the agents' order. The agents are swept at once (see
// Options.Parallel). An agent that cannot be
// swept (its base fails clean, its target does not start) has a row with
// Error and no cells. A harness failure on one agent ends the others'
// sweeps; it, or ctx's cancellation, ends the matrix with the rows built so
// far and the error.
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
	m := &Matrix{Version: FormatVersion, Kind: KindMatrix, Seed: opts.Seed, Reproductions: opts.OutDir}
	for _, k := range kinds {
		m.Kinds = append(m.Kinds, k.Name)
	}
	if opts.Shards > 0 {
		m.Shard = fmt.Sprintf("%d/%d", opts.Shard, opts.Shards)
		for _, a := range agents {
			m.Agents = append(m.Agents, a.Target.Name())
		}
	}
	own := shardCells(len(agents), kinds, opts.Shard, opts.Shards)
	scenarios, err := scenarioColumns(agents, own, len(kinds), opts)
	if err != nil {
		return nil, err
	}
	models := modelRows(agents, opts.NoPrune)
	sharedModel := make([][]Pruned, len(agents))
	rowKinds := make([][]explore.Kind, len(agents))
	for i := range agents {
		rowKinds[i] = kinds
		if j := models[i]; j >= 0 {
			reason := fmt.Sprintf("swept on %s's row: this target file is its variant (variant_of), the same agent at the same version calling the same model API", agents[j].Target.Name())
			for _, k := range own[i] {
				if modelKind(k) {
					sharedModel[i] = append(sharedModel[i], Pruned{Mechanism: k.Name, Reason: reason})
				}
			}
			own[i] = slices.DeleteFunc(own[i], modelKind)
			rowKinds[i] = slices.DeleteFunc(slices.Clone(kinds), modelKind)
		}
	}
	tr := newTracker(agents, own, scenarios, start, time.Now, opts.OnProgress)
	sharing := &run.Sharing{Max: opts.Parallel}
	ctx, cancel := context.WithCancelCause(ctx)
	defer cancel(nil)
	rows := make([]*Row, len(agents))
	var (
		wg    sync.WaitGroup
		mu    sync.Mutex
		first error
	)
	for i, a := range agents {
		if len(own[i]) == 0 && len(sharedModel[i]) == 0 && (scenarios == nil || scenarios[i] == 0) {
			continue
		}
		wg.Add(1)
		go func() {
			defer wg.Done()
			track := tr.agent(i)
			row, err := buildRow(ctx, a, rowKinds[i], own[i], scenariosOwned(i, len(kinds), opts.Shard, opts.Shards), opts, sharing, track)
			if models[i] >= 0 {
				row.ModelRow = agents[models[i]].Target.Name()
				row.Pruned = append(sharedModel[i], row.Pruned...)
			}
			track.rowDone(err == nil && row.Error == "")
			if err != nil {
				mu.Lock()
				if first == nil {
					first = err
				}
				mu.Unlock()
				cancel(err)
				return
			}
			rows[i] = &row
		}()
	}
	wg.Wait()
	for _, r := range rows {
		if r != nil {
			m.Rows = append(m.Rows, *r)
		}
	}
	m.Wall = history.Duration(time.Since(start))
	return m, first
}

// modelRows returns, per agent, the agent whose row sweeps its model's
// columns (model request fails, model answer breaks), or -1 for its own
// row (every agent with noPrune): the agent its file is a variant of (Agent.VariantOf) when that is
// another agent of the matrix whose own file is no variant, at the same
// known version, calling the same model API dialects with the same
// Retry-After hints. A file that changes the MCP transport, the MCP
// server or the resume changes nothing of how the agent calls the model.
func modelRows(agents []Agent, noPrune bool) []int {
	out := make([]int, len(agents))
	for i, a := range agents {
		out[i] = -1
		if noPrune || a.VariantOf == "" || a.Version == "" {
			continue
		}
		for j, b := range agents {
			if j == i || b.File == "" || b.VariantOf != "" || !sameFile(a.VariantOf, b.File) {
				continue
			}
			at, bt := a.Target.Traits(), b.Target.Traits()
			if a.Version == b.Version && slices.Equal(at.Dialects, bt.Dialects) && at.RetryAfterHint == bt.RetryAfterHint {
				out[i] = j
			}
			break
		}
	}
	return out
}

// sameFile reports whether paths a and b name the same file.
func sameFile(a, b string) bool {
	ia, err := os.Stat(a)
	if err != nil {
		return false
	}
	ib, err := os.Stat(b)
	return err == nil && os.SameFile(ia, ib)
}

// modelKind reports whether k acts on the model's side: the families
// FamilyStatus and FamilyStream.
func modelKind(k explore.Kind) bool {
	f := familyOf(k)
	return f == FamilyStatus || f == FamilyStream
}

// shardCells returns, per agent, the kinds of its cells shard (1-based) of
// shards builds: cell i×len(kinds)+j, agent i's kind j, is shard's when it
// is shard-1 modulo shards. Zero shards gives every agent every kind.
func shardCells(agents int, kinds []explore.Kind, shard, shards int) [][]explore.Kind {
	out := make([][]explore.Kind, agents)
	for i := range out {
		for j, k := range kinds {
			if shards == 0 || (i*len(kinds)+j)%shards == shard-1 {
				out[i] = append(out[i], k)
			}
		}
	}
	return out
}

// scenarioColumns counts, per agent, the client scenarios its row of the
// shard runs (see clientColumns): those that apply to it, when opts
// names no kinds and the shard owns them; nil when opts names kinds.
func scenarioColumns(agents []Agent, own [][]explore.Kind, kinds int, opts Options) ([]int, error) {
	if opts.Kinds != nil {
		return nil, nil
	}
	ss, err := ClientScenarios()
	if err != nil {
		return nil, err
	}
	out := make([]int, len(agents))
	for i, a := range agents {
		if len(own[i]) == 0 || !scenariosOwned(i, kinds, opts.Shard, opts.Shards) {
			continue
		}
		for _, s := range ss {
			if run.Applies(s, a.Target) {
				out[i]++
			}
		}
	}
	return out, nil
}

// scenariosOwned says whether shard (1-based) of shards runs agent i's
// client scenarios: the shard of the agent's first cell (every shard when
// shards is zero), so the parts of a sharded matrix run each of them once.
func scenariosOwned(i, kinds, shard, shards int) bool {
	return shards == 0 || (i*kinds)%shards == shard-1
}

// buildRow sweeps one agent: the retry-policy fingerprint, which decides
// the fingerprinted kinds and what the sweep prunes, then the other kinds
// of own (the agent's cells of the shard), and with withScenarios, beside
// them, the client scenarios' columns. The fingerprint sweeps all
// fingerprinted kinds of kinds whatever the shard, since the sweep's
// pruning stands on it; the row has the cells of own only.
func buildRow(ctx context.Context, a Agent, kinds, own []explore.Kind, withScenarios bool, opts Options, sharing *run.Sharing, tr *agentTrack) (Row, error) {
	start := time.Now()
	row := Row{Target: a.Target.Name(), File: a.File, Version: a.Version}
	bases, err := explore.DefaultBases(a.Target)
	if err != nil {
		return row, fmt.Errorf("matrix row %s: %w", row.Target, err)
	}
	var printed, swept []explore.Kind
	for _, k := range kinds {
		mine := slices.ContainsFunc(own, sameKind(k))
		switch {
		case k.Fingerprinted() && (mine || !opts.NoPrune):
			printed = append(printed, k)
		case !k.Fingerprinted() && mine:
			swept = append(swept, k)
		}
	}
	xo := explore.Options{
		Target: a.Target, Depth: explore.DefaultDepth, Seed: opts.Seed, MaxRuns: explore.DefaultMaxRuns,
		Parallel: opts.Parallel, Timeout: opts.Timeout, Confirm: explore.DefaultConfirm, Sharing: sharing,
		Settings: fault.Settings{Stall: fault.DefaultSettings.Stall},
	}
	// The client scenarios depend on no sweep: they run beside them, so
	// the row does not wait for them after its last sweep.
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	var (
		clients       []Cell
		clientsPruned []Pruned
		clientRuns    int
		clientsErr    error
	)
	clientsDone := make(chan struct{})
	go func() {
		defer close(clientsDone)
		clients, clientsPruned, clientRuns, clientsErr = clientColumns(ctx, a.Target, opts, withScenarios, sharing, func(p explore.Progress) { tr.run("scenarios", p) })
	}()
	defer func() { cancel(); <-clientsDone }()
	later, inner := map[string]*prunedPoints{}, map[string]int{}
	var afterDuplicate map[string]int
	var sessionless bool
	for _, phase := range []struct {
		name  string
		kinds []explore.Kind
	}{{"fingerprint", printed}, {"sweep", swept}} {
		if len(phase.kinds) == 0 {
			continue
		}
		po := xo
		po.Kinds, po.Fingerprint = phase.kinds, phase.name == "fingerprint"
		po.OnProgress = func(p explore.Progress) { tr.run(phase.name, p) }
		if !opts.NoPrune {
			po.Confirms = shownFindings(ownOf(phase.kinds, own), phase.name)
		}
		if !po.Fingerprint && !opts.NoPrune {
			po.Prune = eitherPrune(laterAttempts(row.Fingerprint, later), innerCuts(inner))
			po.Decides = ranTwice
		}
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
		tr.phaseDone(phase.name)
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
		afterDuplicate = rep.AfterDeciding
		sessionless = sessionlessCalls(rep.Bases)
		for _, k := range ownOf(phase.kinds, own) {
			if c, _, ok := cellOf(k, rep, phase.name); ok {
				row.Cells = append(row.Cells, c)
			}
		}
	}
	row.Cells = inColumnOrder(row.Cells)
	row.Pruned = pruned(own, row.Cells, opts.Kinds == nil, sessionless)
	row.PrunedRuns = prunedRuns(later, inner, afterDuplicate)
	resumeReasons(a.Target, row.Pruned)
	<-clientsDone
	if clientsErr != nil {
		return row, fmt.Errorf("matrix row %s: %w", row.Target, clientsErr)
	}
	row.Cells = append(row.Cells, clients...)
	row.Pruned = append(row.Pruned, clientsPruned...)
	row.Runs += clientRuns
	row.Wall = history.Duration(time.Since(start))
	return row, nil
}

// ownOf returns the kinds of swept that are the row's cells (own).
func ownOf(swept, own []explore.Kind) []explore.Kind {
	return slices.DeleteFunc(slices.Clone(swept), func(k explore.Kind) bool { return !slices.ContainsFunc(own, sameKind(k)) })
}

// sameKind matches the kind named as k.
func sameKind(k explore.Kind) func(explore.Kind) bool {
	return func(o explore.Kind) bool { return o.Name == k.Name }
}

// pruned lists the kinds of all not in cells (no point of the agent's runs
// takes them) and, with optional, the optional kinds, each with why;
// sessionless says the agent's tools/calls came without an MCP session
// (sessionlessCalls).
func pruned(all []explore.Kind, cells []Cell, optional, sessionless bool) []Pruned {
	var out []Pruned
	for _, k := range explore.Kinds() {
		switch {
		case slices.ContainsFunc(cells, func(c Cell) bool { return c.Mechanism == k.Name }):
		case !slices.ContainsFunc(all, sameKind(k)) && k.Optional && optional:
			out = append(out, Pruned{Mechanism: k.Name, Reason: "only when named (--kinds)"})
		case !slices.ContainsFunc(all, sameKind(k)):
			// Not asked for (--kinds), or another shard's: the matrix
			// pruned nothing.
		case k.Session && sessionless:
			out = append(out, Pruned{Mechanism: k.Name, Reason: "the agent's tools/calls carry no MCP session to act on: MCP 2026-07-28 requests stand alone"})
		case k.Transport != "":
			out = append(out, Pruned{Mechanism: k.Name, Reason: "the agent does not reach an MCP server over " + string(k.Transport)})
		default:
			out = append(out, Pruned{Mechanism: k.Name, Reason: "no point of the agent's runs takes it (no streamed answer, no such step)"})
		}
	}
	return out
}

// sessionlessCalls reports whether the clean runs of bases made tools/calls
// and none of them in an MCP session (MCP 2026-07-28 requests stand alone).
func sessionlessCalls(bases []explore.Base) bool {
	calls := 0
	for _, b := range bases {
		for _, p := range b.Points {
			if p.Side != explore.SideMCP || p.Method != "" {
				continue
			}
			if !p.Sessionless {
				return false
			}
			calls++
		}
	}
	return calls > 0
}

// inColumnOrder sorts cells by family, then the fingerprint's before the
// sweep's, then in the order of explore's table of kinds, whatever order
// the kinds were asked for in.
func inColumnOrder(cells []Cell) []Cell {
	slices.SortStableFunc(cells, func(a, b Cell) int {
		if d := slices.Index(Families(), a.Family) - slices.Index(Families(), b.Family); d != 0 {
			return d
		}
		if a.DecidedBy != b.DecidedBy {
			return strings.Compare(a.DecidedBy, b.DecidedBy) // fingerprint < sweep
		}
		return kindIndex(a.Mechanism) - kindIndex(b.Mechanism)
	})
	return cells
}

// kindIndex is the place of the kind named name in explore's table; -1
// when it has none.
func kindIndex(name string) int {
	return slices.IndexFunc(explore.Kinds(), func(k explore.Kind) bool { return k.Name == name })
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
