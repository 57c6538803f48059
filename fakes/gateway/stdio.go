package gateway

import (
	"context"
	"errors"
	"os"
	"os/exec"
	"time"

	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// stdioTerminate is how long closing a stdio server's session waits, after
// closing its stdin, for the process to exit before it is sent SIGTERM (and
// as long again before SIGKILL).
const stdioTerminate = 2 * time.Second

// pipeAtomic is the size up to which a write to a pipe is atomic (POSIX
// PIPE_BUF is at least 512; Linux's is 4096): such a write that fails put no
// byte in the pipe.
const pipeAtomic = 512

// stdioTransport spawns the MCP server cfg.MCPCommand names as a process
// and talks MCP with it over its stdin and stdout (mcp.CommandTransport).
// Each Connect starts a process of its own; closing the connection closes
// its stdin, waits stdioTerminate for it to exit, then signals it
// (SIGTERM, then SIGKILL) and reaps it. The connection marks on each call's
// context what became of the call's request (see stdioConn).
type stdioTransport struct {
	command []string
}

func (t stdioTransport) Connect(ctx context.Context) (mcp.Connection, error) {
	cmd := exec.Command(t.command[0], t.command[1:]...)
	cmd.Stderr = nil // the server's words are not the gateway's; /dev/null
	conn, err := (&mcp.CommandTransport{Command: cmd, TerminateDuration: stdioTerminate}).Connect(ctx)
	if err != nil {
		return nil, err
	}
	return stdioConn{Connection: conn}, nil
}

// stdioConn is a stdio server's connection that records, in the sendMark of
// a call's context, whether the call's request was written to the server's
// stdin, and starts the call's tool timeout (see toolTimer) once it was. The
// caller's context reaches Write: ClientSession.CallTool passes it through
// the SDK's jsonrpc2 Connection.Call to the transport's Write (go-sdk
// v1.8.0, internal/jsonrpc2 conn.go write).
type stdioConn struct{ mcp.Connection }

func (c stdioConn) Write(ctx context.Context, msg jsonrpc.Message) error {
	req, isCall := msg.(*jsonrpc.Request)
	isCall = isCall && req.IsCall()
	err := c.Connection.Write(ctx, msg)
	if !isCall {
		return err
	}
	if m, _ := ctx.Value(sendMarkKey{}).(*sendMark); m != nil && !unwritten(err, msg) {
		m.sent.Store(true)
	}
	if err == nil {
		if wrote, _ := ctx.Value(wroteKey{}).(func()); wrote != nil {
			wrote()
		}
	}
	return err
}

// unwritten reports whether a failed Write of msg provably put no byte of it
// on the server's stdin: the context ended before it (ioConn checks that
// first), the gateway had closed stdin, or the pipe refused a write too
// short to be split (the server's end was closed: it exited or closed its
// stdin). A longer message may have gone in part, and a part of a message
// ending in '}' may decode: that counts as written.
func unwritten(err error, msg jsonrpc.Message) bool {
	switch {
	case err == nil:
		return false
	case isContextErr(err), errors.Is(err, os.ErrClosed):
		return true
	}
	b, encErr := jsonrpc.EncodeMessage(msg)
	return encErr == nil && len(b)+1 <= pipeAtomic
}

// wroteKey is the context key of the func a stdio connection calls when it
// wrote a call's request: the stdio form of httptrace's WroteRequest.
type wroteKey struct{}
