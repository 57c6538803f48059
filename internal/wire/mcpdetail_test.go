package wire

import (
	"encoding/json"
	"testing"

	"github.com/google/go-cmp/cmp"
)

// TestMCPEventOldDetail decodes events saved before MCPEvent had typed
// fields, one "detail" of every kind, into the typed fields; without the
// migration they lose what the detail said.
func TestMCPEventOldDetail(t *testing.T) {
	tests := []struct {
		name string
		json string
		want MCPEvent
	}{
		{"call", `{"kind":"call","tool":"commit_write"}`, MCPEvent{Kind: MCPCall, Tool: "commit_write"}},
		{"unknown tool", `{"kind":"call","tool":"commit_write","detail":"unknown_tool"}`, MCPEvent{Kind: MCPCall, Tool: "commit_write", UnknownTool: true}},
		{"result dedup", `{"kind":"result","detail":"dedup"}`, MCPEvent{Kind: MCPResult, Dedup: true}},
		{"result is_error", `{"kind":"result","detail":"is_error"}`, MCPEvent{Kind: MCPResult, Fault: MCPFaultIsError}},
		{"result write_failed", `{"kind":"result","detail":"write_failed"}`, MCPEvent{Kind: MCPResult, Fault: MCPFaultWriteFailed}},
		{"result http", `{"kind":"result","detail":"http 404"}`, MCPEvent{Kind: MCPResult, Status: 404}},
		{"fault", `{"kind":"fault","request_id":"3","detail":"drop_after_execute"}`, MCPEvent{Kind: MCPFault, RequestID: "3", Fault: MCPFaultDropAfterExecute}},
		{"fault at a process", `{"kind":"fault","pid":"21","detail":"stdio_exit_at_start"}`, MCPEvent{Kind: MCPFault, PID: "21", Fault: MCPFaultStdioExitAtStart}},
		{"cancelled", `{"kind":"cancelled","detail":"stream closed"}`, MCPEvent{Kind: MCPCancelled, Cause: "stream closed"}},
		{"session", `{"kind":"session","detail":"tools/list"}`, MCPEvent{Kind: MCPSession, Method: "tools/list"}},
		{"session refused", `{"kind":"session_refused","detail":"initialize"}`, MCPEvent{Kind: MCPSessionRefused, Method: "initialize"}},
		{"tool removed", `{"kind":"tools_changed","tool":"commit_write","detail":"removed"}`, MCPEvent{Kind: MCPToolsChanged, Tool: "commit_write", Change: MCPToolRemoved}},
		{"tool added", `{"kind":"tools_changed","tool":"record_entry","detail":"added"}`, MCPEvent{Kind: MCPToolsChanged, Tool: "record_entry", Change: MCPToolAdded}},
		{"spawn", `{"kind":"spawn","detail":"4711"}`, MCPEvent{Kind: MCPSpawn, PID: "4711"}},
		{"exit by a fault", `{"kind":"exit","tool":"commit_write","request_id":"5","pid":"4711","detail":"stdio_exit_after_execute"}`,
			MCPEvent{Kind: MCPExit, Tool: "commit_write", RequestID: "5", PID: "4711", End: MCPExitFault, Fault: MCPFaultStdioExitAfterExecute}},
		{"exit stdin closed", `{"kind":"exit","pid":"4712","detail":"stdin_closed"}`, MCPEvent{Kind: MCPExit, PID: "4712", End: MCPExitStdinClosed}},
		{"exit stopped", `{"kind":"exit","pid":"4713","detail":"stopped"}`, MCPEvent{Kind: MCPExit, PID: "4713", End: MCPExitStopped}},
		{"exit gone", `{"kind":"exit","pid":"4714","detail":"gone"}`, MCPEvent{Kind: MCPExit, PID: "4714", End: MCPExitGone}},
		{"typed field wins", `{"kind":"fault","fault":"delay","detail":"is_error"}`, MCPEvent{Kind: MCPFault, Fault: MCPFaultDelay}},
		{"a kind without detail", `{"kind":"write","entry":"e","detail":"x"}`, MCPEvent{Kind: MCPWrite, Entry: "e"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var got MCPEvent
			if err := json.Unmarshal([]byte(tt.json), &got); err != nil {
				t.Fatal(err)
			}
			if diff := cmp.Diff(tt.want, got); diff != "" {
				t.Errorf("decoded (-want +got):\n%s", diff)
			}
		})
	}
}

// TestMCPEventJSONFields pins the JSON names of the typed fields, and that
// an event reads back as it was written.
func TestMCPEventJSONFields(t *testing.T) {
	tests := []struct {
		e    MCPEvent
		want string
	}{
		{MCPEvent{Kind: MCPCall, Tool: "t", UnknownTool: true}, `{"at":"0s","kind":"call","tool":"t","unknown_tool":true}`},
		{MCPEvent{Kind: MCPResult, Fault: MCPFaultIsError, Dedup: true, Status: 500}, `{"at":"0s","kind":"result","fault":"is_error","dedup":true,"status":500}`},
		{MCPEvent{Kind: MCPSession, Method: "initialize"}, `{"at":"0s","kind":"session","method":"initialize"}`},
		{MCPEvent{Kind: MCPCancelled, Cause: "stream closed"}, `{"at":"0s","kind":"cancelled","cause":"stream closed"}`},
		{MCPEvent{Kind: MCPToolsChanged, Tool: "t", Change: MCPToolAdded}, `{"at":"0s","kind":"tools_changed","tool":"t","change":"added"}`},
		{MCPEvent{Kind: MCPSpawn, PID: "7"}, `{"at":"0s","kind":"spawn","pid":"7"}`},
		{MCPEvent{Kind: MCPExit, PID: "7", End: MCPExitFault, Fault: MCPFaultStdioHang}, `{"at":"0s","kind":"exit","pid":"7","fault":"stdio_hang","end":"fault"}`},
	}
	for _, tt := range tests {
		b, err := json.Marshal(tt.e)
		if err != nil {
			t.Fatal(err)
		}
		if string(b) != tt.want {
			t.Errorf("JSON (-want +got):\n-%s\n+%s", tt.want, b)
		}
		var back MCPEvent
		if err := json.Unmarshal(b, &back); err != nil {
			t.Fatal(err)
		}
		if diff := cmp.Diff(tt.e, back); diff != "" {
			t.Errorf("read back (-want +got):\n%s", diff)
		}
	}
}
