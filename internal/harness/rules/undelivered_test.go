package rules

import (
	"encoding/json"
	"strings"
	"testing"
	"time"

	"github.com/replaycheck/replaycheck/internal/harness/history"
	"github.com/replaycheck/replaycheck/internal/wire"
)

// hangNeverForwarded is the history of "stdio server hangs after executing"
// on builtin:guarded from run 167 of `run --repeat 200 --parallel 128`
// beside four busy loops: the gateway wrote the call to the ledger-stdio
// process, whose 200ms tool timeout expired before the process forwarded
// it; the gateway gave the call up and closed the process's stdin, so the
// call never reached the ledger, nothing was written and the stdio_hang
// fault never fired. The harness's own timers were late by 76ms only.
func hangNeverForwarded(h *history.History) {
	h.Requests[0].Status, h.Requests[0].End = 200, ms(418)
	h.Setup.ToolTimeout = ms(200)
	h.Harness = &history.Harness{Lateness: ms(76), Deadline: history.Duration(30 * time.Second)}
	h.Expect = history.Expect{Counts: history.Counts{Status: intp(200), Writes: history.Exactly(1),
		MCP: &history.MCPExpect{Calls: &history.CallCount{PerTool: map[string]history.Count{"commit_write": *history.Exactly(1)}}}},
		Rules: []string{"no-replay-ambiguous-mcp", "no-replay-after-dispatch"}}
	h.Faults = []wire.FaultReport{{Side: wire.FaultMCP, Index: 1, Fault: json.RawMessage(`{"tool":"commit_write","times":"once","stdio_hang":{}}`)}}
	exit := mcp(352, wire.MCPExit, "", "")
	exit.PID, exit.End = "6386", wire.MCPExitStdinClosed
	h.MCP = []wire.MCPEvent{mcp(38, wire.MCPSpawn, "", "6386"), mcp(39, wire.MCPSession, "", "tools/list"),
		{At: ms(352), Kind: wire.MCPUnforwarded, Tool: "commit_write", PID: "6386"}, exit,
		mcp(413, wire.MCPSpawn, "", "6395"), mcp(416, wire.MCPSession, "", "tools/list")}
	h.Upstream = []wire.UpstreamRequest{up(50, wire.KindInitial, "forwarded", 200), up(418, wire.KindFollowUp, "forwarded", 200)}
}

// TestUndeliveredCall: a run whose counts fell short because the harness's
// own stdio server never forwarded a call the target sent and gave up is
// unknown, saying so, with the unfired fault; the same run without that
// fact (a target that never sent the call) fails, and so does a write that
// ran twice or a replay rule broken beside it.
func TestUndeliveredCall(t *testing.T) {
	tests := []struct {
		name string
		muts []func(h *history.History)
		want Status
		// why is a part of the failed or unknown checks' messages.
		why string
	}{
		{
			name: "writes 0: the stdio server never forwarded the call",
			muts: []func(h *history.History){hangNeverForwarded},
			want: Unknown,
			why: "cannot judge: the harness's stdio server never forwarded the target's tools/call commit_write ×1 to the ledger: the target gave it up (cancelled it or closed the server's stdin) first, so it never ran " +
				`and mcp fault 1 {tool: commit_write, times: once, stdio_hang: {}} never fired (it matched no tools/call); the run measured how fast the harness delivered the call, not what the target decided (the harness may have been starved); re-run on a quieter machine or with a lower --parallel (expected 1 write, observed 0)`,
		},
		{
			name: "writes 0: the target never sent the call",
			muts: []func(h *history.History){hangNeverForwarded, func(h *history.History) {
				h.MCP = h.MCP[:1:1]
			}},
			want: Fail,
			why:  "expected 1 write, observed 0",
		},
		{
			name: "a write that ran twice beside a call never forwarded",
			muts: []func(h *history.History){hangNeverForwarded, func(h *history.History) {
				h.MCP = append(h.MCP, mcpID(420, wire.MCPCall, "commit_write", "", "1"), mcpID(421, wire.MCPWrite, "commit_write", "", "1"),
					mcpID(430, wire.MCPCall, "commit_write", "", "2"), mcpID(431, wire.MCPWrite, "commit_write", "", "2"))
			}},
			want: Fail,
			why:  "expected 1 write, observed 2",
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			h := seedHistory(func(h *history.History) {
				for _, m := range tt.muts {
					m(h)
				}
			})
			vs := Check(h)
			if got := Overall(vs); got != tt.want {
				t.Errorf("Overall = %s, want %s:%s", got, tt.want, messages(vs))
			}
			found, starved := false, 0
			for _, v := range vs {
				if v.Status != Pass && strings.Contains(v.Message, tt.why) {
					found = true
				}
				if v.Starved {
					starved++
				}
			}
			if want := tt.want == Unknown; (starved > 0) != want {
				t.Errorf("%d checks marked starved, want some: %v%s", starved, want, messages(vs))
			}
			if !found {
				t.Errorf("no failed or unknown check says %q:%s", tt.why, messages(vs))
			}
		})
	}
}
