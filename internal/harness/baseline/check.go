package baseline

import (
	"slices"

	"github.com/replaycheck/replaycheck/internal/harness/rules"
)

// Status is a result's standing against a baseline.
type Status string

// The standings of a result, from best to worst: only New and Stale fail a
// run.
const (
	// Pass: every check held and the baseline lists none of them.
	Pass Status = "pass"
	// Known: every check that did not pass is listed.
	Known Status = "known"
	// Stale: no new failure, but a listed check now holds.
	Stale Status = "stale"
	// New: a check that did not pass is not listed.
	New Status = "new"
)

// Verdict is one result judged against a baseline.
type Verdict struct {
	Scenario string `json:"scenario"`
	Target   string `json:"target"`
	// Status is New when New is not empty, else Stale when Stale is not
	// empty, else Known when Known is not empty, else Pass.
	Status Status `json:"status"`
	// Known are the checks that did not pass and are listed, New those that
	// are not listed, Stale the listed checks that now hold (or are no longer
	// checked), each in the result's check order or, for Stale, the
	// baseline's.
	Known []string `json:"known,omitempty"`
	New   []string `json:"new,omitempty"`
	Stale []string `json:"stale,omitempty"`
}

// StaleEntries returns v's stale checks as baseline entries, the lines to
// remove from the file.
func (v Verdict) StaleEntries() []Entry {
	out := make([]Entry, len(v.Stale))
	for i, rule := range v.Stale {
		out[i] = Entry{Scenario: v.Scenario, Target: v.Target, Rule: rule}
	}
	return out
}

// Outcome is a suite's results judged against a baseline.
type Outcome struct {
	// File is the baseline file's name.
	File string `json:"file"`
	// Verdicts are one per result, in the results' order.
	Verdicts []Verdict `json:"verdicts"`
	// NotRun are the entries whose scenario did not run on their target in
	// this run (selected out by filter, tag or shard, or a target not
	// given): neither used nor stale.
	NotRun []Entry `json:"not_run,omitempty"`
}

// Tally counts an outcome's results by status, and its stale entries.
type Tally struct {
	Pass, Known, Stale, New int
	// StaleEntries counts stale entries; one result may have several.
	StaleEntries int
}

// Tally counts o's results by status.
func (o Outcome) Tally() Tally {
	var t Tally
	for _, v := range o.Verdicts {
		switch v.Status {
		case Pass:
			t.Pass++
		case Known:
			t.Known++
		case Stale:
			t.Stale++
		case New:
			t.New++
		}
		t.StaleEntries += len(v.Stale)
	}
	return t
}

// Broken reports whether o fails the run: a new failure or a stale entry.
func (o Outcome) Broken() bool {
	for _, v := range o.Verdicts {
		if len(v.New) > 0 || len(v.Stale) > 0 {
			return true
		}
	}
	return false
}

// Check judges results against b. A result's checks that did not pass
// (failed or could not judge) are known when b lists them and new when it
// does not; b's entries for a result's scenario and target that now hold are
// stale. Entries for a scenario and target that no result has are NotRun.
func Check(b Baseline, results []rules.Result) Outcome {
	type pair struct{ scenario, target string }
	listed := map[pair][]string{}
	for _, e := range b.Entries {
		p := pair{e.Scenario, e.Target}
		if !slices.Contains(listed[p], e.Rule) {
			listed[p] = append(listed[p], e.Rule)
		}
	}
	o := Outcome{File: b.File, Verdicts: make([]Verdict, len(results))}
	ran := map[pair]bool{}
	for i, r := range results {
		p := pair{r.History.Scenario, r.History.Target}
		ran[p] = true
		v := Verdict{Scenario: p.scenario, Target: p.target}
		failing := notPassing(r)
		for _, check := range failing {
			if slices.Contains(listed[p], check) {
				v.Known = append(v.Known, check)
			} else {
				v.New = append(v.New, check)
			}
		}
		for _, rule := range listed[p] {
			if !slices.Contains(failing, rule) {
				v.Stale = append(v.Stale, rule)
			}
		}
		switch {
		case len(v.New) > 0:
			v.Status = New
		case len(v.Stale) > 0:
			v.Status = Stale
		case len(v.Known) > 0:
			v.Status = Known
		default:
			v.Status = Pass
		}
		o.Verdicts[i] = v
	}
	for _, e := range b.Entries {
		if !ran[pair{e.Scenario, e.Target}] {
			o.NotRun = append(o.NotRun, e)
		}
	}
	return o
}
