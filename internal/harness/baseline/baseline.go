// Package baseline lets a suite with failures run in CI: a baseline file lists
// the checks known to fail today as (scenario, target, rule) entries. Judged
// against a baseline, a listed failure is known and does not fail the run, a
// failure it does not list is new and does, and a listed check that now holds
// is stale and fails the run too, so the baseline only shrinks. Entries whose
// scenario and target did not run together (filtered, tagged or sharded out,
// or another target) are neither used nor stale.
//
// A baseline file is a YAML list, one entry per line, sorted:
//
//	# baseline.yaml
//	- {scenario: "seed chat fault_on", target: "builtin:naive", rule: "no-replay-after-dispatch"}
//	- {scenario: "seed chat fault_on", target: "builtin:naive", rule: "writes"}
//
// rule names any check of the scenario: a replay rule, a count (writes,
// status, upstream[follow_up], mcp.calls, …) or completed (the run itself).
// Results with an unknown verdict are listed like failures: unknown is never
// a pass.
package baseline

import (
	"cmp"
	"fmt"
	"io"
	"slices"
	"strconv"
	"strings"

	"github.com/goccy/go-yaml/ast"

	"github.com/replaycheck/replaycheck/internal/harness/rules"
	"github.com/replaycheck/replaycheck/internal/yamlfile"
)

// MaxFileSize bounds the size of a baseline file.
const MaxFileSize = 8 << 20

// Entry is one known failure: a check (rule) that fails for a scenario on a
// target.
type Entry struct {
	// Scenario is the scenario's name.
	Scenario string `yaml:"scenario" json:"scenario"`
	// Target names the system under test, for example "builtin:naive".
	Target string `yaml:"target" json:"target"`
	// Rule names the failing check: a replay rule, a count or completed.
	Rule string `yaml:"rule" json:"rule"`
}

// String renders e as its line in a baseline file, without the leading "- ".
func (e Entry) String() string {
	return fmt.Sprintf("{scenario: %s, target: %s, rule: %s}", strconv.Quote(e.Scenario), strconv.Quote(e.Target), strconv.Quote(e.Rule))
}

func compareEntries(a, b Entry) int {
	return cmp.Or(strings.Compare(a.Scenario, b.Scenario), strings.Compare(a.Target, b.Target), strings.Compare(a.Rule, b.Rule))
}

// Baseline is a set of known failures. The zero value is an empty baseline:
// every failure is new.
type Baseline struct {
	// File is where the baseline was read from, for messages; empty when it
	// was built from results.
	File string
	// Entries are distinct and sorted by scenario, target and rule.
	Entries []Entry
}

// Load reads and parses the baseline file at path.
func Load(path string) (Baseline, error) {
	src, err := yamlfile.ReadFile(path, MaxFileSize)
	if err != nil {
		return Baseline{}, fmt.Errorf("reading baseline %s: %w", path, err)
	}
	return Parse(path, src)
}

// Parse decodes a baseline read from file, strictly: anything but a list of
// entries with exactly scenario, target and rule, each a non-empty string,
// is a *yamlfile.Error at its line and column, and so is an entry listed
// twice. An empty file, or one of comments only, is an empty baseline.
func Parse(file string, src []byte) (Baseline, error) {
	body, err := yamlfile.ParseDocument(file, src)
	if err != nil {
		return Baseline{}, err
	}
	var entries []Entry
	if err := yamlfile.DecodeNode(file, src, body, &entries); err != nil {
		return Baseline{}, err
	}
	b := Baseline{File: file}
	// DecodeNode accepted body as one list, so its items are the entries.
	var nodes []ast.Node
	if seq, ok := body.(*ast.SequenceNode); ok {
		nodes = seq.Values
	}
	var errs yamlfile.ErrorList
	fail := func(i int, format string, args ...any) {
		var n ast.Node
		if i < len(nodes) {
			n = nodes[i]
		}
		errs = append(errs, yamlfile.ErrorAt(file, src, n, format, args...))
	}
	first := map[Entry]int{}
	for i, e := range entries {
		var missing []string
		for _, f := range []struct{ name, value string }{{"scenario", e.Scenario}, {"target", e.Target}, {"rule", e.Rule}} {
			if strings.TrimSpace(f.value) == "" {
				missing = append(missing, f.name)
			}
		}
		if len(missing) > 0 {
			fail(i, "baseline entry needs %s: want {scenario: …, target: …, rule: …}", strings.Join(missing, ", "))
			continue
		}
		if j, dup := first[e]; dup {
			fail(i, "baseline entry %s is listed twice (first as entry %d)", e, j+1)
			continue
		}
		first[e] = i
		b.Entries = append(b.Entries, e)
	}
	if len(errs) > 0 {
		return Baseline{}, errs
	}
	slices.SortFunc(b.Entries, compareEntries)
	return b, nil
}

// FromResults returns the baseline of results as they stand: one entry for
// each check that did not pass (failed or could not judge) in each result.
// A result that did not pass without naming a failed check is listed under
// the rule "completed".
func FromResults(results []rules.Result) Baseline {
	seen := map[Entry]bool{}
	var b Baseline
	for _, r := range results {
		for _, check := range notPassing(r) {
			e := Entry{Scenario: r.History.Scenario, Target: r.History.Target, Rule: check}
			if !seen[e] {
				seen[e] = true
				b.Entries = append(b.Entries, e)
			}
		}
	}
	slices.SortFunc(b.Entries, compareEntries)
	return b
}

// notPassing returns the names of r's checks that failed or could not judge,
// in order and distinct; for a repeated scenario, repeat when its rate did
// not pass; none for a scenario that did not apply (skipped), which is no
// failure to know.
func notPassing(r rules.Result) []string {
	if r.Verdict == rules.Skipped {
		return nil
	}
	// A repeated scenario's runs are judged by their rate alone: which checks
	// its first failing run shows changes from one run of the suite to the
	// next, so they would turn a flaky known failure into a new one.
	if r.Repeat != nil {
		if r.Verdict == rules.Pass {
			return nil
		}
		return []string{rules.CheckRepeat}
	}
	var out []string
	for _, v := range r.Verdicts {
		if v.Status != rules.Pass && !slices.Contains(out, v.Check) {
			out = append(out, v.Check)
		}
	}
	if len(out) == 0 && r.Verdict != rules.Pass {
		out = append(out, "completed")
	}
	return out
}

// header opens every written baseline file.
const header = `# replaycheck baseline: checks known to fail today, one {scenario, target, rule}
# per line. replaycheck run --baseline FILE lets these fail, fails on any other
# failure, and fails on an entry that now passes until it is removed.
# Written by replaycheck baseline, sorted; files of several shards concatenate.
`

// Write writes b as a baseline file: a comment header and one entry per line,
// sorted, so the same failures always give the same bytes. An empty baseline
// is the header alone.
func (b Baseline) Write(w io.Writer) error {
	entries := slices.Clone(b.Entries)
	slices.SortFunc(entries, compareEntries)
	entries = slices.Compact(entries)
	var s strings.Builder
	s.WriteString(header)
	for _, e := range entries {
		s.WriteString("- " + e.String() + "\n")
	}
	if _, err := io.WriteString(w, s.String()); err != nil {
		return fmt.Errorf("writing baseline: %w", err)
	}
	return nil
}
