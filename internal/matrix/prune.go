package matrix

import (
	"fmt"
	"slices"
	"strings"

	"github.com/replaycheck/replaycheck/fakes/fault"
	"github.com/replaycheck/replaycheck/internal/harness/explore"
)

// prunedPoints tallies one kind's runs laterAttempts left out, and the
// model requests they were at.
type prunedPoints struct {
	runs     int
	requests []string
}

// laterAttempts returns the sweep's explore.Options.Prune after the
// fingerprint fp: it leaves out a fault on every attempt (times: always) of
// a model request that the base's clean run makes once and that the agent
// never retried under any fault of the fingerprint (one attempt each, none
// cut short by the run's deadline). The agent then meets that request once
// whatever the fault, so the fault on every attempt is the fault on the
// first, which the sweep runs too: the same run, the same verdict. It
// tallies what it leaves out in by, per kind.
func laterAttempts(fp []explore.FingerprintRow, by map[string]*prunedPoints) func(explore.Base, explore.Armed) bool {
	return func(b explore.Base, a explore.Armed) bool {
		p := a.Point
		if a.Times != fault.Always || p.Side != explore.SideUpstream {
			return false
		}
		if requestsLike(b.Points, p) != 1 || !neverRetried(fp, b.Name, p) {
			return false
		}
		t := by[a.Kind]
		if t == nil {
			t = &prunedPoints{}
			by[a.Kind] = t
		}
		t.runs++
		if r := requestName(p); !slices.Contains(t.requests, r) {
			t.requests = append(t.requests, r)
		}
		return true
	}
}

// innerCuts returns the sweep's explore.Options.Prune that leaves out a cut
// inside a streamed answer (see innerCut), tallying the runs it leaves out
// in by, per kind.
func innerCuts(by map[string]int) func(explore.Base, explore.Armed) bool {
	return func(_ explore.Base, a explore.Armed) bool {
		if !innerCut(a.Point) {
			return false
		}
		by[a.Kind]++
		return true
	}
}

// innerCut reports whether p is a cut after an unnamed event (see
// explore.Point.Named) that is neither the first nor the last of its region:
// the content arriving (events 1 to ContentEvents-1) or after the content
// (ContentEvents+1 to Events-2), or, when ContentEvents is unknown (0),
// events 1 to Events-2. A cut between two events of one region leaves the
// agent the same kind of partial answer, and the region's first and last,
// which the sweep runs, bound how much of it had arrived.
func innerCut(p explore.Point) bool {
	if !p.Cut || p.Named() {
		return false
	}
	first, last := 1, p.Events-2
	switch {
	case p.ContentEvents > 0 && p.Event < p.ContentEvents:
		last = p.ContentEvents - 1
	case p.ContentEvents > 0:
		first = p.ContentEvents + 1
	}
	return first < p.Event && p.Event < last
}

// eitherPrune is the sweep's explore.Options.Prune that leaves out what
// either a or b leaves out; b is not asked about what a leaves out.
func eitherPrune(a, b func(explore.Base, explore.Armed) bool) func(explore.Base, explore.Armed) bool {
	return func(base explore.Base, armed explore.Armed) bool {
		return a(base, armed) || b(base, armed)
	}
}

// requestsLike counts the model requests among points (not the cuts in
// their answers) of p's kind, endpoint and stream flag.
func requestsLike(points []explore.Point, p explore.Point) int {
	n := 0
	for _, q := range points {
		if q.Side == explore.SideUpstream && !q.Cut && q.Kind == p.Kind && q.Endpoint == p.Endpoint && q.Stream == p.Stream {
			n++
		}
	}
	return n
}

// neverRetried reports whether the fingerprint fp has rows of base's model
// request like p, and each shows one attempt, not cut short.
func neverRetried(fp []explore.FingerprintRow, base string, p explore.Point) bool {
	seen := false
	for _, r := range fp {
		if r.Base != base || r.Tool != "" || r.Request != p.Kind || r.Endpoint != p.Endpoint || r.Stream != p.Stream {
			continue
		}
		if r.Attempts != 1 || r.Incomplete {
			return false
		}
		seen = true
	}
	return seen
}

// requestName names a model request: "follow_up responses stream".
func requestName(p explore.Point) string {
	s := string(p.Kind) + " " + p.Endpoint
	if p.Stream {
		s += " stream"
	}
	return s
}

// ranTwice is the sweep's explore.Options.Decides: a run in which a write
// ran twice decides its mechanism's cell, which is its first DUPLICATE in
// plan order (see decide), so the mechanism's runs planned after it are
// not made.
func ranTwice(c explore.Cell) bool {
	v, _ := judge(c)
	return v == Duplicate
}

// prunedRuns lists what laterAttempts left out (by), the cuts innerCuts
// left out (inner, by kind) and the runs after a mechanism's first
// DUPLICATE (afterDuplicate, by kind), in the order of explore's table of
// kinds.
func prunedRuns(by map[string]*prunedPoints, inner, afterDuplicate map[string]int) []PrunedRuns {
	var out []PrunedRuns
	for _, k := range explore.Kinds() {
		if t := by[k.Name]; t != nil {
			out = append(out, PrunedRuns{Mechanism: k.Name, Runs: t.runs, Reason: fmt.Sprintf(
				"on every attempt of a %s, which the fingerprint shows the agent never retries: the same as on its first",
				strings.Join(t.requests, " or "))})
		}
		if n := inner[k.Name]; n > 0 {
			out = append(out, PrunedRuns{Mechanism: k.Name, Runs: n, Reason: "a cut after event k of N of a streamed answer, between the first and the last of its region (the content arriving, or after it): the same partial answer as at one of those two"})
		}
		if n := afterDuplicate[k.Name]; n > 0 {
			out = append(out, PrunedRuns{Mechanism: k.Name, Runs: n, Reason: "after its first DUPLICATE: the cell is its worst run, the first DUPLICATE"})
		}
	}
	return out
}
