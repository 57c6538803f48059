package explore

import (
	"slices"
	"strings"

	"github.com/replaycheck/replaycheck/fakes/fault"
	"github.com/replaycheck/replaycheck/fakes/ledger"
	"github.com/replaycheck/replaycheck/fakes/upstream"
	"github.com/replaycheck/replaycheck/internal/harness/history"
	"github.com/replaycheck/replaycheck/internal/harness/rules"
	"github.com/replaycheck/replaycheck/internal/harness/scenario"
)

// Armed is one fault of a schedule: a kind armed at a point.
type Armed struct {
	Point Point       `json:"point"`
	Kind  string      `json:"kind"`
	Times fault.Times `json:"times"`
}

// String describes the fault, for example "500 at follow_up chat #1 (once)".
func (a Armed) String() string {
	return a.Kind + " at " + a.Point.String() + " (" + a.Times.String() + ")"
}

// Schedule is the faults armed together in one run of a base scenario.
type Schedule []Armed

// String joins the faults' descriptions with " + ".
func (s Schedule) String() string {
	parts := make([]string, len(s))
	for i, a := range s {
		parts[i] = a.String()
	}
	return strings.Join(parts, " + ")
}

// without returns s without its i-th fault.
func (s Schedule) without(i int) Schedule {
	out := make(Schedule, 0, len(s)-1)
	out = append(out, s[:i]...)
	return append(out, s[i+1:]...)
}

// sameRequest reports whether a and b go to the same model request, session
// step or tool call, where only the first to fire could act; two kills
// (kinds) count as one, since a run kills the target at one point.
func sameRequest(a, b Armed) bool {
	if isKill(a.Kind) && isKill(b.Kind) {
		return true
	}
	pa, pb := a.Point, b.Point
	return pa.Side == pb.Side && pa.Kind == pb.Kind && pa.Endpoint == pb.Endpoint && pa.Stream == pb.Stream && pa.Method == pb.Method && pa.Tool == pb.Tool && pa.Nth == pb.Nth
}

// faults returns the upstream, MCP and target faults of the schedule.
func (s Schedule) faults(kinds map[string]Kind, set fault.Settings) (ups []upstream.Fault, mcp []ledger.Fault, tgt []scenario.TargetFault) {
	for _, a := range s {
		k := kinds[a.Kind]
		p := a.Point
		if k.kill != "" {
			tgt = append(tgt, k.targetFault(p))
			continue
		}
		if k.mcp != nil {
			f := k.mcp(p.spot(), set)
			f.Method, f.Tool, f.Times = p.Method, p.Tool, a.Times
			mcp = append(mcp, f)
			continue
		}
		f := k.upstream(p.spot(), set)
		stream := p.Stream
		f.On, f.Endpoint, f.Stream, f.Times = p.Kind, p.Endpoint, &stream, a.Times
		ups = append(ups, f)
	}
	return ups, mcp, tgt
}

// withSchedule returns a copy of base, named name, run once (without its
// repeat), with the schedule's faults armed after its own and every rule of
// the catalogue expected if judged (expect.rules_if_judged): the run fails
// if one breaks, passes if one holds and none breaks, and is unknown when
// none could judge. A client scenario stays one (it checks nothing of the
// client's exit).
func withSchedule(base *scenario.Scenario, name string, s Schedule, kinds map[string]Kind, set fault.Settings) *scenario.Scenario {
	c := *base
	c.Name = name
	c.Warnings = nil
	c.Repeat = nil
	ups, mcp, tgt := s.faults(kinds, set)
	c.Faults = scenario.Faults{
		Upstream: append(append([]upstream.Fault(nil), base.Faults.Upstream...), ups...),
		MCP:      append(append([]ledger.Fault(nil), base.Faults.MCP...), mcp...),
		Target:   append(append([]scenario.TargetFault(nil), base.Faults.Target...), tgt...),
	}
	c.Expect = history.Expect{RulesIfJudged: rules.Names(), MaxAttempts: base.Expect.MaxAttempts}
	if base.Expect.Client != nil {
		c.Expect.Client = &history.ClientExpect{}
	}
	return &c
}

// isKill reports whether the kind named name kills the target.
func isKill(name string) bool {
	return slices.ContainsFunc(killKinds(), func(k Kind) bool { return k.Name == name })
}
