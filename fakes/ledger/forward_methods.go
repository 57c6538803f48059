package ledger

import (
	"context"
	"maps"

	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// forwardMethods is a forwarding ledger's receiving middleware for what the
// server offers besides its tools: resources (list, templates/list, read,
// subscribe, unsubscribe), prompts (list, get), completion/complete and
// logging/setLevel are forwarded to the server and answered with its
// answer, or its JSON-RPC error, unchanged; a 2026-07-28 client's
// subscriptions/listen relays the server's notifications it asks for (see
// listener); initialize and server/discover
// answer with the server's capabilities instead of the ledger's. tools/list
// and tools/call stay the ledger's (they are the faults' points), as do ping
// and the session's lifecycle. Each forwarded request is in flight (see
// relays) while the server answers it, so what the server sends meanwhile
// reaches the session that asked. A cassette (no connection) forwards
// nothing here.
func (s *Server) forwardMethods(next mcp.MethodHandler) mcp.MethodHandler {
	return func(ctx context.Context, method string, req mcp.Request) (mcp.Result, error) {
		if s.fwd == nil || s.fwd.session == nil {
			return next(ctx, method, req)
		}
		up := s.fwd.session
		switch r := req.(type) {
		case *mcp.ServerRequest[*mcp.InitializeParams], *mcp.ServerRequest[*mcp.DiscoverParams]:
			res, err := next(ctx, method, req)
			return s.fwd.withCapabilities(res), err
		case *mcp.ListResourcesRequest:
			return forwardRequest(ctx, s.fwd, r, r.Params, up.ListResources)
		case *mcp.ListResourceTemplatesRequest:
			return forwardRequest(ctx, s.fwd, r, r.Params, up.ListResourceTemplates)
		case *mcp.ReadResourceRequest:
			return forwardRequest(ctx, s.fwd, r, r.Params, up.ReadResource)
		case *mcp.ListPromptsRequest:
			return forwardRequest(ctx, s.fwd, r, r.Params, up.ListPrompts)
		case *mcp.GetPromptRequest:
			return forwardRequest(ctx, s.fwd, r, r.Params, up.GetPrompt)
		case *mcp.CompleteRequest:
			return forwardRequest(ctx, s.fwd, r, r.Params, up.Complete)
		case *mcp.SubscribeRequest:
			res, err := forwardRequest(ctx, s.fwd, r, r.Params, empty(up.Subscribe))
			if err == nil {
				s.fwd.relay.subscribe(r.Session, r.Params.URI)
			}
			return res, err
		case *mcp.UnsubscribeRequest:
			res, err := forwardRequest(ctx, s.fwd, r, r.Params, empty(up.Unsubscribe))
			if err == nil {
				s.fwd.relay.unsubscribe(r.Session, r.Params.URI)
			}
			return res, err
		case *mcp.SubscriptionsListenRequest:
			return s.fwd.listen(ctx, method, r, next)
		case *mcp.ServerRequest[*mcp.SetLoggingLevelParams]:
			res, err := forwardRequest(ctx, s.fwd, r, r.Params, empty(up.SetLoggingLevel))
			if err == nil {
				s.fwd.relay.levelled(r.Session)
			}
			return res, err
		}
		return next(ctx, method, req)
	}
}

// withCapabilities returns res, an initialize or server/discover result,
// with the server's capabilities in place of the ledger's; any other res
// as it is.
func (f *forwarder) withCapabilities(res mcp.Result) mcp.Result {
	caps := f.session.InitializeResult().Capabilities
	switch r := res.(type) {
	case *mcp.InitializeResult:
		answer := *r
		answer.Capabilities = caps
		return &answer
	case *mcp.DiscoverResult:
		answer := *r
		answer.Capabilities = caps
		return &answer
	}
	return res
}

// empty adapts a ClientSession method that answers nothing but an error to
// forwardRequest: its answer is the empty result.
func empty[P any](send func(context.Context, P) error) func(context.Context, P) (*mcp.ResultBase, error) {
	return func(ctx context.Context, params P) (*mcp.ResultBase, error) {
		if err := send(ctx, params); err != nil {
			return nil, err
		}
		return &mcp.ResultBase{}, nil
	}
}

// forwardRequest sends req's params to the server with send (a
// ClientSession method), with the _meta req carried but for the protocol
// keys the forwarder's own session sets (see upstreamMeta), while req is in
// flight; it returns the server's answer or error as they came.
func forwardRequest[T any, P interface {
	*T
	mcp.Params
}, R mcp.Result](ctx context.Context, f *forwarder, req mcp.Request, params P, send func(context.Context, P) (R, error)) (mcp.Result, error) {
	sent := P(new(T))
	if params != nil {
		*sent = *params
	}
	var meta mcp.Meta
	if params != nil {
		meta = params.GetMeta()
	}
	up, done := f.relay.begin(ctx, req.GetSession(), meta)
	defer done()
	sent.SetMeta(up)
	res, err := send(ctx, sent)
	if err != nil {
		return nil, err
	}
	return res, nil
}

// protocolMeta are the _meta keys of a 2026-07-28 request that describe the
// client's session with the forwarder (its version, identity and
// capabilities); the forwarder's own session with the server sets its
// own.
var protocolMeta = []string{mcp.MetaKeyProtocolVersion, mcp.MetaKeyClientInfo, mcp.MetaKeyClientCapabilities}

// upstreamMeta returns the _meta to send the server for a request that
// carried meta: meta without protocolMeta, its progress token (if any)
// replaced by token; nil when nothing is left.
func upstreamMeta(meta mcp.Meta, token int64) mcp.Meta {
	out := maps.Clone(meta)
	for _, k := range protocolMeta {
		delete(out, k)
	}
	if _, ok := out[progressTokenKey]; ok {
		out[progressTokenKey] = token
	}
	if len(out) == 0 {
		return nil
	}
	return out
}

// progressTokenKey is the _meta key of a request's progress token.
const progressTokenKey = "progressToken"
