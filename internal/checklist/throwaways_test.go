package checklist

// The throwaways TestChecklists adds: each writes only the files its
// checklist names. The anchors are lines of those files that the edits
// insert beside; a test that no longer finds one fails, naming it.

// upstreamKind is a throwaway upstream fault kind: a kind that acts at no
// hook, held for its After.
func upstreamKind() checklist {
	return checklist{
		name: "upstream kind", doc: "fakes/upstream/doc.go", heading: "Adding a fault kind NAME", throwaway: "throwaway_upstream",
		edits: map[string]edit{
			"fakes/upstream/fault_throwaway_upstream.go": create(`package upstream

import (
	"errors"
	"strings"
	"time"

	"github.com/replaycheck/replaycheck/fakes/fault"
)

// ThrowawayUpstream is internal/checklist's throwaway kind.
type ThrowawayUpstream struct {
	// After is how long a firing holds its run back.
	After fault.Duration ` + "`" + `json:"after,omitempty" yaml:"after,omitempty" jsonschema:"type=string" jsonschema_description:"how long a firing holds its run back"` + "`" + `
}

func throwawayUpstreamKind() kindRow {
	return kindRow{
		Name: "throwaway_upstream",
		Get: func(f *Fault) kind {
			if f.ThrowawayUpstream == nil {
				return nil
			}
			return throwawayUpstream{f.ThrowawayUpstream}
		},
		Probes: func() []fault.Probe[Fault] {
			return []fault.Probe[Fault]{{Name: "throwaway-upstream", Doc: "a throwaway", Optional: true, At: fault.AtRequest,
				Build: func(fault.Spot, fault.Settings) Fault { return Fault{ThrowawayUpstream: &ThrowawayUpstream{}} }}}
		},
	}
}

type throwawayUpstream struct{ s *ThrowawayUpstream }

func (k throwawayUpstream) Check(*Fault) error {
	if k.s.After < 0 {
		return errors.New("after: want a duration of 0 or more")
	}
	return nil
}

func (k throwawayUpstream) Holds(time.Duration) time.Duration { return k.s.After.D() }

func (k throwawayUpstream) describe(b *strings.Builder) { b.WriteString("throwaway_upstream") }
`),
			"fakes/upstream/fault.go": both(
				insert("\t// Truncate sends a non-streamed 200 answer's headers", "\t// ThrowawayUpstream is internal/checklist's throwaway kind.\n\tThrowawayUpstream *ThrowawayUpstream `json:\"throwaway_upstream,omitempty\" yaml:\"throwaway_upstream,omitempty\" jsonschema_description:\"a throwaway kind\"`\n", false),
				insert("\t\ttruncateKind(),\n", "\t\tthrowawayUpstreamKind(),\n", true)),
		},
	}
}

