package ledgerstdio

import (
	"context"
	"encoding/json"
	"fmt"
	"slices"
	"sync/atomic"

	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/replaycheck/replaycheck/fakes/ledger"
	"github.com/replaycheck/replaycheck/internal/wire"
)

// The process serves its stdio client both MCP protocol generations, as the
// go-sdk server does over stdio: a 2026-07-28 client's server/discover and
// self-describing requests (SEP-2575), and an older client's initialize
// (the server answers the newest version before 2026-07-28 it asks for or
// supports). When the ledger pins a version (ledger.StdioPinHeader, from
// ledger.Config.Protocol), the process serves that version only: a
// 2026-07-28 pin refuses initialize, an older pin refuses discover (the
// client then initializes). Each call it forwards carries the version its
// client used for it (ledger.StdioProtocolHeader), which the ledger records
// as the call's.

// protocolKey is the context key of the version a forwarded call's client
// used: forwardCall sets it on the call to the ledger, the spawnAnnouncer
// sends it as ledger.StdioProtocolHeader.
type protocolKey struct{}

// withProtocol returns ctx carrying p for the spawnAnnouncer.
func withProtocol(ctx context.Context, p wire.MCPProtocol) context.Context {
	if p == "" {
		return ctx
	}
	return context.WithValue(ctx, protocolKey{}, p)
}

// protocolOf returns the version withProtocol put in ctx, "" when none.
func protocolOf(ctx context.Context) wire.MCPProtocol {
	p, _ := ctx.Value(protocolKey{}).(wire.MCPProtocol)
	return p
}

// serverVersions returns the protocol versions the stdio server serves for
// pin ("" or one of wire.MCPProtocols), ledger.SupportedVersions: all the
// SDK's when there is none; an error for a version replaycheck does not
// speak.
func serverVersions(pin wire.MCPProtocol) ([]string, error) {
	if pin != "" && (!slices.Contains(wire.MCPProtocols(), pin) || !slices.Contains(mcp.SupportedProtocolVersions(), string(pin))) {
		return nil, fmt.Errorf("ledger-stdio: the ledger pins MCP protocol %q, which this ledger-stdio does not speak (it speaks %v)", pin, wire.MCPProtocols())
	}
	return ledger.SupportedVersions(pin), nil
}

// negotiation is what the stdio server negotiated with its client: the
// version it answered initialize with (none for a 2026-07-28 client, whose
// requests each carry theirs), and the pin it enforces. Its methods are
// safe for concurrent use.
type negotiation struct {
	pin         wire.MCPProtocol
	initialized atomic.Pointer[wire.MCPProtocol]
}

// middleware is the stdio server's receiving middleware: it refuses an
// initialize when the pin is 2026-07-28 or later (the SDK would answer it
// with an older version), and notes the version an initialize was answered
// with.
func (n *negotiation) middleware(next mcp.MethodHandler) mcp.MethodHandler {
	return func(ctx context.Context, method string, req mcp.Request) (mcp.Result, error) {
		if method == "initialize" && n.pin.Stateless() {
			data, err := json.Marshal(mcp.UnsupportedProtocolVersionData{Supported: []string{string(n.pin)}})
			if err != nil {
				return nil, fmt.Errorf("ledger-stdio: refusing initialize: %w", err)
			}
			return nil, &jsonrpc.Error{
				Code:    mcp.CodeUnsupportedProtocolVersion,
				Message: fmt.Sprintf("this server speaks MCP %s only (server/discover, no initialize)", n.pin),
				Data:    data,
			}
		}
		res, err := next(ctx, method, req)
		if r, ok := res.(*mcp.InitializeResult); ok && err == nil {
			v := wire.MCPProtocol(r.ProtocolVersion)
			n.initialized.Store(&v)
		}
		return res, err
	}
}

// of returns the version the client used for req: the one its _meta
// carries (a 2026-07-28 request describes itself), else the one its
// initialize was answered with; "" when neither is known.
func (n *negotiation) of(req *mcp.CallToolRequest) wire.MCPProtocol {
	if req.Params != nil {
		if v, ok := req.Params.Meta[mcp.MetaKeyProtocolVersion].(string); ok && v != "" {
			return wire.MCPProtocol(v)
		}
	}
	if p := n.initialized.Load(); p != nil {
		return *p
	}
	return ""
}
