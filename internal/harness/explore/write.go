package explore

import (
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strings"

	"github.com/goccy/go-yaml"

	"github.com/replaycheck/replaycheck/fakes/fault"
	"github.com/replaycheck/replaycheck/fakes/ledger"
	"github.com/replaycheck/replaycheck/internal/atomicfile"
	"github.com/replaycheck/replaycheck/internal/harness/history"
	"github.com/replaycheck/replaycheck/internal/harness/rules"
	"github.com/replaycheck/replaycheck/internal/harness/scenario"
)

// scenarioFile is the shape of a scenario file a finding is written as, in
// the order people read it. Its fields carry the scenario types' own JSON
// forms.
type scenarioFile struct {
	Name           string                        `json:"name"`
	Description    string                        `json:"description"`
	Tags           []string                      `json:"tags"`
	Request        *scenario.Request             `json:"request,omitempty"`
	Requests       []scenario.Request            `json:"requests,omitempty"`
	Model          *scenario.Model               `json:"model,omitempty"`
	Annotations    map[string]ledger.Annotations `json:"annotations,omitempty"`
	Gateway        *scenario.Gateway             `json:"gateway,omitempty"`
	RetryAfterHint fault.Duration                `json:"retry_after_hint,omitzero"`
	Timeout        fault.Duration                `json:"timeout,omitzero"`
	Faults         scenario.Faults               `json:"faults"`
	Expect         fileExpect                    `json:"expect"`
}

type fileExpect struct {
	Writes        *history.Count        `json:"writes,omitempty"`
	MaxAttempts   *int                  `json:"max_attempts,omitempty"`
	Client        *history.ClientExpect `json:"client,omitempty"`
	Rules         []string              `json:"rules,omitempty"`
	RulesIfJudged []string              `json:"rules_if_judged,omitempty"`
}

// YAML renders the finding as a scenario file: its base with the minimal
// schedule armed, described with what was found and what a fix looks
// like. Where the base makes tool calls, it expects at most the base's
// logical calls of writes, and the rules that broke if judged
// (expect.rules_if_judged): a fixed target that never retries gives some of
// them nothing to judge, and its single write is the evidence that it
// passes. A base without tool calls expects the rules to hold. It fails on
// the explored target, and passes on one without the bug.
func (f Finding) YAML(target, seed string, set fault.Settings) ([]byte, error) {
	b := f.base
	if b == nil {
		return nil, fmt.Errorf("finding on %q: its base scenario is not known", f.Base)
	}
	kinds := map[string]Kind{}
	for _, k := range Kinds() {
		kinds[k.Name] = k
	}
	ups, mcp, tgt := f.Schedule.faults(kinds, set)
	out := scenarioFile{
		Name:           "explore: " + b.Name + ": " + f.Schedule.String(),
		Description:    fmt.Sprintf("Found by replaycheck explore on %s (seed %s): %s, in %s; reproduced %d of %d: %s", target, seed, f.Mechanism, countCells(f.Cells), f.Reproduced, f.Tries, f.Message),
		Tags:           append(slices.Clone(b.Tags), "explore"),
		Request:        b.Request,
		Requests:       b.Requests,
		Annotations:    b.Annotations,
		Gateway:        b.Gateway,
		RetryAfterHint: b.RetryAfterHint,
		Timeout:        b.Timeout,
		Faults: scenario.Faults{
			Upstream: append(slices.Clone(b.Faults.Upstream), ups...),
			MCP:      append(slices.Clone(b.Faults.MCP), mcp...),
			Target:   append(slices.Clone(b.Faults.Target), tgt...),
		},
		Expect: fileExpect{MaxAttempts: b.Expect.MaxAttempts, Rules: ruleNames(f.Failed)},
	}
	if f.Fix != "" {
		out.Description += "; fix: " + f.Fix
	}
	if !b.Model.IsZero() {
		m := b.Model
		if f := m.CassetteFile(); f != "" {
			// The finding is written elsewhere: name the cassette so that
			// it loads from there.
			if abs, err := filepath.Abs(f); err == nil {
				f = abs
			}
			m.Cassette = f
		}
		out.Model = &m
	}
	if b.Expect.Client != nil {
		out.Expect.Client = &history.ClientExpect{}
	}
	broken := out.Expect.Rules
	if len(broken) == 0 {
		// Only the run check failed (the target hung or died): no rule
		// may break, and the run must complete.
		broken = rules.Names()
	}
	if n := f.LogicalCalls; n > 0 {
		// No write twice: a fixed target that runs each tool once — or,
		// refusing an unsafe replay, not at all — satisfies it, with
		// evidence, where a rule may find nothing to judge.
		out.Expect.Writes = &history.Count{Max: &n}
		out.Expect.Rules, out.Expect.RulesIfJudged = nil, broken
	} else {
		out.Expect.Rules = broken
	}
	js, err := json.Marshal(out)
	if err != nil {
		return nil, fmt.Errorf("rendering finding on %q: %w", f.Base, err)
	}
	y, err := yaml.JSONToYAML(js)
	if err != nil {
		return nil, fmt.Errorf("rendering finding on %q: %w", f.Base, err)
	}
	return y, nil
}

// ruleNames keeps the names of catalogue rules among checks.
func ruleNames(checks []string) []string {
	var out []string
	for _, c := range checks {
		if _, ok := rules.Lookup(c); ok {
			out = append(out, c)
		}
	}
	return out
}

var unsafeName = regexp.MustCompile(`[^a-z0-9]+`)

// fileName is a file name for a finding: its rule, step and the fault kinds
// of its reproduction, lowercased, with runs of other characters as one
// dash.
func fileName(f Finding) string {
	parts := []string{f.Mechanism.Rule, f.Mechanism.Step}
	for _, a := range f.Schedule {
		parts = append(parts, a.Kind)
	}
	s := strings.Trim(unsafeName.ReplaceAllString(strings.ToLower(strings.Join(parts, " ")), "-"), "-")
	if len(s) > 100 {
		s = strings.TrimRight(s[:100], "-")
	}
	return s
}

// countCells is "1 cell" or "N cells".
func countCells(n int) string {
	if n == 1 {
		return "1 cell"
	}
	return fmt.Sprintf("%d cells", n)
}

// WriteFindings writes each confirmed finding of rep as a scenario file in
// dir (created if missing) and records the file in the finding. Flaky
// findings are not written: they would not be a reliable test.
func WriteFindings(dir string, rep *Report) error {
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return fmt.Errorf("writing findings: %w", err)
	}
	used := map[string]int{}
	for i := range rep.Findings {
		f := &rep.Findings[i]
		if f.Flaky {
			continue
		}
		y, err := f.YAML(rep.Target, rep.Seed, rep.BaseSettings(f.Base))
		if err != nil {
			return err
		}
		name := fileName(*f)
		used[name]++
		if n := used[name]; n > 1 {
			name = fmt.Sprintf("%s-%d", name, n)
		}
		path := filepath.Join(dir, name+".yaml")
		if err := atomicfile.Replace(path, y); err != nil {
			return fmt.Errorf("writing finding: %w", err)
		}
		f.File = path
	}
	return nil
}
