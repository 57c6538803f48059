package run

import (
	"testing"

	"github.com/replaycheck/replaycheck/internal/wire"
)

// TestEnded: settle waits for every tools/call to end; a stdio server that
// died with the call in flight ends it (its client gets no answer from it),
// and an end counts for the call of its own request id only.
func TestEnded(t *testing.T) {
	call := func(id string) wire.MCPEvent {
		return wire.MCPEvent{Kind: wire.MCPCall, Tool: "commit_write", RequestID: id}
	}
	result := func(id string) wire.MCPEvent {
		return wire.MCPEvent{Kind: wire.MCPResult, Tool: "commit_write", RequestID: id}
	}
	exit := func(id, fault string) wire.MCPEvent {
		return wire.MCPEvent{Kind: wire.MCPExit, Tool: "commit_write", RequestID: id, PID: "7", End: wire.MCPExitFault, Fault: fault}
	}
	gone := func(id string) wire.MCPEvent {
		return wire.MCPEvent{Kind: wire.MCPExit, Tool: "commit_write", RequestID: id, PID: "7", End: wire.MCPExitGone}
	}
	for _, tt := range []struct {
		name string
		evs  []wire.MCPEvent
		want bool
	}{
		{"no call", nil, true},
		{"answered", []wire.MCPEvent{call("1"), result("1")}, true},
		{"open", []wire.MCPEvent{call("1")}, false},
		{"cancelled", []wire.MCPEvent{call("1"), {Kind: wire.MCPCancelled, RequestID: "1"}}, true},
		{"refused by a fault", []wire.MCPEvent{call("1"), {Kind: wire.MCPFault, RequestID: "1", Fault: wire.MCPFaultFailBeforeExecute}}, true},
		{"a fault that does not end it", []wire.MCPEvent{call("1"), {Kind: wire.MCPFault, RequestID: "1", Fault: wire.MCPFaultStdioHang}}, false},
		{"server died before executing", []wire.MCPEvent{call("4"), exit("4", wire.MCPFaultStdioExitBeforeExecute)}, true},
		{"server died after executing", []wire.MCPEvent{call("4"), exit("4", wire.MCPFaultStdioExitAfterExecute)}, true},
		{"server died after answering", []wire.MCPEvent{call("4"), exit("4", wire.MCPFaultStdioExitAfterAnswer)}, false},
		{"answered, then the hung server killed, another call open", []wire.MCPEvent{call("4"), result("4"), gone("4"), call("5")}, false},
		{"the id again on a respawned server", []wire.MCPEvent{call("4"), exit("4", wire.MCPFaultStdioExitBeforeExecute), call("4")}, false},
		{"the id again, answered", []wire.MCPEvent{call("4"), exit("4", wire.MCPFaultStdioExitBeforeExecute), call("4"), result("4")}, true},
		{"an end of another call", []wire.MCPEvent{call("1"), result("2")}, false},
	} {
		t.Run(tt.name, func(t *testing.T) {
			if got := ended(tt.evs); got != tt.want {
				t.Errorf("ended = %v, want %v", got, tt.want)
			}
		})
	}
}

// TestReplacedEnded: settle waits for every ledger-stdio process that a
// later spawn replaced to report its end; the latest may serve on.
func TestReplacedEnded(t *testing.T) {
	spawn := func(pid string) wire.MCPEvent { return wire.MCPEvent{Kind: wire.MCPSpawn, PID: pid} }
	exit := func(pid string) wire.MCPEvent {
		return wire.MCPEvent{Kind: wire.MCPExit, PID: pid, End: wire.MCPExitStdinClosed}
	}
	for _, tt := range []struct {
		name string
		evs  []wire.MCPEvent
		want bool
	}{
		{"over HTTP", nil, true},
		{"one process serving", []wire.MCPEvent{spawn("1")}, true},
		{"replaced, its end not reported", []wire.MCPEvent{spawn("1"), spawn("2")}, false},
		{"replaced and ended", []wire.MCPEvent{spawn("1"), exit("1"), spawn("2")}, true},
		{"replaced, ended after the next spawn", []wire.MCPEvent{spawn("1"), spawn("2"), exit("1")}, true},
		{"the latest ended too", []wire.MCPEvent{spawn("1"), exit("1"), spawn("2"), exit("2")}, true},
		{"another's end", []wire.MCPEvent{spawn("1"), exit("3"), spawn("2")}, false},
	} {
		t.Run(tt.name, func(t *testing.T) {
			if got := replacedEnded(tt.evs); got != tt.want {
				t.Errorf("replacedEnded = %v, want %v", got, tt.want)
			}
		})
	}
}
