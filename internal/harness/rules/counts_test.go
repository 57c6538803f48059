package rules

import (
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/replaycheck/replaycheck/internal/harness/history"
	"github.com/replaycheck/replaycheck/internal/wire"
)

// TestCountBounds checks that counts accept bounds and say them in words,
// and that expect.targets replaces a count on the targets it matches.
func TestCountBounds(t *testing.T) {
	// Three loops: 3 writes, 3 initial and 3 follow-up requests, 3 calls.
	threeLoops := func(target string) *history.History {
		return seedHistory(func(h *history.History) {
			h.Target = target
			loop(h, 1, "injected_500", 500)
			loop(h, 10, "injected_500", 500)
			loop(h, 20, "injected_500", 500)
		})
	}
	tests := []struct {
		name   string
		target string
		expect history.Expect
		want   map[string]string // check -> status and message
	}{
		{
			name:   "at most",
			expect: history.Expect{Counts: history.Counts{Writes: atMost(1), Keys: atMost(0)}},
			want: map[string]string{
				"writes": "fail: expected at most 1 write, observed 3",
				"keys":   "pass: expected 0 keys, observed 0", // at most 0 is exactly 0
			},
		},
		{
			name: "ranges and at least",
			expect: history.Expect{Counts: history.Counts{
				Upstream: map[wire.CountKey]history.Count{{Kind: wire.KindInitial}: *between(1, 3), {Kind: wire.KindFollowUp}: *atLeast(4)},
				MCP:      &history.MCPExpect{Calls: &history.CallCount{PerTool: map[string]history.Count{"commit_write": *between(2, 3)}}},
			}},
			want: map[string]string{
				"upstream[initial]":       "pass: expected 1–3 requests, observed 3",
				"upstream[follow_up]":     "fail: expected at least 4 requests, observed 3",
				"mcp.calls[commit_write]": "pass: expected 2–3 tools/calls, observed 3",
			},
		},
		{
			name:   "exact",
			expect: history.Expect{Counts: history.Counts{Writes: history.Exactly(1), MCP: &history.MCPExpect{Calls: &history.CallCount{Total: *history.Exactly(3)}}}},
			want: map[string]string{
				"writes":    "fail: expected 1 write, observed 3",
				"mcp.calls": "pass: expected 3 tools/calls, observed 3",
			},
		},
		{
			name:   "a matching target block replaces the general count",
			target: "builtin:naive",
			expect: history.Expect{
				Counts:  history.Counts{Writes: atMost(1), Upstream: map[wire.CountKey]history.Count{{Kind: wire.KindInitial}: *atLeast(1)}},
				Targets: map[string]history.Counts{"builtin:*": {Writes: history.Exactly(3), Upstream: map[wire.CountKey]history.Count{{Kind: wire.KindFollowUp}: *history.Exactly(1)}}},
			},
			want: map[string]string{
				"writes":              "pass: expected 3 writes, observed 3",
				"upstream[initial]":   "pass: expected at least 1 request, observed 3",
				"upstream[follow_up]": "fail: expected 1 request, observed 3",
			},
		},
		{
			name:   "a target block sets mcp.unknown_tool_calls and keeps mcp.calls",
			target: "builtin:naive",
			expect: history.Expect{
				Counts:  history.Counts{MCP: &history.MCPExpect{Calls: &history.CallCount{Total: *history.Exactly(3)}, UnknownToolCalls: history.Exactly(0)}},
				Targets: map[string]history.Counts{"builtin:*": {MCP: &history.MCPExpect{UnknownToolCalls: history.Exactly(1)}}},
			},
			want: map[string]string{
				"mcp.calls":              "pass: expected 3 tools/calls, observed 3",
				"mcp.unknown_tool_calls": "fail: expected 1 tools/call, observed 0",
			},
		},
		{
			name:   "a block for other targets is not checked",
			target: "litellm",
			expect: history.Expect{
				Counts:  history.Counts{Writes: atMost(1)},
				Targets: map[string]history.Counts{"builtin:*": {Writes: history.Exactly(3), Status: intp(500)}},
			},
			want: map[string]string{
				"writes": "fail: expected at most 1 write, observed 3",
			},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			target := tt.target
			if target == "" {
				target = "builtin:test"
			}
			h := threeLoops(target)
			h.Expect = tt.expect
			got := map[string]string{}
			for _, v := range Check(h) {
				if v.Kind == KindCount {
					got[v.Check] = string(v.Status) + ": " + v.Message
				}
			}
			if diff := cmp.Diff(tt.want, got); diff != "" {
				t.Errorf("count verdicts (-want +got):\n%s", diff)
			}
		})
	}
}

// TestUnknownToolCallsCount: mcp.unknown_tool_calls counts only the calls
// the server answered with the unknown-tool error.
func TestUnknownToolCallsCount(t *testing.T) {
	h := seedHistory(func(h *history.History) {
		renamedInFirst(h)
		h.MCP = append(h.MCP, mcp(203, wire.MCPCall, "commit_write", "unknown_tool"), mcp(204, wire.MCPCall, "record_entry", ""))
		h.Expect = history.Expect{Counts: history.Counts{MCP: &history.MCPExpect{UnknownToolCalls: atMost(0)}}}
	})
	var got []string
	for _, v := range Check(h) {
		if v.Kind == KindCount {
			got = append(got, v.Check+" "+string(v.Status)+": "+v.Message)
		}
	}
	if diff := cmp.Diff([]string{"mcp.unknown_tool_calls fail: expected 0 tools/calls, observed 1"}, got); diff != "" {
		t.Errorf("count verdicts (-want +got):\n%s", diff)
	}
}

// atLeast, atMost and between return bounded history Counts.
func atLeast(n int) *history.Count { return &history.Count{Min: n} }

func atMost(n int) *history.Count { return &history.Count{Max: &n} }

func between(min, max int) *history.Count { return &history.Count{Min: min, Max: &max} }

// TestSpawnsCount: mcp.spawns counts the stdio server processes that
// opened a session with the run's ledger, and a target block overrides it.
func TestSpawnsCount(t *testing.T) {
	h := seedHistory(func(h *history.History) {
		h.MCP = append(h.MCP, mcp(1, wire.MCPSpawn, "", "4711"), mcp(300, wire.MCPSpawn, "", "4712"))
		h.Expect = history.Expect{
			Counts:  history.Counts{MCP: &history.MCPExpect{Spawns: history.Exactly(1)}},
			Targets: map[string]history.Counts{h.Target: {MCP: &history.MCPExpect{Spawns: history.Exactly(2)}}},
		}
	})
	var got []string
	for _, v := range Check(h) {
		if v.Kind == KindCount {
			got = append(got, v.Check+" "+string(v.Status)+": "+v.Message)
		}
	}
	if diff := cmp.Diff([]string{"mcp.spawns pass: expected 2 spawns, observed 2"}, got); diff != "" {
		t.Errorf("count verdicts (-want +got):\n%s", diff)
	}
}
