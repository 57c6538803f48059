package explore

import (
	"fmt"
	"slices"
	"strings"

	"github.com/replaycheck/replaycheck/fakes/fault"
	"github.com/replaycheck/replaycheck/fakes/ledger"
	"github.com/replaycheck/replaycheck/fakes/upstream"
	"github.com/replaycheck/replaycheck/internal/harness/history"
	"github.com/replaycheck/replaycheck/internal/harness/scenario"
	"github.com/replaycheck/replaycheck/internal/wire"
)

// Kind is one fault kind the sweep arms at a point: a probe of the upstream
// fake or of the ledger. Each fault kind's file in the fakes holds its probes
// (upstream.Probes, ledger.Probes); this package adds none of its own.
type Kind struct {
	// Name is the kind's name on the command line (--kinds).
	Name string `json:"name"`
	// Doc says what the fault does, in a few words.
	Doc string `json:"doc"`
	// Optional kinds run only when --kinds names them.
	Optional bool `json:"optional,omitempty"`
	// Transport is the MCP transport the kind needs (see fits).
	Transport wire.MCPTransport `json:"transport,omitempty"`
	// Session is true for a kind that acts on the call's MCP session: it
	// goes only to a tools/call made in one (see Point.Sessionless).
	Session bool `json:"session,omitempty"`
	// Family is the fake's fault kind the probe arms (respond, drop,
	// drop_after_execute, …); findings on the MCP side are grouped by it.
	Family string `json:"family"`
	// at is the kind of point the fault goes to.
	at fault.Site
	// upstream and mcp build the fault for a point; one of them is set,
	// or kill.
	upstream func(fault.Spot, fault.Settings) upstream.Fault
	mcp      func(fault.Spot, fault.Settings) ledger.Fault
	// kill is the kill point of a kind that kills the target and resumes
	// it (scenario.TargetFault), swept only on targets that resume
	// (target.Traits.Resumes); "" for the fakes' kinds.
	kill history.KillPoint
}

// Kinds returns the table of fault kinds, in sweep order: the upstream
// fake's probes, then the ledger's. The slice is new on every call.
func Kinds() []Kind {
	var out []Kind
	for _, p := range upstream.Probes() {
		out = append(out, Kind{Name: p.Name, Doc: p.Doc, Optional: p.Optional, Family: p.Family, at: p.At, upstream: p.Build})
	}
	for _, p := range ledger.Probes() {
		out = append(out, Kind{Name: p.Name, Doc: p.Doc, Optional: p.Optional, Transport: p.Transport, Session: p.Session, Family: p.Family, at: p.At, mcp: p.Build})
	}
	return append(out, killKinds()...)
}

// killKinds are the kinds that kill the target at a point and resume it:
// after a tools/call executed, and when a follow-up model request arrived.
func killKinds() []Kind {
	return []Kind{
		{Name: "kill-after-execute", Doc: "kill the target once the tools/call ran (its answer held back), then start its resume", Family: "kill", at: fault.AtToolCall, kill: history.KillAfterExecute},
		{Name: "kill-at-follow-up", Doc: "kill the target when its follow-up model request arrived, then start its resume", Family: "kill", at: fault.AtRequest, kill: history.KillAtFollowUp},
	}
}

// targetFault is the target fault k arms at p.
func (k Kind) targetFault(p Point) scenario.TargetFault {
	kill := &scenario.Kill{After: k.kill}
	if k.kill == history.KillAfterExecute {
		kill.Tool = p.Tool
	}
	return scenario.TargetFault{Kill: kill, Times: fault.Once}
}

// spot is where p puts a probe's fault.
func (p Point) spot() fault.Spot {
	return fault.Spot{Event: p.Event, ContentEvents: p.ContentEvents, Tool: p.Tool}
}

// applies reports whether k can go to p. A kill goes to the first call of
// a tool, or to the first follow-up model request; a kind that acts on the
// MCP session only to a call made in one.
func (k Kind) applies(p Point) bool {
	if k.kill != "" && (p.Nth != 1 || p.Cut || k.kill == history.KillAtFollowUp && p.Kind != wire.KindFollowUp) {
		return false
	}
	switch k.at {
	case fault.AtRequest:
		return p.Side == SideUpstream && !p.Cut
	case fault.AtCut:
		return p.Cut
	case fault.AtStream:
		return p.Side == SideUpstream && !p.Cut && p.Stream
	case fault.AtPlain:
		return p.Side == SideUpstream && !p.Cut && !p.Stream
	case fault.AtSessionStep:
		return p.Side == SideMCP && p.Method != ""
	case fault.AtSpawn:
		return p.Side == SideMCP && p.Method == ledger.MethodInitialize
	default:
		return p.Side == SideMCP && p.Method == "" && !(k.Session && p.Sessionless)
	}
}

// fits reports whether k can act on a run that reaches the MCP server over
// t (see transportOf): a kind for either transport always can, the others
// only over their own.
func (k Kind) fits(t wire.MCPTransport) bool {
	return k.Transport == wire.MCPTransportAny || k.Transport == t
}

// times returns the Times the sweep arms k at p with: the point's own
// occurrence, and — at the first occurrence of a request, a named cut point,
// a session step or a tool call — every occurrence, which a retrying target
// meets again.
func (k Kind) times(p Point) []fault.Times {
	once := fault.Times{Nth: p.Nth}
	if p.Nth == 1 {
		once = fault.Once
	}
	if p.Cut && !p.Named() || p.Nth > 1 || k.kill != "" {
		// Always at a later occurrence is always at the first.
		return []fault.Times{once}
	}
	return []fault.Times{once, fault.Always}
}

// SelectKinds returns the kinds named in names (all non-optional kinds when
// names is empty); an unknown name is an error listing the known ones.
func SelectKinds(names []string) ([]Kind, error) {
	all := Kinds()
	if len(names) == 0 {
		return slices.DeleteFunc(all, func(k Kind) bool { return k.Optional }), nil
	}
	var out []Kind
	for _, n := range names {
		i := slices.IndexFunc(all, func(k Kind) bool { return k.Name == n })
		if i < 0 {
			known := make([]string, len(all))
			for j, k := range all {
				known[j] = k.Name
			}
			return nil, fmt.Errorf("fault kind %q: want one of %s", n, strings.Join(known, ", "))
		}
		if !slices.ContainsFunc(out, func(k Kind) bool { return k.Name == n }) {
			out = append(out, all[i])
		}
	}
	return out, nil
}
