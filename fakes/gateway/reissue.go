package gateway

import (
	"context"
	"fmt"
	"log/slog"
	"maps"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/replaycheck/replaycheck/internal/wire"
)

// protocol returns the MCP protocol version s negotiated: 2026-07-28 when
// the server answered server/discover, the initialize result's otherwise.
func (s *mcpSession) protocol() wire.MCPProtocol {
	res := s.cs.InitializeResult()
	if res == nil {
		return ""
	}
	return wire.MCPProtocol(res.ProtocolVersion)
}

// reissueKeySuffix marks the idempotency key MCPReissueWithoutKey gives a
// re-issued keyed call: a key of the request, not of the action, so the
// server cannot tell the re-issue from a new write.
const reissueKeySuffix = "-reissue"

// reissue is the 2026-07-28 path of a tools/call whose response stream broke
// (err, a transport failure) on s, a session of a stateless protocol: the
// request is lost, and the specification asks the client to re-issue it as a
// new request with a new id. Guarded, only a keyed call is re-issued, once,
// with the same idempotency key (the server answers a second call from the
// first); a non-idempotent call is held, and reissue returns err, so the
// model is told the outcome is unknown. With MCPReissueWithoutKey every call
// is re-issued, a keyed one with a new key. held reports whether a call was
// held.
func (g *Gateway) reissue(ctx context.Context, log *slog.Logger, s *mcpSession, params *mcp.CallToolParams, keyed bool, err error) (res *mcp.CallToolResult, _ error, held bool) {
	switch {
	case g.cfg.Bugs.Has(MCPReissueWithoutKey):
		p := *params
		if keyed {
			p.Arguments = withNewKey(params.Arguments)
		}
		log.Warn("mcp response stream broke; re-issuing the call without its idempotency key", "protocol", s.protocol(), "err", err)
		res, err = g.callTool(ctx, s, &p)
		return res, err, false
	case keyed:
		log.Info("mcp response stream broke; re-issuing the keyed call with the same idempotency key", "protocol", s.protocol(), "err", err)
		res, err = g.callTool(ctx, s, params)
		return res, err, false
	}
	log.Warn("mcp response stream broke; holding the non-idempotent call instead of re-issuing it", "protocol", s.protocol(), "err", err)
	return nil, err, true
}

// withNewKey returns a copy of args, the arguments of a keyed call, whose
// idempotency key is replaced by one of the re-issued request's own.
func withNewKey(args any) any {
	m, ok := args.(map[string]any)
	if !ok {
		return args
	}
	out := maps.Clone(m)
	out[wire.KeyArgument] = fmt.Sprint(m[wire.KeyArgument]) + reissueKeySuffix
	return out
}
