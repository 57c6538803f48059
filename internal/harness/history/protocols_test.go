package history

import (
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/replaycheck/replaycheck/internal/wire"
)

func TestMCPProtocols(t *testing.T) {
	tests := []struct {
		name string
		mcp  []wire.MCPEvent
		want []wire.MCPProtocol
	}{
		{name: "none said", mcp: []wire.MCPEvent{{Kind: wire.MCPSession, Method: "initialize"}, {Kind: wire.MCPCall, Tool: "commit_write"}}},
		{name: "a fallback", mcp: []wire.MCPEvent{
			{Kind: wire.MCPSessionRefused, Method: "server/discover", Protocol: wire.MCPProtocol20260728},
			{Kind: wire.MCPSession, Method: "initialize", Protocol: wire.MCPProtocol20251125},
			{Kind: wire.MCPCall, Tool: "commit_write", Protocol: wire.MCPProtocol20251125},
			{Kind: wire.MCPWrite, Tool: "commit_write"},
		}, want: []wire.MCPProtocol{wire.MCPProtocol20251125}},
		{name: "stateless, then a session", mcp: []wire.MCPEvent{
			{Kind: wire.MCPSession, Method: "server/discover", Protocol: wire.MCPProtocol20260728},
			{Kind: wire.MCPCall, Tool: "commit_write", Protocol: wire.MCPProtocol20260728},
			{Kind: wire.MCPSession, Method: "initialize", Protocol: wire.MCPProtocol20250618},
		}, want: []wire.MCPProtocol{wire.MCPProtocol20260728, wire.MCPProtocol20250618}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			h := &History{MCP: tt.mcp}
			if diff := cmp.Diff(tt.want, h.MCPProtocols()); diff != "" {
				t.Errorf("(-want +got):\n%s", diff)
			}
		})
	}
}
