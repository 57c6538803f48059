package report

import (
	"bytes"
	"strings"
	"testing"

	"github.com/replaycheck/replaycheck/internal/harness/rules"
	"github.com/replaycheck/replaycheck/internal/wire"
)

// TestUnknownCallsShown: a forwarded call whose answer never came back is
// counted in the result and shown beside the MCP calls in the table, the
// pass line and the Markdown summary.
func TestUnknownCallsShown(t *testing.T) {
	h := seedRun("builtin:guarded", 1)
	var call wire.MCPEvent
	for _, e := range h.MCP {
		if e.Kind == wire.MCPCall {
			call = e
		}
	}
	h.MCP = append(h.MCP, wire.MCPEvent{At: call.At, Kind: wire.MCPFault, Tool: call.Tool, RequestID: call.RequestID, Fault: wire.MCPFaultForwardUnknown})
	r := rules.Evaluate(h)
	if r.Counts.Unknown != 1 {
		t.Fatalf("counts %+v: want 1 unknown", r.Counts)
	}
	s := Suite{Wall: ms(40), Results: []rules.Result{r}}
	var table, md bytes.Buffer
	if err := WriteTable(&table, s, TableOptions{Verbose: true}); err != nil {
		t.Fatal(err)
	}
	if err := WriteMarkdown(&md, s); err != nil {
		t.Fatal(err)
	}
	for name, out := range map[string]string{"table": table.String(), "markdown": md.String()} {
		if !strings.Contains(out, "1 (1 unknown)") {
			t.Errorf("%s does not show the unknown call beside the MCP calls:\n%s", name, out)
		}
	}
}
