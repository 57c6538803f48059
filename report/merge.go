package report

import (
	"fmt"
	"slices"
	"strings"

	"github.com/replaycheck/replaycheck/internal/harness/baseline"
)

// DuplicateError is a scenario run on one target found in two of the
// suites Merge joins.
type DuplicateError struct {
	Scenario, Target string
	// First and Second name the suites that both hold it.
	First, Second string
}

func (e *DuplicateError) Error() string {
	return fmt.Sprintf("%q on %s is in both %s and %s: merge the reports of disjoint shards", e.Scenario, e.Target, e.First, e.Second)
}

// Merge joins the suites of sharded runs into one, as if one run had
// produced them: the results in the order given with their saved verdicts
// (nothing is checked again), the longest wall time (shards run side by
// side), the versions, seeds and shards of the runs, and their aborts.
// names[i] names suites[i] in errors and in a merged abort's error.
//
// A scenario on a target found in two suites is a *DuplicateError. Suites
// judged against a baseline are merged only with suites judged against the
// same baseline file; an entry is then not run only when no suite ran its
// scenario on its target.
func Merge(names []string, suites []Suite) (Suite, error) {
	if len(names) != len(suites) {
		return Suite{}, fmt.Errorf("merging reports: %d names for %d reports", len(names), len(suites))
	}
	var out Suite
	type key struct{ scenario, target string }
	from := map[key]string{}
	var versions, seeds, shards []string
	for i, s := range suites {
		for _, r := range s.Results {
			k := key{r.History.Scenario, r.History.Target}
			if first, ok := from[k]; ok {
				return Suite{}, &DuplicateError{Scenario: k.scenario, Target: k.target, First: first, Second: names[i]}
			}
			from[k] = names[i]
		}
		out.Results = append(out.Results, s.Results...)
		out.Wall = max(out.Wall, s.Wall)
		if s.Run != nil {
			versions = appendNew(versions, s.Run.Replaycheck)
			seeds = appendNew(seeds, s.Run.Seed)
			shards = appendNew(shards, s.Run.Shard)
		}
		if a := s.Abort; a != nil {
			if out.Abort == nil {
				out.Abort = &Abort{Kind: a.Kind}
			} else {
				out.Abort.Error += "; "
			}
			out.Abort.Error += names[i] + ": " + a.Error
			out.Abort.CutShort = append(out.Abort.CutShort, a.CutShort...)
			out.Abort.NotStarted += a.NotStarted
		}
	}
	if len(versions)+len(seeds)+len(shards) > 0 {
		out.Run = &RunInfo{Replaycheck: strings.Join(versions, ", "), Seed: strings.Join(seeds, ", "), Shard: strings.Join(shards, ", ")}
	}
	b, err := mergeBaselines(names, suites, func(e baseline.Entry) bool { _, ran := from[key{e.Scenario, e.Target}]; return ran })
	if err != nil {
		return Suite{}, err
	}
	out.Baseline = b
	return out, nil
}

// mergeBaselines joins the suites' baseline outcomes: none when no suite has
// one, an error when some have none or another file's.
func mergeBaselines(names []string, suites []Suite, ran func(baseline.Entry) bool) (*baseline.Outcome, error) {
	var out *baseline.Outcome
	for i, s := range suites {
		b := s.Baseline
		if (b == nil) != (suites[0].Baseline == nil) {
			with, without := names[0], names[i]
			if b != nil {
				with, without = without, with
			}
			return nil, fmt.Errorf("merging reports: %s was judged against a baseline and %s against none", with, without)
		}
		if b == nil {
			continue
		}
		if len(b.Verdicts) != len(s.Results) {
			return nil, fmt.Errorf("merging reports: %s has %d baseline verdicts for %d results", names[i], len(b.Verdicts), len(s.Results))
		}
		if out == nil {
			out = &baseline.Outcome{File: b.File}
		} else if b.File != out.File {
			return nil, fmt.Errorf("merging reports: %s was judged against baseline %s and %s against %s", names[0], out.File, names[i], b.File)
		}
		out.Verdicts = append(out.Verdicts, b.Verdicts...)
		for _, e := range b.NotRun {
			if !ran(e) && !slices.Contains(out.NotRun, e) {
				out.NotRun = append(out.NotRun, e)
			}
		}
	}
	return out, nil
}

// appendNew appends v to list unless it is empty or already there.
func appendNew(list []string, v string) []string {
	if v == "" || slices.Contains(list, v) {
		return list
	}
	return append(list, v)
}
