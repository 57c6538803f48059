package explore

import (
	"cmp"
	"slices"
	"strings"

	"github.com/replaycheck/replaycheck/fakes/fault"
	"github.com/replaycheck/replaycheck/internal/harness/rules"
)

// familyModel is the fault family of every model-side fault in a
// Mechanism: a model request that fails (a status, a reset, a cut, an error
// event, a truncated body) or answers otherwise (another model) bites the
// same way at the same step, and the broken rule tells the causes apart.
const familyModel = "model request"

// Mechanism is the cause a finding stands for: the first rule it breaks,
// the fault family and the step of the exchange where it bites. Cells whose
// minimal schedules share a mechanism are one finding, across bases and
// endpoints.
type Mechanism struct {
	// Rule is the first broken rule, in catalogue order, of the failure's
	// minimal schedule; the first failing check when no rule broke (a run
	// that did not complete).
	Rule string `json:"rule"`
	// Family is the fault family: "model request" for a fault on the model
	// side, the ledger's fault kind (drop_after_execute, expire_session,
	// stdio_exit, …) on the MCP side; one per fault, joined with " + ".
	Family string `json:"family"`
	// Step is where the fault bites: the model request (initial,
	// follow_up) or the MCP step (tools/call, mcp initialize); one per
	// fault, joined with " + ". Where in a streamed answer a cut came is
	// the reproduction's detail: the rule tells a tool run from a cut
	// stream (no-replay-after-dispatch) from a spliced one (no-splice).
	Step string `json:"step"`
}

// String describes the mechanism in one line, for example
// "no-replay-after-dispatch: a model request fault at follow_up".
func (m Mechanism) String() string {
	return m.Rule + ": " + m.Family + " fault at " + m.Step
}

// mechanismOf is the mechanism of a failure of schedule s that failed the
// checks failed.
func mechanismOf(s Schedule, failed []string, kinds map[string]Kind) Mechanism {
	m := Mechanism{Rule: firstRule(failed)}
	type bite struct{ family, step string }
	bites := make([]bite, len(s))
	for i, a := range s {
		bites[i] = bite{familyModel, stepOf(a.Point)}
		if a.Point.Side == SideMCP {
			bites[i].family = kinds[a.Kind].Family
		}
	}
	slices.SortFunc(bites, func(x, y bite) int {
		return cmp.Or(strings.Compare(x.step, y.step), strings.Compare(x.family, y.family))
	})
	var fams, steps []string
	for _, b := range bites {
		fams, steps = append(fams, b.family), append(steps, b.step)
	}
	m.Family, m.Step = strings.Join(fams, " + "), strings.Join(steps, " + ")
	return m
}

// firstRule returns the first of failed in catalogue order, or the first
// failing check when none is a rule.
func firstRule(failed []string) string {
	for _, r := range rules.Names() {
		if slices.Contains(failed, r) {
			return r
		}
	}
	if len(failed) > 0 {
		return failed[0]
	}
	return ""
}

// stepOf is where a fault at p bites: its model request kind or its MCP
// step.
func stepOf(p Point) string {
	switch {
	case p.Side == SideMCP && p.Method != "":
		return "mcp " + p.Method
	case p.Side == SideMCP:
		return "tools/call"
	}
	return string(p.Kind)
}

// member is one failing cell of a finding, with its minimal schedule and
// what that schedule's run showed.
type member struct {
	w *shrinking
	// calls and requests size the base: its logical tool calls and its
	// client requests.
	calls, requests int
}

// smaller orders the reproductions of a mechanism: fewer faults, fewer
// faults armed on every attempt, then the smaller base (fewer tool calls,
// then fewer requests); sweep order decides the rest.
func smaller(a, b member) int {
	return cmp.Or(
		cmp.Compare(len(a.w.sched), len(b.w.sched)),
		cmp.Compare(always(a.w.sched), always(b.w.sched)),
		cmp.Compare(a.calls, b.calls),
		cmp.Compare(a.requests, b.requests),
		cmp.Compare(a.w.cells[0], b.w.cells[0]),
	)
}

// always counts the faults of s armed on every occurrence.
func always(s Schedule) int {
	n := 0
	for _, a := range s {
		if a.Times == fault.Always {
			n++
		}
	}
	return n
}

// group is one mechanism's failures: its members, the smallest first.
type group struct {
	mech    Mechanism
	members []member
}

// groupByMechanism gathers the reduced failures by mechanism, in order of
// their first cell, each group's members smallest first.
func (e *explorer) groupByMechanism(work []*shrinking) []*group {
	var out []*group
	byMech := map[Mechanism]*group{}
	for _, w := range work {
		m := member{w: w}
		if r, ok := e.known[key(w.base, w.sched)]; ok && r.History != nil {
			m.calls, m.requests = r.History.LogicalCalls(), len(r.History.Requests)
		}
		mech := mechanismOf(w.sched, w.failed, e.kinds)
		g, ok := byMech[mech]
		if !ok {
			g = &group{mech: mech}
			byMech[mech] = g
			out = append(out, g)
		}
		g.members = append(g.members, m)
	}
	for _, g := range out {
		slices.SortStableFunc(g.members, smaller)
	}
	return out
}

// cellsOf returns the sweep cells the group's members reduce from, in
// sweep order.
func (g *group) cellsOf() []int {
	var out []int
	for _, m := range g.members {
		out = append(out, m.w.cells...)
	}
	slices.Sort(out)
	return slices.Compact(out)
}

// summary fills the finding's lists of what its cells show: the checks any
// of them failed (catalogue order), their bases and fault kinds (sweep
// order).
func (f *Finding) summary(rep *Report, cells []int) {
	var failed []string
	for _, i := range cells {
		c := rep.Cells[i]
		failed = append(failed, c.Failed...)
		if !slices.Contains(f.Bases, c.Base) {
			f.Bases = append(f.Bases, c.Base)
		}
		for _, a := range c.Schedule {
			if !slices.Contains(f.Kinds, a.Kind) {
				f.Kinds = append(f.Kinds, a.Kind)
			}
		}
	}
	for _, r := range rules.Names() {
		if slices.Contains(failed, r) {
			f.Rules = append(f.Rules, r)
		}
	}
	for _, c := range failed {
		if _, ok := rules.Lookup(c); !ok && !slices.Contains(f.Rules, c) {
			f.Rules = append(f.Rules, c)
		}
	}
	f.CellIndexes = cells
	f.Cells = len(cells)
}
