package run

import (
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/replaycheck/replaycheck/internal/harness/scenario"
	"github.com/replaycheck/replaycheck/internal/harness/target"
	"github.com/replaycheck/replaycheck/internal/wire"
)

// pinningTarget is a target whose runs' ledger speaks the settings of a
// target file's mcp (target.Traits.Ledger).
type pinningTarget struct {
	target.Target
	ledger scenario.LedgerSettings
}

func (p pinningTarget) Traits() target.Traits {
	tr := p.Target.Traits()
	tr.Ledger = p.ledger
	return tr
}

// TestLedgerProtocolChosen runs the seed on the built-in gateway with the
// MCP protocol pinned by the scenario, by its target, and by both (the
// scenario's wins), and checks the version the run's sessions negotiated.
func TestLedgerProtocolChosen(t *testing.T) {
	parse := func(mcp string) *scenario.Scenario {
		ss, errs := scenario.Parse("scenario.yaml", []byte("name: seed\nrequest: {endpoint: chat}\n"+mcp+"expect: {writes: 1}\n"))
		if len(errs) > 0 {
			t.Fatal(errs)
		}
		return ss[0]
	}
	tg, err := target.ParseTarget("builtin:guarded")
	if err != nil {
		t.Fatal(err)
	}
	pinned := pinningTarget{tg, scenario.LedgerSettings{Protocol: wire.MCPProtocol20250618}}
	for _, tt := range []struct {
		name   string
		s      *scenario.Scenario
		target target.Target
		want   []wire.MCPProtocol
	}{
		{"the scenario's", parse("mcp: {protocol: 2025-06-18}\n"), tg, []wire.MCPProtocol{wire.MCPProtocol20250618}},
		{"the target's", parse(""), pinned, []wire.MCPProtocol{wire.MCPProtocol20250618}},
		{"the scenario's wins", parse("mcp: {protocol: 2025-03-26}\n"), pinned, []wire.MCPProtocol{wire.MCPProtocol20250326}},
	} {
		t.Run(tt.name, func(t *testing.T) {
			hs, err := Run(ctxFor(t), []*scenario.Scenario{tt.s}, Options{Targets: []target.Target{tt.target}})
			if err != nil {
				t.Fatal(err)
			}
			if len(hs) != 1 || hs[0].Error != "" {
				t.Fatalf("histories %+v", hs)
			}
			if diff := cmp.Diff(tt.want, hs[0].MCPProtocols()); diff != "" {
				t.Errorf("negotiated (-want +got):\n%s", diff)
			}
		})
	}
}
