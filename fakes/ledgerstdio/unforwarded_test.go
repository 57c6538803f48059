package ledgerstdio

import (
	"context"
	"encoding/json"
	"io"
	"net/http"
	"sync"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
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
		relay.unforwarded.readCall(ledger.ToolCommitWrite) // as stdin's reader notes it
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
	wantUnforwarded(t, l, token, "4711")
}

// TestLedgerStdioNamesCallsReadAsStdinCloses: a tools/call the process reads
// from stdin as its client closes the pipes (stdin ends right after the
// call; stdout fails on the first answer, the initialize's, which the
// server writes before it dispatches the call) is never handed to the tool,
// so it is never forwarded, and the process still names it: the ledger
// records an unforwarded event and no call.
func TestLedgerStdioNamesCallsReadAsStdinCloses(t *testing.T) {
	const token = "rc0stdio0eof"
	l, url, _ := stdioLedger(t, token)
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	serverIn, clientOut := io.Pipe()
	in := &endingReader{r: serverIn, ended: make(chan struct{})}
	done := make(chan error, 1)
	go func() {
		done <- Serve(ctx, &Options{URL: url, In: in, Out: &closedOut{closed: in.ended}, ErrOut: io.Discard, PID: 4712})
	}()
	var lines []byte
	for _, m := range []*jsonrpc.Request{
		request(t, 1, "initialize", &mcp.InitializeParams{ProtocolVersion: string(wire.MCPProtocol20251125), ClientInfo: &mcp.Implementation{Name: "test", Version: "1"}, Capabilities: &mcp.ClientCapabilities{}}),
		request(t, 2, "tools/call", &mcp.CallToolParams{Name: ledger.ToolCommitWrite, Arguments: map[string]any{"entry": "entry-" + token}}),
	} {
		b, err := jsonrpc.EncodeMessage(m)
		if err != nil {
			t.Fatal(err)
		}
		lines = append(append(lines, b...), '\n')
	}
	if _, err := clientOut.Write(lines); err != nil {
		t.Fatal(err)
	}
	_ = clientOut.Close()
	select {
	case err := <-done:
		if err != nil {
			t.Fatalf("Serve: %v", err)
		}
	case <-ctx.Done():
		t.Fatal("Serve did not return after its client closed the pipes")
	}

	c := waitLedger(t, l, token, func(c wire.MCPCounts) bool { return c.Exits == 1 })
	if c.CallsTotal() != 0 || c.Writes != 0 {
		t.Errorf("ledger counts = %+v, want no call, no write", c)
	}
	wantUnforwarded(t, l, token, "4712")
}

// wantUnforwarded checks that the ledger recorded one unforwarded
// commit_write of token's, by the process pid.
func wantUnforwarded(t *testing.T, l *ledger.Server, token, pid string) {
	t.Helper()
	var got []wire.MCPEvent
	for _, e := range l.Events(token) {
		if e.Kind == wire.MCPUnforwarded {
			got = append(got, wire.MCPEvent{Kind: e.Kind, Tool: e.Tool, PID: e.PID})
		}
	}
	want := []wire.MCPEvent{{Kind: wire.MCPUnforwarded, Tool: ledger.ToolCommitWrite, PID: pid}}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("unforwarded events (-want +got):\n%s", diff)
	}
}

// request is the JSON-RPC call method with id and params.
func request(t *testing.T, id int64, method string, params any) *jsonrpc.Request {
	t.Helper()
	raw, err := json.Marshal(params)
	if err != nil {
		t.Fatal(err)
	}
	rid, err := jsonrpc.MakeID(float64(id))
	if err != nil {
		t.Fatal(err)
	}
	return &jsonrpc.Request{ID: rid, Method: method, Params: raw}
}

// endingReader is stdin as a test's client writes it: ended is closed once
// a Read returned an error (the client closed it).
type endingReader struct {
	r     io.Reader
	once  sync.Once
	ended chan struct{}
}

func (e *endingReader) Read(p []byte) (int, error) {
	n, err := e.r.Read(p)
	if err != nil {
		e.once.Do(func() { close(e.ended) })
	}
	return n, err
}

// closedOut is stdout whose reader closed it with stdin: a Write waits for
// closed, then fails.
type closedOut struct{ closed <-chan struct{} }

func (o *closedOut) Write([]byte) (int, error) {
	<-o.closed
	return 0, io.ErrClosedPipe
}

// TestStdinNotesCallsAsRead: stdin hands each tools/call's tool to its
// call func as the call's line is read, whatever the reads' sizes, a last
// line without its newline included; other messages and lines that are not
// JSON-RPC are no calls.
func TestStdinNotesCallsAsRead(t *testing.T) {
	const input = `{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"commit_write","arguments":{"entry":"a"}}}` + "\n" +
		`{"jsonrpc":"2.0","method":"notifications/cancelled","params":{"requestId":1,"reason":"tools/call"}}` + "\n" +
		`not json "tools/call"` + "\n" +
		`{"jsonrpc":"2.0","id":2,"method":"ping"}` + "\r\n" +
		`{"jsonrpc":"2.0","id":3,"method":"tools/call","params":{"name":"read_ledger"}}`
	want := []string{ledger.ToolCommitWrite, ledger.ToolReadLedger}
	for size := 1; size <= len(input); size++ {
		var got []string
		in := newStdin(&chunkReader{s: input, n: size}, func(tool string) { got = append(got, tool) })
		if _, err := io.Copy(io.Discard, in); err != nil {
			t.Fatal(err)
		}
		if diff := cmp.Diff(want, got); diff != "" {
			t.Fatalf("reads of %d bytes: calls (-want +got):\n%s", size, diff)
		}
	}
}

// chunkReader reads s n bytes at a time.
type chunkReader struct {
	s string
	n int
}

func (c *chunkReader) Read(p []byte) (int, error) {
	if c.s == "" {
		return 0, io.EOF
	}
	n := copy(p[:min(len(p), c.n)], c.s)
	c.s = c.s[n:]
	return n, nil
}
