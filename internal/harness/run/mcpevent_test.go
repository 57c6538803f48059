package run

import (
	"encoding/json"
	"slices"
	"strings"
	"testing"

	"github.com/replaycheck/replaycheck/internal/wire"
)

// TestStdioHistoryTypedFields runs a stdio scenario whose server exits after
// executing and reads the typed MCP fields of its history: each exit carries
// the PID of a spawn in the same field, the exit a fault made says End fault
// and names the fault, session steps have their method, and the history's
// JSON has no "detail".
func TestStdioHistoryTypedFields(t *testing.T) {
	hs := runSource(t, `
name: stdio server exits after executing
request: {endpoint: chat}
mcp: {transport: stdio}
faults:
  mcp: [{tool: commit_write, stdio_exit: {at: after_execute}, times: once}]
expect: {writes: 1}
`, "builtin:guarded", 1)
	h := hs[0]
	var spawned []string
	for _, e := range h.MCPOf(wire.MCPSpawn, "") {
		if e.PID == "" {
			t.Errorf("spawn %+v has no PID", e)
		}
		spawned = append(spawned, e.PID)
	}
	var faultExits int
	for _, e := range h.MCPOf(wire.MCPExit, "") {
		if !slices.Contains(spawned, e.PID) {
			t.Errorf("exit %+v: PID %q is no spawn's (%q)", e, e.PID, spawned)
		}
		if e.End == wire.MCPExitFault {
			faultExits++
			if e.Fault != wire.MCPFaultStdioExitAfterExecute || e.Tool != "commit_write" {
				t.Errorf("exit %+v: want the fault %s with the call in flight", e, wire.MCPFaultStdioExitAfterExecute)
			}
		}
	}
	if len(spawned) != 2 || faultExits != 1 {
		t.Errorf("%d spawns, %d exits by a fault; want 2 and 1:\n%+v", len(spawned), faultExits, h.MCP)
	}
	if !slices.ContainsFunc(h.MCP, func(e wire.MCPEvent) bool { return e.IsFault(wire.MCPFaultStdioExitAfterExecute) && e.PID != "" }) {
		t.Errorf("no fault event %s directed at a process: %+v", wire.MCPFaultStdioExitAfterExecute, h.MCP)
	}
	var methods []string
	for _, e := range h.MCPOf(wire.MCPSession, "") {
		methods = append(methods, e.Method)
	}
	if !slices.Contains(methods, "initialize") {
		t.Errorf("session methods %q lack initialize", methods)
	}
	b, err := json.Marshal(h)
	if err != nil {
		t.Fatal(err)
	}
	if strings.Contains(string(b), `"detail"`) {
		t.Errorf(`history JSON has "detail": %s`, b)
	}
}
