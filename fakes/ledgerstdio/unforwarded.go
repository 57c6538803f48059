package ledgerstdio

import (
	"bytes"
	"context"
	"encoding/json"
	"net/http"
	"net/http/httptrace"
	"slices"
	"sync"
	"sync/atomic"

	"github.com/modelcontextprotocol/go-sdk/jsonrpc"

	"github.com/replaycheck/replaycheck/fakes/ledger"
)

// unforwarded are the tools/calls the process read from its client and
// never sent to the ledger: the client gave them up first (it cancelled the
// call, or closed stdin, which cancels the calls in flight and those not yet
// dispatched), or the process could not write them out. A call is counted
// as read when its line is read from stdin (readCall), before the stdio
// server dispatches it, so a call the server never hands to its tool is
// known too; it is forwarded once a request carrying it was written to the
// ledger's connection (track). The process names the difference on the
// DELETE that closes its ledger session (ledger.StdioUnforwardedHeader), so
// the run knows the target sent a call that the harness's own stdio server
// did not deliver. Its methods are safe for concurrent use.
type unforwarded struct {
	mu        sync.Mutex
	read      map[string]int // tools/calls read from the client, by tool
	forwarded map[string]int // of them, those sent to the ledger
}

// readCall notes a tools/call of tool read from the client.
func (u *unforwarded) readCall(tool string) {
	u.mu.Lock()
	defer u.mu.Unlock()
	if u.read == nil {
		u.read = map[string]int{}
	}
	u.read[tool]++
}

// track returns ctx, on which the call of tool is forwarded, and a func to
// call with the forward's error: it notes the call as forwarded when it was
// answered or a request carrying it was written to the ledger's connection
// (even in part or with an error: it may have reached the ledger).
func (u *unforwarded) track(ctx context.Context, tool string) (context.Context, func(error)) {
	var wrote atomic.Bool
	tctx := httptrace.WithClientTrace(ctx, &httptrace.ClientTrace{
		WroteRequest: func(httptrace.WroteRequestInfo) { wrote.Store(true) },
	})
	return tctx, func(err error) {
		if err != nil && !wrote.Load() {
			return
		}
		u.mu.Lock()
		defer u.mu.Unlock()
		if u.forwarded == nil {
			u.forwarded = map[string]int{}
		}
		u.forwarded[tool]++
	}
}

// name sets ledger.StdioUnforwardedHeader on h, one value per call read
// and not forwarded, in the order of the tools' names.
func (u *unforwarded) name(h http.Header) {
	u.mu.Lock()
	defer u.mu.Unlock()
	tools := make([]string, 0, len(u.read))
	for t := range u.read {
		tools = append(tools, t)
	}
	slices.Sort(tools)
	for _, t := range tools {
		for range u.read[t] - u.forwarded[t] {
			h.Add(ledger.StdioUnforwardedHeader, t)
		}
	}
}

// callLines finds the tools/calls in what the stdio server reads from
// stdin, newline-delimited JSON-RPC messages as MCP's stdio transport frames
// them, and hands each one's tool name to call as its line is read. It is
// used by one reader at a time.
type callLines struct {
	call    func(tool string)
	partial []byte // the start of a line not read to its end
}

// write scans b, the next bytes read from stdin.
func (c *callLines) write(b []byte) {
	for {
		i := bytes.IndexByte(b, '\n')
		if i < 0 {
			c.partial = append(c.partial, b...)
			return
		}
		line := b[:i]
		if len(c.partial) > 0 {
			line = append(c.partial, line...)
			c.partial = c.partial[:0]
		}
		c.scan(line)
		b = b[i+1:]
	}
}

// end scans the last line, which stdin ended without a newline.
func (c *callLines) end() {
	c.scan(c.partial)
	c.partial = nil
}

// scan hands line's tool to call when line is a tools/call request.
func (c *callLines) scan(line []byte) {
	if !bytes.Contains(line, []byte(`"tools/call"`)) {
		return
	}
	m, err := jsonrpc.DecodeMessage(bytes.TrimSpace(line))
	if err != nil {
		return // the server answers it as malformed; it is no call
	}
	req, ok := m.(*jsonrpc.Request)
	if !ok || !req.IsCall() || req.Method != "tools/call" {
		return
	}
	var params struct {
		Name string `json:"name"`
	}
	if json.Unmarshal(req.Params, &params) == nil && params.Name != "" {
		c.call(params.Name)
	}
}
