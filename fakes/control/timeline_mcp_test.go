package control

import (
	"context"
	"net/http/httptest"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/replaycheck/replaycheck/fakes/ledger"
	"github.com/replaycheck/replaycheck/internal/wire"
)

// TestTimelineMCPEvents: the timeline of a run whose call an is_error
// fault answered serves the ledger's events with their typed fields (the
// fault on the fault event and on the result), each answer checked against
// openapi.yaml's MCPEvent by the rig's validator.
func TestTimelineMCPEvents(t *testing.T) {
	const tok = "rc0timeline1"
	r := newRig(t, "")
	if code := r.do(t, "POST", Prefix+"faults?run="+tok, "mcp: [{tool: commit_write, is_error: {}, times: once}]\n", nil, nil); code != 201 {
		t.Fatalf("arming: %d", code)
	}
	led := httptest.NewServer(r.led)
	t.Cleanup(led.Close)
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	cs, err := mcp.NewClient(&mcp.Implementation{Name: "timeline-test", Version: "1"}, nil).Connect(ctx, &mcp.StreamableClientTransport{Endpoint: led.URL}, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer cs.Close()
	res, err := cs.CallTool(ctx, &mcp.CallToolParams{Name: ledger.ToolCommitWrite, Arguments: map[string]any{"entry": "alpha-" + tok}})
	if err != nil || !res.IsError {
		t.Fatalf("call: %v, %v; want an isError result", res, err)
	}
	var tl struct {
		Events []Event `json:"events"`
	}
	if code := r.do(t, "GET", Prefix+"timeline?run="+tok, "", nil, &tl); code != 200 {
		t.Fatalf("timeline: %d", code)
	}
	var faults []string
	for _, e := range tl.Events {
		if e.MCP != nil && (e.MCP.Kind == wire.MCPFault || e.MCP.Kind == wire.MCPResult) {
			faults = append(faults, string(e.MCP.Kind)+" "+e.MCP.Fault)
		}
	}
	if len(faults) != 2 || faults[0] != "fault is_error" || faults[1] != "result is_error" {
		t.Errorf("fault and result events %q, want both with fault is_error", faults)
	}
}
