package explore

import (
	"slices"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/replaycheck/replaycheck/fakes/fault"
	"github.com/replaycheck/replaycheck/fakes/ledger"
	"github.com/replaycheck/replaycheck/internal/harness/history"
	"github.com/replaycheck/replaycheck/internal/harness/scenario"
	"github.com/replaycheck/replaycheck/internal/wire"
)

// TestPlanFitsTheTransport: the stdio kinds are swept only on a base that
// reaches the MCP server over stdio (its mcp.transport, or a target that
// speaks nothing else), where the HTTP kinds are not; the crash loop goes to
// the spawn's initialize only; every MCP fault planned is valid.
func TestPlanFitsTheTransport(t *testing.T) {
	tg := parseTarget(t, "builtin:guarded")
	httpBase, stdioBase := bases(t, tg, "chat stream tool call"), bases(t, tg, "chat tool call over stdio")
	h := &history.History{MCP: []wire.MCPEvent{
		{Kind: wire.MCPSession, Method: ledger.MethodInitialize},
		{Kind: wire.MCPSession, Method: ledger.MethodToolsList},
		{Kind: wire.MCPCall, Tool: "commit_write"},
	}}
	stdioKinds := []string{"stdio-crash-loop", "stdio-exit-before", "stdio-exit-after", "stdio-exit-after-answer", "stdio-hang", "stdio-malformed"}
	for _, tt := range []struct {
		name string
		base []*scenario.Scenario
		want []string // the kinds planned, in plan order, each once
	}{
		{"http", httpBase, []string{"mcp-session-fail", "mcp-session-reset", "mcp-fail", "mcp-reset", "mcp-drop", "mcp-drop-mid", "mcp-is-error", "mcp-slow"}},
		{"stdio", stdioBase, append([]string{"stdio-crash-loop", "mcp-is-error", "mcp-slow"}, stdioKinds[1:]...)},
	} {
		t.Run(tt.name, func(t *testing.T) {
			kinds, err := SelectKinds(append([]string{"mcp-session-fail", "mcp-session-reset", "mcp-fail", "mcp-reset", "mcp-drop", "mcp-drop-mid", "mcp-is-error", "mcp-slow"}, stdioKinds...))
			if err != nil {
				t.Fatal(err)
			}
			e := newExplorer(Options{Target: tg, Kinds: kinds})
			var got []string
			for _, j := range e.plan(tt.base, [][]Point{Map(h)}, &Report{}) {
				a := j.sched[0]
				if a.Kind == "stdio-crash-loop" && a.Point.Method != ledger.MethodInitialize {
					t.Errorf("%s at %s, want the crash loop at initialize only", a.Kind, a.Point)
				}
				_, mcp, _ := j.sched.faults(e.kinds, fault.DefaultSettings)
				for _, f := range mcp {
					if err := f.Validate(); err != nil {
						t.Errorf("%s: planned fault %s: %v", a, f, err)
					}
				}
				if !slices.Contains(got, a.Kind) {
					got = append(got, a.Kind)
				}
			}
			if diff := cmp.Diff(tt.want, got); diff != "" {
				t.Errorf("kinds planned (-want +got):\n%s", diff)
			}
		})
	}
	for _, k := range Kinds() {
		if strings.HasPrefix(k.Name, "stdio-") != (k.Transport == wire.MCPTransportStdio) {
			t.Errorf("kind %s has transport %q", k.Name, k.Transport)
		}
	}
}

// TestPlanNeedsASession: the kinds that act on the call's MCP session
// (expire_session) go to a tools/call made in one, not to a self-describing
// MCP 2026-07-28 call, which has none to expire (the fault would stay
// armed and unfired, its cell unknown); the other tools/call kinds go to
// both.
func TestPlanNeedsASession(t *testing.T) {
	tg := parseTarget(t, "builtin:guarded")
	base := bases(t, tg, "chat stream tool call")
	names := []string{"mcp-drop", "mcp-expire", "mcp-expire-after"}
	kinds, err := SelectKinds(names)
	if err != nil {
		t.Fatal(err)
	}
	for _, tt := range []struct {
		protocol wire.MCPProtocol
		want     []string
	}{
		{wire.MCPProtocol20251125, names},
		{wire.MCPProtocol20260728, []string{"mcp-drop"}},
		{"", names}, // a history that predates the protocol: swept
	} {
		h := &history.History{MCP: []wire.MCPEvent{{Kind: wire.MCPCall, Tool: "commit_write", Protocol: tt.protocol}}}
		e := newExplorer(Options{Target: tg, Kinds: kinds})
		var got []string
		for _, j := range e.plan(base, [][]Point{Map(h)}, &Report{}) {
			got = append(got, j.sched[0].Kind)
		}
		got = slices.Compact(got) // each kind at once and always
		if diff := cmp.Diff(tt.want, got); diff != "" {
			t.Errorf("a call at protocol %q: kinds planned (-want +got):\n%s", tt.protocol, diff)
		}
	}
	for _, k := range Kinds() {
		if want := strings.HasPrefix(k.Name, "mcp-expire"); k.Session != want {
			t.Errorf("kind %s: Session %t, want %t", k.Name, k.Session, want)
		}
	}
}
