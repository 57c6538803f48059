package rules

import (
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/replaycheck/replaycheck/internal/harness/history"
	"github.com/replaycheck/replaycheck/internal/wire"
)

// TestScriptCauses: the script calls and re-asks that matched no offered
// tool are named in every count that failed and every rule that could not
// judge, and hold back a rule's pass; a count that passed is left as it is.
func TestScriptCauses(t *testing.T) {
	typo := func(h *history.History) {
		initial := up(1, "initial", "forwarded", 200)
		initial.Offered = []string{"commit_write", "read_ledger"}
		initial.Unmatched = []string{"commit_wrte"}
		h.Upstream = append(h.Upstream, initial)
		h.Requests[0].Status = 200
	}
	// reaskMissed: the client reported call_1 failed (it wrote), and the
	// follow-up offered only read_ledger, so the model could not ask again.
	reaskMissed := func(h *history.History) {
		initial := up(1, "initial", "forwarded", 200)
		initial.Calls = []wire.ToolCall{{Tool: "commit_write", ID: "call_1", Step: 1}}
		initial.Offered = []string{"commit_write", "read_ledger"}
		failed := up(3, "follow_up", "forwarded", 200)
		failed.ResultIDs = []string{"call_1"}
		failed.Results = []wire.ToolResult{{ID: "call_1", Text: "Connection closed", Read: wire.ResultFailed}}
		failed.Offered = []string{"read_ledger"}
		failed.AgainUnmatched = []wire.ToolCall{{Tool: "commit_write", AgainFor: "call_1", Step: 1, Attempt: 1}}
		h.Upstream = append(h.Upstream, initial, failed)
		h.MCP = append(h.MCP, mcpID(2, wire.MCPCall, "commit_write", "", "1"), mcpID(2, wire.MCPWrite, "commit_write", "", "1"))
		h.Requests[0].Status = 200
	}
	const typoCause = "the script's call commit_wrte matched no offered tool; offered: commit_write, read_ledger"
	const missedCause = "the model could not ask again for commit_write after the client reported call_1 failed: no tool the follow-up offered matches it; offered: read_ledger"
	tests := []struct {
		name   string
		h      *history.History
		expect history.Expect
		want   map[string]string // check -> status: message
	}{
		{
			name: "a call that matched no offered tool explains the counts and the unknown rules",
			h:    seedHistory(typo),
			expect: history.Expect{
				Counts: history.Counts{Writes: history.Exactly(1), MCP: &history.MCPExpect{Calls: &history.CallCount{Total: *history.Exactly(1)}},
					Upstream: map[wire.CountKey]history.Count{{Kind: wire.KindInitial}: *history.Exactly(1), {Kind: wire.KindFollowUp}: *history.Exactly(1)}},
				Rules: []string{"no-replay-after-dispatch", "error-surfaces"},
			},
			want: map[string]string{
				"writes":                   "fail: expected 1 write, observed 0; " + typoCause,
				"mcp.calls":                "fail: expected 1 tools/call, observed 0; " + typoCause,
				"upstream[initial]":        "pass: expected 1 request, observed 1",
				"upstream[follow_up]":      "fail: expected 1 request, observed 0; " + typoCause,
				"no-replay-after-dispatch": "unknown: cannot judge: no tool call reached the MCP server, so nothing could be replayed; " + typoCause,
				"error-surfaces":           "unknown: cannot judge: no tool call reached the MCP server; " + typoCause,
			},
		},
		{
			name:   "a re-ask that could not be made holds the pass and is said",
			h:      seedHistory(reaskMissed),
			expect: history.Expect{Counts: history.Counts{Writes: history.Exactly(1)}, Rules: []string{"no-replay-after-dispatch"}},
			want: map[string]string{
				"writes": "pass: expected 1 write, observed 1",
				"no-replay-after-dispatch": "unknown: cannot judge: " + missedCause +
					"; without that the rule would pass: expected at most 1 execution for 1 logical tool call, observed 1 execution (commit_write ×1)",
			},
		},
		{
			name:   "a re-ask that could not be made explains a failed count",
			h:      seedHistory(reaskMissed),
			expect: history.Expect{Counts: history.Counts{Writes: history.Exactly(2)}},
			want: map[string]string{
				"writes": "fail: expected 2 writes, observed 1; " + missedCause,
			},
		},
		{
			name: "a re-ask another request made was not missed",
			h: seedHistory(func(h *history.History) {
				reaskMissed(h)
				again := h.Upstream[1]
				again.At, again.Offered, again.AgainUnmatched = ms(5), []string{"commit_write"}, nil
				again.Calls = []wire.ToolCall{{Tool: "commit_write", ID: "call_2", AgainFor: "call_1", Step: 1, Attempt: 1}}
				h.Upstream = append(h.Upstream, again)
			}),
			expect: history.Expect{Rules: []string{"no-replay-after-dispatch"}},
			want: map[string]string{
				"no-replay-after-dispatch": "pass: expected at most 1 execution for 1 logical tool call, observed 1 execution (commit_write ×1); " +
					"the model asked again for commit_write after the client reported call_1 failed",
			},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			tt.h.Expect = tt.expect
			got := map[string]string{}
			for _, v := range Check(tt.h) {
				got[v.Check] = string(v.Status) + ": " + v.Message
			}
			if diff := cmp.Diff(tt.want, got); diff != "" {
				t.Errorf("verdicts (-want +got):\n%s", diff)
			}
		})
	}
}
