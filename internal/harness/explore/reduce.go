package explore

import (
	"context"
	"fmt"
	"slices"

	"github.com/replaycheck/replaycheck/fakes/fault"
	"github.com/replaycheck/replaycheck/internal/harness/rules"
)

// maxShrinkRounds bounds the shrinking of one failure.
const maxShrinkRounds = 16

// shrinking is one failing schedule being reduced.
type shrinking struct {
	base   string
	sched  Schedule
	failed []string // the checks the original failure broke
	tried  int      // candidates of sched already tried
	cells  []int    // the cells that reduce to it
}

// candidates returns the schedules one step smaller than s: s without one
// of its faults, or with one fault armed only on its own occurrence instead
// of always.
func candidates(s Schedule) []Schedule {
	var out []Schedule
	if len(s) > 1 {
		for i := range s {
			out = append(out, s.without(i))
		}
	}
	for i, a := range s {
		if a.Times != fault.Always {
			continue
		}
		c := slices.Clone(s)
		c[i].Times = fault.Times{Nth: a.Point.Nth}
		if a.Point.Nth == 1 {
			c[i].Times = fault.Once
		}
		out = append(out, c)
	}
	return out
}

// stillFails reports whether r fails one of the checks the original did.
func stillFails(r rules.Result, failed []string) bool {
	if r.Verdict != rules.Fail {
		return false
	}
	for _, c := range rules.Failed(r.Verdicts) {
		if slices.Contains(failed, c) {
			return true
		}
	}
	return false
}

// reduce shrinks every failing cell to its minimal schedule (greedily: a
// smaller schedule that still fails replaces it), merges the cells whose
// minimal schedules show one mechanism into one finding, reproduced by the
// smallest, and confirms each finding (those Confirms picks) by re-running
// it Confirm times.
func (e *explorer) reduce(ctx context.Context, rep *Report) error {
	var work []*shrinking
	for i, c := range rep.Cells {
		if c.Verdict == rules.Fail {
			work = append(work, &shrinking{base: c.Base, sched: c.Schedule, failed: c.Failed, cells: []int{i}})
		}
	}
	if err := e.shrink(ctx, work); err != nil || ctx.Err() != nil {
		rep.Interrupted = ctx.Err() != nil
		rep.Runs = e.runs
		return err
	}
	// One finding per mechanism: the failures that break the same first
	// rule with faults of one family at one step are one cause, shown by
	// the smallest of them (see smaller); the others are listed with it.
	for _, w := range work {
		if r, ok := e.known[key(w.base, w.sched)]; ok && r.Verdict == rules.Fail {
			w.failed = rules.Failed(r.Verdicts) // what the minimal schedule breaks
		}
	}
	groups := e.groupByMechanism(work)
	var jobs []job
	first := make([]int, len(groups)) // each group's first confirming job; -1 for none
	for i, g := range groups {
		first[i] = -1
		if e.opts.Confirms != nil && !e.opts.Confirms(rep, g.cellsOf()) {
			continue
		}
		first[i] = len(jobs)
		f := g.members[0].w
		for n := range e.opts.Confirm {
			jobs = append(jobs, job{base: e.byKey[f.base], sched: f.sched,
				name: fmt.Sprintf("explore finding %d, confirm %d of %d: %s: %s", i+1, n+1, e.opts.Confirm, f.base, f.sched)})
		}
	}
	res, err := e.runAll(ctx, "confirm", jobs, nil)
	rep.Runs = e.runs
	if err != nil {
		return err
	}
	if ctx.Err() != nil {
		rep.Interrupted = true
	}
	for i, g := range groups {
		f := g.members[0].w
		fd := Finding{Mechanism: g.mech, Base: f.base, Schedule: f.sched, base: e.byKey[f.base]}
		if r, ok := rules.Lookup(g.mech.Rule); ok {
			fd.Fix = r.Fix
		}
		fd.summary(rep, g.cellsOf())
		var failedEvery []string
		for n := range e.opts.Confirm {
			if first[i] < 0 {
				break
			}
			r := res[first[i]+n]
			if r == nil {
				continue
			}
			fd.Tries++
			if !stillFails(*r, f.failed) {
				continue
			}
			fd.Reproduced++
			got := rules.Failed(r.Verdicts)
			if fd.Reproduced == 1 {
				failedEvery = got
				fd.Writes, fd.LogicalCalls = r.Counts.Writes, r.History.LogicalCalls()
				for _, v := range r.Verdicts {
					if v.Status == rules.Fail {
						fd.Message = v.Check + ": " + v.Message
						break
					}
				}
			} else {
				failedEvery = slices.DeleteFunc(failedEvery, func(c string) bool { return !slices.Contains(got, c) })
			}
		}
		fd.Failed = failedEvery
		if fd.Reproduced == 0 {
			fd.Failed = f.failed
		}
		fd.Flaky = fd.Reproduced < fd.Tries || fd.Tries == 0
		rep.Findings = append(rep.Findings, fd)
	}
	// Confirmed findings first, then by their rule in catalogue order;
	// stable within, so the sweep order decides.
	order := make([]int, len(rep.Findings))
	for i := range order {
		order[i] = i
	}
	names := rules.Names()
	rank := func(r string) int {
		if i := slices.Index(names, r); i >= 0 {
			return i
		}
		return len(names)
	}
	slices.SortStableFunc(order, func(a, b int) int {
		fa, fb := rep.Findings[a], rep.Findings[b]
		if fa.Flaky != fb.Flaky {
			if fa.Flaky {
				return 1
			}
			return -1
		}
		return rank(fa.Mechanism.Rule) - rank(fb.Mechanism.Rule)
	})
	sorted := make([]Finding, len(order))
	for to, from := range order {
		sorted[to] = rep.Findings[from]
		for _, c := range sorted[to].CellIndexes {
			rep.Cells[c].Finding = to + 1
		}
	}
	rep.Findings = sorted
	return nil
}

// shrink reduces each schedule in work, one candidate per schedule per
// round, running the untried candidates of a round together.
func (e *explorer) shrink(ctx context.Context, work []*shrinking) error {
	for round := 0; round < maxShrinkRounds; round++ {
		type step struct {
			w    *shrinking
			cand Schedule
		}
		var steps []step
		var jobs []job
		for _, w := range work {
			cs := candidates(w.sched)
			if w.tried >= len(cs) {
				continue
			}
			c := cs[w.tried]
			steps = append(steps, step{w, c})
			if _, ok := e.known[key(w.base, c)]; ok || slices.ContainsFunc(jobs, func(j job) bool { return key(j.base.Name, j.sched) == key(w.base, c) }) {
				continue
			}
			jobs = append(jobs, job{base: e.byKey[w.base], sched: c, name: fmt.Sprintf("explore shrink %d.%d: %s: %s", round+1, len(jobs)+1, w.base, c)})
		}
		if len(steps) == 0 {
			return nil
		}
		if len(jobs) > 0 {
			if _, err := e.runAll(ctx, "shrink", jobs, nil); err != nil || ctx.Err() != nil {
				return err
			}
		}
		for _, s := range steps {
			r, ok := e.known[key(s.w.base, s.cand)]
			if ok && stillFails(r, s.w.failed) {
				s.w.sched, s.w.tried = s.cand, 0
				continue
			}
			s.w.tried++
		}
	}
	return nil
}
