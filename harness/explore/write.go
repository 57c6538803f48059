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
	"github.com/replaycheck/replaycheck/harness/history"
	"github.com/replaycheck/replaycheck/harness/rules"
	"github.com/replaycheck/replaycheck/harness/scenario"
	"github.com/replaycheck/replaycheck/internal/atomicfile"
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
	Writes      *history.Count        `json:"writes,omitempty"`
	MaxAttempts *int                  `json:"max_attempts,omitempty"`
	Client      *history.ClientExpect `json:"client,omitempty"`
	Rules       []string              `json:"rules,omitempty"`
}

// YAML renders the finding as a scenario file: its base with the minimal
// schedule armed, expecting the rules that failed to hold — and, for a
// duplicate write, at most the base's logical calls of writes in place of
// no-replay-after-dispatch. It fails on the explored target, and passes on
// one without the bug.
func (f Finding) YAML(target, seed string, set fault.Settings) ([]byte, error) {
	b := f.base
	if b == nil {
		return nil, fmt.Errorf("finding on %q: its base scenario is not known", f.Base)
	}
	kinds := map[string]Kind{}
	for _, k := range Kinds() {
		kinds[k.Name] = k
	}
	ups, mcp := f.Schedule.faults(kinds, set)
	out := scenarioFile{
		Name:           "explore: " + b.Name + ": " + f.Schedule.String(),
		Description:    fmt.Sprintf("Found by replaycheck explore on %s (seed %s), reproduced %d of %d: %s", target, seed, f.Reproduced, f.Tries, f.Message),
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
		},
		Expect: fileExpect{MaxAttempts: b.Expect.MaxAttempts, Rules: ruleNames(f.Failed)},
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
	if n := f.LogicalCalls; n > 0 && f.Writes > n {
		// A duplicate write: bound the writes, which a fixed target that
		// runs the tool once — or, refusing the unsafe replay, not at all —
		// satisfies, where no-replay-after-dispatch cannot judge the latter.
		out.Expect.Writes = &history.Count{Max: &n}
		out.Expect.Rules = slices.DeleteFunc(out.Expect.Rules, func(r string) bool { return r == noReplayAfterDispatch })
	}
	if len(out.Expect.Rules) == 0 && out.Expect.Writes == nil {
		// Only the run check failed (the target hung or died): every rule
		// is expected, and the run must complete.
		out.Expect.Rules = rules.Names()
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

// noReplayAfterDispatch is the rule a bound on the writes stands in for.
const noReplayAfterDispatch = "no-replay-after-dispatch"

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

// fileName is a file name for a finding: its base and schedule, lowercased,
// with runs of other characters as one dash.
func fileName(f Finding) string {
	s := strings.Trim(unsafeName.ReplaceAllString(strings.ToLower(f.Base+" "+f.Schedule.String()), "-"), "-")
	if len(s) > 100 {
		s = strings.TrimRight(s[:100], "-")
	}
	return s
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
		y, err := f.YAML(rep.Target, rep.Seed, rep.Settings)
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
