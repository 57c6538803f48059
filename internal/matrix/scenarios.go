package matrix

import (
	"context"
	"fmt"
	"time"

	"github.com/replaycheck/replaycheck/internal/harness/explore"
	"github.com/replaycheck/replaycheck/internal/harness/history"
	"github.com/replaycheck/replaycheck/internal/harness/rules"
	"github.com/replaycheck/replaycheck/internal/harness/run"
	"github.com/replaycheck/replaycheck/internal/harness/scenario"
	"github.com/replaycheck/replaycheck/internal/harness/target"
	"github.com/replaycheck/replaycheck/scenarios"
)

// clientScenariosDir is the directory of the shipped suite whose scenarios
// are the matrix's FamilyClient columns.
const clientScenariosDir = "clients"

// scenariosPhase is the phase of the client scenarios' progress.
const scenariosPhase = "client scenarios"

// ClientScenarios returns the shipped client scenarios (scenarios/clients,
// as embedded in the binary), each named by its file in the repository.
func ClientScenarios() ([]*scenario.Scenario, error) {
	return scenario.LoadFS(scenarios.FS, clientScenariosDir, "scenarios")
}

// clientColumns runs, on a client target, the client scenarios' cells
// (withScenarios, and opts names no kinds) and returns them, each scenario
// that does not apply to t with why, and the runs made; nothing on another
// shard's agent or when opts names kinds.
func clientColumns(ctx context.Context, t target.Target, opts Options, withScenarios bool, sharing *run.Sharing, progress func(explore.Progress)) ([]Cell, []Pruned, int, error) {
	if opts.Kinds != nil || !withScenarios {
		return nil, nil, 0, nil // only the named fault kinds, or another shard's scenarios
	}
	ss, err := ClientScenarios()
	if err != nil {
		return nil, nil, 0, err
	}
	return scenarioCells(ctx, t, ss, opts, sharing, progress)
}

// scenarioCells runs each scenario of ss that applies to t as `run` runs
// it (its own faults, expectations and repeat; opts' seed, parallelism and
// timeout) and returns one FamilyClient cell per scenario run, judged as
// the sweep's cells are, with the scenario's file as the reproduction of a
// bad one; the scenarios that do not apply, with why; and the runs made.
// It fails when the harness or the target cannot run, or ctx ends.
func scenarioCells(ctx context.Context, t target.Target, ss []*scenario.Scenario, opts Options, sharing *run.Sharing, progress func(explore.Progress)) ([]Cell, []Pruned, int, error) {
	var pruned []Pruned
	var applying []*scenario.Scenario
	for _, s := range ss {
		if run.Applies(s, t) {
			applying = append(applying, s)
		} else {
			pruned = append(pruned, Pruned{Mechanism: s.Name, Reason: whyNotApplies(s, t)})
		}
	}
	if len(applying) == 0 {
		return nil, pruned, 0, nil
	}
	total, err := run.Count(applying, []target.Target{t}, 0)
	if err != nil {
		return nil, pruned, 0, err
	}
	byScenario := map[string][]explore.Cell{}
	pr := explore.Progress{Phase: scenariosPhase, Total: total}
	start := time.Now()
	_, err = run.Run(ctx, applying, run.Options{
		Targets: []target.Target{t}, Parallel: opts.Parallel, Timeout: opts.Timeout, Seed: opts.Seed, Forget: true, Sharing: sharing,
		OnHistory: func(_ int, h *history.History) {
			r := rules.Evaluate(h)
			byScenario[h.Scenario] = append(byScenario[h.Scenario], explore.Cell{
				Verdict: r.Verdict, Failed: rules.Failed(r.Verdicts), Writes: r.Counts.Writes, Result: r,
			})
			pr.Done++
			if r.Verdict == rules.Fail {
				pr.Failed++
			}
			pr.Elapsed = time.Since(start)
			if progress != nil {
				progress(pr)
			}
		},
	})
	switch {
	case ctx.Err() != nil:
		return nil, pruned, pr.Done, context.Cause(ctx)
	case err != nil:
		return nil, pruned, pr.Done, fmt.Errorf("client scenarios: %w", err)
	}
	var cells []Cell
	for _, s := range applying {
		runs := byScenario[s.Name]
		if len(runs) == 0 {
			continue
		}
		c := Cell{Family: FamilyClient, Mechanism: s.Name, Doc: s.Description, DecidedBy: "scenario"}
		decide(&c, runs)
		if c.Verdict != Safe && c.Verdict != Unknown {
			c.Reproduction = s.File
		}
		cells = append(cells, c)
	}
	return cells, pruned, pr.Done, nil
}

// whyNotApplies says why scenario s does not run on target t (see
// run.Applies).
func whyNotApplies(s *scenario.Scenario, t target.Target) string {
	switch tr := s.MCPTransport(); {
	case !target.Speaks(t, tr):
		return "the agent does not reach an MCP server over " + string(tr)
	case s.Resumes() && !t.Traits().Resumes:
		return notResumable
	case !t.Traits().Client && s.Expect.Client != nil:
		return "a client scenario: it runs an agent's own command, which a proxy or gateway target has not"
	case s.Expect.Client == nil && t.Traits().Client:
		return "not a client scenario: a client writes its own requests"
	case t.Traits().Client && !target.Calls(t, s):
		return "its faults act only on model API dialects the agent does not call"
	}
	return "it serves none of the scenario's endpoints"
}

// notResumable is why a kill is not swept on a target that cannot be
// resumed.
const notResumable = "the target declares no resume (kill and resume needs one)"

// resumeReasons says, in pruned, why the kill kinds were not swept on a
// target that cannot be resumed (not for want of a point).
func resumeReasons(t target.Target, pruned []Pruned) {
	if t.Traits().Resumes {
		return
	}
	for i, p := range pruned {
		if k, err := explore.SelectKinds([]string{p.Mechanism}); err == nil && k[0].Kills() {
			pruned[i].Reason = notResumable
		}
	}
}
