package ledger

import (
	"net/http"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/replaycheck/replaycheck/internal/wire"
)

// TestStdioCallAfterItsEnd: a tools/call a ledger-stdio process wrote on
// its session as it closed it, which the ledger takes after the DELETE, is
// refused (unknown session), never runs, and is recorded as unforwarded
// with the process's pid: the process counted it as forwarded, so only the
// ledger can name it.
func TestStdioCallAfterItsEnd(t *testing.T) {
	const token = "rcstdiolate1"
	s, _ := newLedger(t, Config{})
	url := ownAddress(t, s, token)
	ctx, cancel := contextT()
	defer cancel()
	c := mcp.NewClient(&mcp.Implementation{Name: "stdio-test", Version: "1"}, nil)
	cs, err := c.Connect(ctx, &mcp.StreamableClientTransport{Endpoint: url, HTTPClient: &http.Client{Transport: endTransport{pid: "35", end: string(wire.MCPExitStdinClosed)}}}, nil)
	if err != nil {
		t.Fatal(err)
	}
	session := cs.ID()
	if err := cs.Close(); err != nil {
		t.Fatal(err)
	}
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, url, strings.NewReader(`{"jsonrpc":"2.0","id":2,"method":"tools/call","params":{"name":"commit_write","arguments":{"entry":"late `+token+`"}}}`))
	if err != nil {
		t.Fatal(err)
	}
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Accept", "application/json, text/event-stream")
	req.Header.Set("Mcp-Session-Id", session)
	req.Header.Set("Mcp-Protocol-Version", cs.InitializeResult().ProtocolVersion)
	req.Header.Set(StdioSpawnHeader, "35")
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusNotFound {
		t.Errorf("a call on the ended session: %s, want 404", resp.Status)
	}
	if c := s.Counts(token); c.CallsTotal() != 0 || c.Writes != 0 {
		t.Errorf("counts = %+v, want no call, no write", c)
	}
	var got []wire.MCPEvent
	for _, e := range s.Events(token) {
		if e.Kind == wire.MCPUnforwarded {
			got = append(got, wire.MCPEvent{Kind: e.Kind, Tool: e.Tool, PID: e.PID})
		}
	}
	want := []wire.MCPEvent{{Kind: wire.MCPUnforwarded, Tool: ToolCommitWrite, PID: "35"}}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("unforwarded events (-want +got):\n%s", diff)
	}
}
