package report

import (
	"bytes"
	"encoding/json"
	"strings"
	"testing"

	"github.com/replaycheck/replaycheck/internal/harness/rules"
	"github.com/replaycheck/replaycheck/internal/wire"
)

// TestSpawnsAndExits checks that the stdio servers a run started and those
// that ended are in the JSON counts, and in the table and Markdown as
// columns of their own once a run spawned one.
func TestSpawnsAndExits(t *testing.T) {
	h := seedRun("builtin:guarded", 1)
	h.MCP = append(h.MCP, wire.MCPEvent{Kind: wire.MCPSpawn, PID: "10"}, wire.MCPEvent{Kind: wire.MCPExit, PID: "10", End: wire.MCPExitFault, Fault: wire.MCPFaultStdioExitAfterExecute},
		wire.MCPEvent{Kind: wire.MCPSpawn, PID: "11"})
	s := Suite{Results: []rules.Result{rules.Evaluate(h)}, Wall: ms(10)}

	var js bytes.Buffer
	if err := WriteJSON(&js, s); err != nil {
		t.Fatal(err)
	}
	var got struct {
		Results []struct{ Counts struct{ Spawns, Exits int } }
	}
	if err := json.Unmarshal(js.Bytes(), &got); err != nil || got.Results[0].Counts.Spawns != 2 || got.Results[0].Counts.Exits != 1 {
		t.Errorf("JSON counts %+v (%v), want 2 spawns and 1 exit", got, err)
	}

	var table, md bytes.Buffer
	if err := WriteTable(&table, s, TableOptions{}); err != nil {
		t.Fatal(err)
	}
	if err := WriteMarkdown(&md, s); err != nil {
		t.Fatal(err)
	}
	for name, want := range map[string][]string{
		table.String(): {"│ MCP CALLS │ SPAWNS │ EXITS │ FAILED", "│ 1         │ 2      │ 1     │"},
		md.String():    {"| MCP calls | Spawns | Exits | Failed checks |", "| 1 | 2 | 1 |"},
	} {
		for _, w := range want {
			if !strings.Contains(name, w) {
				t.Errorf("report lacks %q:\n%s", w, name)
			}
		}
	}

	var plain bytes.Buffer
	if err := WriteTable(&plain, Suite{Results: []rules.Result{rules.Evaluate(seedRun("builtin:guarded", 1))}}, TableOptions{}); err != nil {
		t.Fatal(err)
	}
	if strings.Contains(plain.String(), "SPAWNS") {
		t.Errorf("a table of HTTP runs has a SPAWNS column:\n%s", plain.String())
	}
}
