package explore

import (
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"time"

	"github.com/replaycheck/replaycheck/internal/harness/history"
)

// Aspects of a retry policy a PolicyChange names.
const (
	AspectAttempts   = "attempts"
	AspectGaps       = "gaps"
	AspectRetryAfter = "retry-after"
	AspectOutcome    = "outcome"
	AspectToolRuns   = "tool runs"
	AspectSpawns     = "spawns"
)

// gapTolerance is how far two gaps may differ and still count as the same
// wait: jittered backoff, timers and a busy machine move a gap by tens of
// milliseconds (the built-in gateway's jittered 2–50 ms waits became 73 ms
// on a machine at load 30), a policy
// change (a backoff base of seconds, a honoured Retry-After) by a factor.
// Two gaps differ when they are more than gapSlack apart and the larger is
// more than gapTolerance times the smaller.
const (
	gapTolerance = 1.5
	gapSlack     = 100 * time.Millisecond
)

// PolicyChange is one row of a retry-policy fingerprint that differs between
// two sweeps: Before is nil for a row only the new sweep has, After nil for
// one it no longer has; otherwise Aspects names what changed (AspectAttempts,
// …), in that order.
type PolicyChange struct {
	Before  *FingerprintRow `json:"before,omitempty"`
	After   *FingerprintRow `json:"after,omitempty"`
	Aspects []string        `json:"aspects,omitempty"`
}

// Row is the row the change is about: After, or Before when it is gone.
func (c PolicyChange) Row() FingerprintRow {
	if c.After != nil {
		return *c.After
	}
	return *c.Before
}

// rowKey identifies a fingerprint row across sweeps: the base, the request
// or tool call the fault went to, and the fault.
type rowKey struct {
	base, request, endpoint, tool, fault string
	stream                               bool
}

func keyOf(r FingerprintRow) rowKey {
	return rowKey{base: r.Base, request: string(r.Request), endpoint: r.Endpoint, tool: r.Tool, fault: r.Fault, stream: r.Stream}
}

// DiffFingerprints returns what changed in a target's retry policy from
// before to after: the rows whose attempts, gaps (beyond timing jitter, see
// gapTolerance), Retry-After handling, outcome, tool runs or spawns differ,
// then the rows after has and before has not, in after's order, then the
// rows before has and after has not. None means the same policy.
func DiffFingerprints(before, after []FingerprintRow) []PolicyChange {
	old := map[rowKey]int{}
	for i, r := range before {
		old[keyOf(r)] = i
	}
	var changed, added, gone []PolicyChange
	matched := map[rowKey]bool{}
	for i := range after {
		a := &after[i]
		j, ok := old[keyOf(*a)]
		if !ok {
			added = append(added, PolicyChange{After: a})
			continue
		}
		matched[keyOf(*a)] = true
		b := &before[j]
		if aspects := differences(*b, *a); len(aspects) > 0 {
			changed = append(changed, PolicyChange{Before: b, After: a, Aspects: aspects})
		}
	}
	for i := range before {
		if !matched[keyOf(before[i])] {
			gone = append(gone, PolicyChange{Before: &before[i]})
		}
	}
	return append(append(changed, added...), gone...)
}

// differences names the aspects in which two rows of one key differ.
func differences(b, a FingerprintRow) []string {
	var out []string
	if b.Attempts != a.Attempts || b.Incomplete != a.Incomplete {
		out = append(out, AspectAttempts)
	}
	if gapsDiffer(b, a) {
		out = append(out, AspectGaps)
	}
	if b.RetryAfter != a.RetryAfter {
		out = append(out, AspectRetryAfter)
	}
	if b.Outcome != a.Outcome {
		out = append(out, AspectOutcome)
	}
	if b.Executions != a.Executions {
		out = append(out, AspectToolRuns)
	}
	if b.Spawns != a.Spawns {
		out = append(out, AspectSpawns)
	}
	return out
}

// gapsDiffer reports whether the waits between attempts changed: the
// shortest, median or longest gap moved beyond jitter, or the outer loop's
// waits did (another number of them, or one beyond jitter). A row with one
// attempt has no gaps to compare (its attempts tell the change).
func gapsDiffer(b, a FingerprintRow) bool {
	if b.Attempts <= 1 || a.Attempts <= 1 {
		return false
	}
	if len(b.OuterGaps) != len(a.OuterGaps) {
		return true
	}
	for i := range b.OuterGaps {
		if gapDiffers(b.OuterGaps[i], a.OuterGaps[i]) {
			return true
		}
	}
	return gapDiffers(b.GapMin, a.GapMin) || gapDiffers(b.GapMedian, a.GapMedian) || gapDiffers(b.GapMax, a.GapMax)
}

func gapDiffers(x, y history.Duration) bool {
	lo, hi := min(x.D(), y.D()), max(x.D(), y.D())
	return hi-lo > gapSlack && float64(hi) > gapTolerance*float64(lo)
}

// ReadReport reads a sweep's report as `explore --json` writes it (see
// FormatVersion), for example a saved fingerprint to diff against.
func ReadReport(r io.Reader) (*Report, error) {
	var rep Report
	dec := json.NewDecoder(r)
	if err := dec.Decode(&rep); err != nil {
		return nil, fmt.Errorf("reading an explore report: %w", err)
	}
	switch {
	case rep.Version == 0:
		return nil, errors.New("reading an explore report: no version: not a report written by explore --json")
	case rep.Version > FormatVersion:
		return nil, fmt.Errorf("reading an explore report: format version %d is newer than this replaycheck's (%d)", rep.Version, FormatVersion)
	}
	return &rep, nil
}
