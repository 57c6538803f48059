package scenario

import (
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/replaycheck/replaycheck/fakes/ledger"
	"github.com/replaycheck/replaycheck/internal/wire"
)

// TestLedgerSettings checks that a scenario's mcp.protocol and
// mcp.honour_cancellation reach the ledger's config, win over its target's,
// and give the scenario a ledger of its own.
func TestLedgerSettings(t *testing.T) {
	ss, err := Load("testdata/protocol.yaml")
	if err != nil {
		t.Fatal(err)
	}
	s := ss[0]
	if !s.Isolated() {
		t.Error("a scenario pinning the protocol is not isolated: it would share a ledger negotiating otherwise")
	}
	no, yes := false, true
	tests := []struct {
		name   string
		own    LedgerSettings
		target LedgerSettings
		want   ledger.Config
	}{
		{name: "scenario's", own: s.MCP.Ledger(), want: ledger.Config{Protocol: wire.MCPProtocol20260728, HonourCancellation: true}},
		{name: "scenario wins", own: s.MCP.Ledger(), target: LedgerSettings{Protocol: wire.MCPProtocol20250618, HonourCancellation: &no},
			want: ledger.Config{Protocol: wire.MCPProtocol20260728, HonourCancellation: true}},
		{name: "explicit false wins", own: LedgerSettings{HonourCancellation: &no}, target: LedgerSettings{Protocol: wire.MCPProtocol20251125, HonourCancellation: &yes},
			want: ledger.Config{Protocol: wire.MCPProtocol20251125}},
		{name: "target's", target: LedgerSettings{Protocol: wire.MCPProtocol20250618, HonourCancellation: &yes},
			want: ledger.Config{Protocol: wire.MCPProtocol20250618, HonourCancellation: true}},
		{name: "none: negotiate", want: ledger.Config{}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got := tt.own.Over(tt.target).Config(ledger.Config{})
			if diff := cmp.Diff(tt.want, got, cmp.FilterPath(func(p cmp.Path) bool { return p.String() == "Logger" }, cmp.Ignore())); diff != "" {
				t.Errorf("config (-want +got):\n%s", diff)
			}
		})
	}
}
