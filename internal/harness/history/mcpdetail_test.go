package history

import (
	"encoding/json"
	"os"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/replaycheck/replaycheck/internal/wire"
)

// TestHistoryOldMCPDetail reads testdata/mcp-detail.json, a history saved
// before MCP events had typed fields, with one "detail" on an event of
// every kind, and finds each meaning in its typed field; the queries that
// read them (IsExit, IsDedup, FaultMeaning) answer as they did.
func TestHistoryOldMCPDetail(t *testing.T) {
	b, err := os.ReadFile("testdata/mcp-detail.json")
	if err != nil {
		t.Fatal(err)
	}
	var h History
	if err := json.Unmarshal(b, &h); err != nil {
		t.Fatal(err)
	}
	at := func(s string) Duration {
		d, err := time.ParseDuration(s)
		if err != nil {
			t.Fatal(err)
		}
		return Duration(d)
	}
	const cw = "commit_write"
	want := []wire.MCPEvent{
		{At: at("127.948032ms"), Kind: wire.MCPSession, Method: "server/discover"},
		{At: at("128ms"), Kind: wire.MCPSessionRefused, Method: "initialize"},
		{At: at("130.099251ms"), Kind: wire.MCPSpawn, PID: "10171"},
		{At: at("130.104412ms"), Kind: wire.MCPSession, Method: "initialize"},
		{At: at("134.703959ms"), Kind: wire.MCPSession, Method: "tools/list"},
		{At: at("145.424851ms"), Kind: wire.MCPCall, Tool: cw, RequestID: "4", Args: `{"entry":"alpha-rc2qd9fvxgpb"}`},
		{At: at("147.256641ms"), Kind: wire.MCPWrite, Tool: cw, RequestID: "4", Entry: "alpha-rc2qd9fvxgpb"},
		{At: at("147.264015ms"), Kind: wire.MCPFault, Tool: cw, RequestID: "4", PID: "10171", Fault: wire.MCPFaultStdioExitAfterExecute},
		{At: at("147.318007ms"), Kind: wire.MCPExit, Tool: cw, RequestID: "4", PID: "10171", End: wire.MCPExitFault, Fault: wire.MCPFaultStdioExitAfterExecute},
		{At: at("150ms"), Kind: wire.MCPFault, Tool: cw, RequestID: "5", Fault: wire.MCPFaultChangeTools},
		{At: at("150ms"), Kind: wire.MCPToolsChanged, Tool: cw, Change: wire.MCPToolRemoved},
		{At: at("150ms"), Kind: wire.MCPToolsChanged, Tool: "record_entry", Change: wire.MCPToolAdded},
		{At: at("160ms"), Kind: wire.MCPCall, Tool: cw, RequestID: "6", UnknownTool: true},
		{At: at("170ms"), Kind: wire.MCPCall, Tool: "commit_write_keyed", RequestID: "7", Key: "k1"},
		{At: at("171ms"), Kind: wire.MCPResult, Tool: "commit_write_keyed", RequestID: "7", Dedup: true},
		{At: at("180ms"), Kind: wire.MCPCall, Tool: cw, RequestID: "8"},
		{At: at("181ms"), Kind: wire.MCPFault, Tool: cw, RequestID: "8", Fault: wire.MCPFaultIsError},
		{At: at("182ms"), Kind: wire.MCPResult, Tool: cw, RequestID: "8", Fault: wire.MCPFaultIsError},
		{At: at("190ms"), Kind: wire.MCPCall, Tool: cw, RequestID: "9"},
		{At: at("191ms"), Kind: wire.MCPFault, Tool: cw, RequestID: "9", Entry: "e9", Fault: wire.MCPFaultWriteFailed},
		{At: at("192ms"), Kind: wire.MCPResult, Tool: cw, RequestID: "9", Fault: wire.MCPFaultWriteFailed},
		{At: at("200ms"), Kind: wire.MCPCall, Tool: cw, RequestID: "10"},
		{At: at("201ms"), Kind: wire.MCPResult, Tool: cw, RequestID: "10", Status: 404},
		{At: at("210ms"), Kind: wire.MCPCall, Tool: cw, RequestID: "11"},
		{At: at("211ms"), Kind: wire.MCPFault, Tool: cw, RequestID: "11", Fault: wire.MCPFaultDelay},
		{At: at("212ms"), Kind: wire.MCPCancelled, Tool: cw, RequestID: "11", Cause: "stream closed"},
		{At: at("220ms"), Kind: wire.MCPSpawn, PID: "10183"},
		{At: at("221ms"), Kind: wire.MCPFault, PID: "10183", Fault: wire.MCPFaultStdioExitAtStart},
		{At: at("221ms"), Kind: wire.MCPExit, PID: "10183", End: wire.MCPExitFault, Fault: wire.MCPFaultStdioExitAtStart},
		{At: at("230ms"), Kind: wire.MCPSpawn, PID: "10184"},
		{At: at("240ms"), Kind: wire.MCPExit, PID: "10184", End: wire.MCPExitStdinClosed},
		{At: at("241ms"), Kind: wire.MCPSpawn, PID: "10185"},
		{At: at("242ms"), Kind: wire.MCPExit, PID: "10185", End: wire.MCPExitStopped},
		{At: at("243ms"), Kind: wire.MCPSpawn, PID: "10186"},
		{At: at("250ms"), Kind: wire.MCPExit, Tool: cw, RequestID: "12", PID: "10186", End: wire.MCPExitGone},
		{At: at("268.698782ms"), Kind: wire.MCPResult, Tool: cw, RequestID: "4"},
	}
	if diff := cmp.Diff(want, h.MCP); diff != "" {
		t.Fatalf("MCP events (-want +got):\n%s", diff)
	}

	// What the queries read off the old events.
	var inFlight, dedup []string
	var ends []bool
	for _, e := range h.MCP {
		if exit, in := e.IsExit(); exit && in {
			inFlight = append(inFlight, e.PID)
		}
		if e.IsDedup() {
			dedup = append(dedup, e.RequestID)
		}
		if m, ok := e.FaultMeaning(); ok {
			ends = append(ends, m.EndsCall)
		}
	}
	if diff := cmp.Diff([]string{"10171", "10186"}, inFlight); diff != "" {
		t.Errorf("exits with a call in flight (-want +got):\n%s", diff)
	}
	if diff := cmp.Diff([]string{"7"}, dedup); diff != "" {
		t.Errorf("dedup results (-want +got):\n%s", diff)
	}
	if len(ends) != 6 {
		t.Errorf("%d fault events with a meaning, want 6", len(ends))
	}
	if got := len(h.MCPOf(wire.MCPSpawn, "")); got != 5 {
		t.Errorf("%d spawns, want 5", got)
	}
}
