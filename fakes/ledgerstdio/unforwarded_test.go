package ledgerstdio

import (
	"context"
	"net/http"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/replaycheck/replaycheck/fakes/ledger"
	"github.com/replaycheck/replaycheck/internal/wire"
)

// TestLedgerStdioNamesCallsGivenUpBeforeForwarding: a call whose client gave
// it up before the process sent it to the ledger (its context ended first,
// as the client's notifications/cancelled or its closing stdin end it) runs
// nothing, and the process's closing DELETE names it: the ledger records an
// unforwarded event with the process's pid and no call. A call forwarded
// is not named.
func TestLedgerStdioNamesCallsGivenUpBeforeForwarding(t *testing.T) {
	const token = "rc0stdio0unf"
	l, url, _ := stdioLedger(t, token)
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	announcer := &spawnAnnouncer{pid: "4711", next: http.DefaultTransport}
	relay := &toolRelay{limit: 10 * time.Second, unforwarded: &announcer.unforwarded}
	session, _, err := connectLedger(ctx, url, announcer, relay.limit, relay, "test")
	if err != nil {
		t.Fatal(err)
	}
	forward := forwardCall(session, &negotiation{}, relay.unforwarded)
	call := func(ctx context.Context, entry string) error {
		_, err := forward(ctx, &mcp.CallToolRequest{Params: &mcp.CallToolParamsRaw{
			Name:      ledger.ToolCommitWrite,
			Arguments: []byte(`{"entry":"` + entry + `"}`),
		}})
		return err
	}
	if err := call(ctx, "forwarded"); err != nil {
		t.Fatalf("a live call: %v", err)
	}
	gaveUp, giveUp := context.WithCancel(ctx)
	giveUp()
	if err := call(gaveUp, "given-up"); err == nil {
		t.Fatal("a call given up before it was forwarded succeeded")
	}
	end := wire.MCPExitStdinClosed
	announcer.end.Store(&end)
	if err := session.Close(); err != nil {
		t.Fatal(err)
	}

	c := waitLedger(t, l, token, func(c wire.MCPCounts) bool { return c.Exits == 1 })
	if c.CallsTotal() != 1 || c.Writes != 1 {
		t.Errorf("ledger counts = %+v, want the forwarded call only: 1 call, 1 write", c)
	}
	var got []wire.MCPEvent
	for _, e := range l.Events(token) {
		if e.Kind == wire.MCPUnforwarded {
			got = append(got, wire.MCPEvent{Kind: e.Kind, Tool: e.Tool, PID: e.PID})
		}
	}
	want := []wire.MCPEvent{{Kind: wire.MCPUnforwarded, Tool: ledger.ToolCommitWrite, PID: "4711"}}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("unforwarded events (-want +got):\n%s", diff)
	}
}
