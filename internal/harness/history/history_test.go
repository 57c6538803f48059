package history

import (
	"encoding/json"
	"testing"

	"github.com/goccy/go-yaml"

	"github.com/replaycheck/replaycheck/internal/wire"
)

func TestCallCountForms(t *testing.T) {
	tests := []struct {
		name    string
		yaml    string
		want    string
		wantErr bool
	}{
		{"total", "calls: 2", "2", false},
		{"total bounds", "calls: {max: 1}", "at most 1", false},
		{"per tool", "calls: {commit_write: 1, read_ledger: 0}", "commit_write 1, read_ledger 0", false},
		{"per tool bounds", "calls: {commit_write: {min: 1, max: 3}, read_ledger: {at_least: 1}}", "commit_write 1–3, read_ledger at least 1", false},
		{"bounds and a tool", "calls: {max: 1, commit_write: 1}", "", true},
		{"negative", "calls: -1", "", true},
		{"fraction", "calls: 1.5", "", true},
		{"word", "calls: many", "", true},
		{"bad per tool", "calls: {commit_write: x}", "", true},
		{"bad per tool bound", "calls: {commit_write: {max: -1}}", "", true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var v MCPExpect
			err := yaml.Unmarshal([]byte(tt.yaml), &v)
			if (err != nil) != tt.wantErr {
				t.Fatalf("err = %v, wantErr %v", err, tt.wantErr)
			}
			if err != nil {
				return
			}
			if got := v.Calls.String(); got != tt.want {
				t.Errorf("String (-want +got):\n-%s\n+%s", tt.want, got)
			}
			b, err := json.Marshal(v)
			if err != nil {
				t.Fatal(err)
			}
			var back MCPExpect
			if err := json.Unmarshal(b, &back); err != nil || back.Calls.String() != tt.want {
				t.Errorf("JSON round trip of %s: %v, %v", b, back.Calls, err)
			}
		})
	}
}

func TestHistoryQueries(t *testing.T) {
	h := &History{
		Setup:    Setup{ToolCalls: 2},
		Requests: []Exchange{{}, {}},
		Upstream: []wire.UpstreamRequest{{Kind: "initial"}, {Kind: "follow_up"}, {Kind: "initial"}},
		MCP: []wire.MCPEvent{
			{Kind: wire.MCPCall, Tool: "commit_write_keyed"}, {Kind: wire.MCPWrite, Tool: "commit_write_keyed", Key: "k1"},
			{Kind: wire.MCPCall, Tool: "commit_write_keyed"}, {Kind: wire.MCPResult, Tool: "commit_write_keyed", Dedup: true},
			{Kind: wire.MCPCall, Tool: "commit_write"}, {Kind: wire.MCPWrite, Tool: "commit_write"}, {Kind: wire.MCPWrite, Tool: "commit_write_keyed", Key: "k2"},
		},
	}
	if got := len(h.Calls("")); got != 3 {
		t.Errorf("Calls = %d, want 3", got)
	}
	if got := len(h.Calls("commit_write")); got != 1 {
		t.Errorf("Calls(commit_write) = %d, want 1", got)
	}
	if got := len(h.Writes()); got != 3 {
		t.Errorf("Writes = %d, want 3", got)
	}
	if got := h.Keys(); len(got) != 2 || got[0] != "k1" || got[1] != "k2" {
		t.Errorf("Keys = %v, want [k1 k2]", got)
	}
	if got := len(h.UpstreamOf("initial")); got != 2 {
		t.Errorf("UpstreamOf(initial) = %d, want 2", got)
	}
	if got := h.LogicalCalls(); got != 4 {
		t.Errorf("LogicalCalls = %d, want 4", got)
	}
}