// mcpKind is a throwaway MCP fault kind with a stdio effect: a
// ledger-stdio process answers the call, then exits.
func mcpKind() checklist {
	return checklist{
		name: "MCP kind", doc: "fakes/ledger/ledger.go", heading: "Adding a fault kind NAME", throwaway: "throwaway_mcp",
		edits: map[string]edit{
			"fakes/ledger/fault_throwaway_mcp.go": create(`package ledger

import (
	"time"

	"github.com/replaycheck/replaycheck/fakes/fault"
	"github.com/replaycheck/replaycheck/internal/wire"
)

// ThrowawayMCP is internal/checklist's throwaway kind: the ledger-stdio
// process that carried the call answers it, then exits.
type ThrowawayMCP struct{}

// Check reports a bad setting (fault.Action).
func (*ThrowawayMCP) Check(*Fault) error { return nil }

// Holds is zero (fault.Action).
func (*ThrowawayMCP) Holds(time.Duration) time.Duration { return 0 }

func (*ThrowawayMCP) directive() string { return wire.MCPFaultThrowawayMCP }

func throwawayMCPKind() kindRow {
	return kindRow{
		Name: wire.MCPFaultThrowawayMCP,
		Get:  func(f *Fault) action { return nonNil(f.ThrowawayMCP) },
		Probes: func() []fault.Probe[Fault] {
			return []fault.Probe[Fault]{{Name: "throwaway-mcp", Doc: "a throwaway", Optional: true, At: fault.AtToolCall,
				Build: func(fault.Spot, fault.Settings) Fault { return Fault{ThrowawayMCP: &ThrowawayMCP{}} }}}
		},
		Traits: kindTraits{transport: wire.MCPTransportStdio},
	}
}
`),
			"fakes/ledger/fault.go": both(
				insert("\t// StdioMalformedLine lets the tool run, then makes the ledger-stdio\n", "\t// ThrowawayMCP is internal/checklist's throwaway kind.\n\tThrowawayMCP *ThrowawayMCP `json:\"throwaway_mcp,omitempty\" yaml:\"throwaway_mcp,omitempty\" jsonschema_description:\"Over stdio only: a throwaway kind.\"`\n", false),
				insert("\t\tstdioMalformedLineKind(),\n", "\t\tthrowawayMCPKind(),\n", true)),
			"internal/wire/mcpfault.go": both(
				insert("\tMCPFaultStdioMalformedLine = \"stdio_malformed_line\"\n", "\t// MCPFaultThrowawayMCP is internal/checklist's throwaway kind.\n\tMCPFaultThrowawayMCP = \"throwaway_mcp\"\n", true),
				insert("\t\t{Name: MCPFaultWriteFailed,", "\t\t{Name: MCPFaultThrowawayMCP, Ran: ToolRanYes, ClientSees: ClientSeesAnswer, Words: \"stdio server told to exit after answering (a throwaway)\", Stdio: StdioExitAfterAnswer},\n", false)),
		},
	}
}

// rule is a throwaway rule that always holds.
func rule() checklist {
	return checklist{
		name: "rule", doc: "internal/harness/rules/rules.go", heading: "Adding a rule NAME", throwaway: "throwaway_rule",
		edits: map[string]edit{
			"internal/harness/rules/throwaway_rule.go": create(`package rules

import "github.com/replaycheck/replaycheck/internal/harness/history"

func throwawayRule() Rule {
	return Rule{
		Name:    "throwaway-rule",
		Summary: "a throwaway rule",
		Doc:     "A throwaway rule of internal/checklist. Cannot judge anything.",
		Seed:    "none",
		Fix:     "Nothing to fix.",
		Example: "name: throwaway\nrequest: {endpoint: chat}\nexpect:\n  rules: [throwaway-rule]\n",
		Check: func(*history.History) Verdict {
			return Verdict{Check: "throwaway-rule", Kind: KindRule, Status: Pass, Expected: "nothing", Observed: "nothing"}
		},
	}
}
`),
			"internal/harness/rules/rules.go": insert("\t\treauthAtMostOnceRule(),\n", "\t\tthrowawayRule(),\n", true),
		},
	}
}

// gatewaySwitch is a throwaway switch of the built-in gateway: it marks
// non-streamed answers with a header.
func gatewaySwitch() checklist {
	return checklist{
		name: "switch", doc: "fakes/gateway/doc.go", heading: "Adding a switch NAME", throwaway: "throwaway-switch",
		placeholders: map[string]string{"BEHAVIOUR": "gateway"},
		edits: map[string]edit{
			"fakes/gateway/bugs.go": both(
				insert("\tMCPReplayAfterStdioDeath Bug = \"mcp-replay-after-stdio-death\"\n", "\tThrowawaySwitch Bug = \"throwaway-switch\"\n", true),
				insert("\t}\n}\n\n// Bugs is a set", "\t\t{ThrowawaySwitch, \"a throwaway switch: non-streamed answers carry X-Throwaway-Switch\"},\n", false)),
			"fakes/gateway/gateway.go": insert("\tw.Header().Set(\"Content-Type\", \"application/json\")\n\t_, _ = w.Write(out)\n", "\tif g.cfg.Bugs.Has(ThrowawaySwitch) {\n\t\tw.Header().Set(\"X-Throwaway-Switch\", \"on\")\n\t}\n", false),
		},
	}
}
