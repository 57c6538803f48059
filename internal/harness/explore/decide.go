package explore

import (
	"github.com/replaycheck/replaycheck/internal/harness/rules"
)

// decider leaves out of a sweep the runs of a fault kind planned after a
// run that decides it (Options.Decides). Its methods are called one at a
// time (run.Options.Skip and OnHistory).
type decider struct {
	decides func(Cell) bool
	jobs    []job
	// first is, per kind, the plan index of the first run that decided
	// it among those ended.
	first map[string]int
}

func newDecider(decides func(Cell) bool, jobs []job) *decider {
	if decides == nil {
		return nil
	}
	return &decider{decides: decides, jobs: jobs, first: map[string]int{}}
}

// ended records that job i ended with r.
func (d *decider) ended(i int, r rules.Result) {
	j := d.jobs[i]
	if len(j.sched) != 1 || !d.decides(cellOf(j, r)) {
		return
	}
	k := j.sched[0].Kind
	if f, ok := d.first[k]; !ok || i < f {
		d.first[k] = i
	}
}

// after reports whether job i is a single fault of a kind that a job
// planned before it decided. Once the sweep has ended it is the same
// whatever order the runs ended in: every job before the kind's first
// deciding one ran, since none before it decided.
func (d *decider) after(i int) bool {
	j := d.jobs[i]
	if len(j.sched) != 1 {
		return false
	}
	f, ok := d.first[j.sched[0].Kind]
	return ok && f < i
}
