package rules

import (
	"encoding/json"
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
