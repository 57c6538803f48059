package report

import (
	"fmt"
	"strconv"
	"strings"
)

// RunInfo says how a suite was run, for the reports to show (JUnit
// properties). The zero value says nothing.
type RunInfo struct {
	// Replaycheck is the version of replaycheck that ran the suite.
	Replaycheck string `json:"replaycheck,omitempty"`
	// Seed is the seed of the run tokens.
	Seed string `json:"seed,omitempty"`
	// Shard is the shard that ran, "I/N"; "" means the whole selection. A
	// merged suite lists its inputs' shards, comma-separated.
	Shard string `json:"shard,omitempty"`
}

// AbortKind says why a run did not complete.
type AbortKind string

// The kinds of abort.
const (
	// AbortUsage is bad usage or a bad scenario, target or baseline file.
	AbortUsage AbortKind = "usage"
	// AbortHarness is the harness or a target that could not run.
	AbortHarness AbortKind = "harness"
	// AbortInterrupted is a run stopped by Ctrl-C or SIGTERM.
	AbortInterrupted AbortKind = "interrupted"
)

// Abort says why a run did not complete. A suite with an Abort holds the
// results that ended before it (none when the run never started).
type Abort struct {
	Kind AbortKind `json:"kind"`
	// Error is the error the run ended with, as the user saw it.
	Error string `json:"error"`
	// CutShort are the runs the abort ended before they did; they are not
	// judged.
	CutShort []RunRef `json:"cut_short,omitempty"`
	// NotStarted counts the planned runs that never started.
	NotStarted int `json:"not_started,omitempty"`
}

// RunRef names one scenario run.
type RunRef struct {
	Scenario string `json:"scenario"`
	Target   string `json:"target"`
	File     string `json:"file,omitempty"`
	// Run is the run's index among a repeated scenario's runs (1-based); 0
	// when the scenario runs once.
	Run int `json:"run,omitempty"`
}

// String renders r as "scenario on target", with " run I" for a repeated
// scenario's run.
func (r RunRef) String() string {
	s := r.Scenario + " on " + r.Target
	if r.Run > 0 {
		s += " run " + strconv.Itoa(r.Run)
	}
	return s
}

// abortTitle renders what an abort means for the run, for headings.
func abortTitle(k AbortKind) string {
	switch k {
	case AbortUsage:
		return "bad input"
	case AbortInterrupted:
		return "interrupted"
	default:
		return "could not run"
	}
}

// abortCaseName names the JUnit testcase that holds an abort.
func abortCaseName(a *Abort) string { return "replaycheck run: " + abortTitle(a.Kind) }

// abortCutMessage renders why a run cut short has no verdict.
func abortCutMessage(r RunRef) string {
	what := "interrupted before it ended, not judged"
	if r.Run > 0 {
		what = "run " + strconv.Itoa(r.Run) + " " + what
	}
	return what
}

// maxCutShortNamed caps the runs AbortLines names one by one.
const maxCutShortNamed = 20

// AbortLines renders why s's run did not complete, one line each: the kind
// and error, the runs cut short and the runs never started; none when it
// completed. s.Results are the runs that ended before it stopped.
func AbortLines(s Suite) []string {
	a := s.Abort
	if a == nil {
		return nil
	}
	lines := []string{abortTitle(a.Kind) + ": " + a.Error}
	if n := len(a.CutShort); n > 0 {
		names := make([]string, 0, min(n, maxCutShortNamed))
		for _, r := range a.CutShort[:min(n, maxCutShortNamed)] {
			names = append(names, r.String())
		}
		more := ""
		if n > maxCutShortNamed {
			more = " and " + strconv.Itoa(n-maxCutShortNamed) + " more"
		}
		lines = append(lines, fmt.Sprintf("%s cut short, not judged: %s%s", plural(n, "run"), strings.Join(names, "; "), more))
	}
	if a.NotStarted > 0 {
		lines = append(lines, plural(a.NotStarted, "run")+" not started")
	}
	return lines
}
