package ledger

import (
	"encoding/json"
	"fmt"
	"log/slog"
	"net/http"
	"slices"

	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/replaycheck/replaycheck/internal/wire"
)

// The two protocol generations are served by two go-sdk Streamable HTTP
// handlers over the one mcp.Server (the same tools, middleware and counts):
// a stateful one for initialize and the sessions it opens (2025-11-25 and
// older), and a stateless one for the self-describing requests of
// 2026-07-28 (server/discover, a request whose Mcp-Protocol-Version header
// or _meta protocol version is 2026-07-28 or later). go-sdk v1.8.0 serves
// 2026-07-28 only on a handler with StreamableHTTPOptions.Stateless set,
// and a stateless handler has no sessions, so a current server that speaks
// both needs both; the wrapper (ServeHTTP) picks one per request.

// metaProtocolVersion is the _meta key of a request's protocol version
// (SEP-2575).
const metaProtocolVersion = "io.modelcontextprotocol/protocolVersion"

// methodDiscover is the SEP-2575 request a 2026-07-28 client starts with.
const methodDiscover = "server/discover"

// generations are the handlers a Server serves with, chosen by Config:
// either may be nil when the configuration serves only the other.
type generations struct {
	stateful  http.Handler // initialize and sessions (2025-11-25 and older)
	stateless http.Handler // self-describing requests (2026-07-28), or all requests with Config.Stateless
	// pin is Config.Protocol: "" negotiates.
	pin wire.MCPProtocol
	// legacyStateless is Config.Stateless: the stateless handler serves
	// every request, of every version, without sessions.
	legacyStateless bool
}

// checkProtocol reports whether p is a version Config.Protocol accepts:
// none, or one of wire.MCPProtocols.
func checkProtocol(p wire.MCPProtocol) error {
	if p == "" || slices.Contains(wire.MCPProtocols(), p) {
		return nil
	}
	return fmt.Errorf("ledger: protocol %q: want one of %v, or none to negotiate", p, wire.MCPProtocols())
}

// SupportedVersions returns the mcp.ServerOptions.SupportedProtocolVersions
// of a server pinned to pin (wire.MCPProtocol.Served): nil (all the SDK
// knows) to negotiate.
func SupportedVersions(pin wire.MCPProtocol) []string {
	if pin == "" {
		return nil
	}
	var out []string
	for _, v := range pin.Served() {
		out = append(out, string(v))
	}
	return out
}

// newGenerations builds the handlers cfg asks for over server.
func newGenerations(server *mcp.Server, cfg Config, opts mcp.StreamableHTTPOptions) generations {
	g := generations{pin: cfg.Protocol, legacyStateless: cfg.Stateless}
	serve := func(stateless bool) http.Handler {
		o := opts
		o.Stateless = stateless
		// A handler's context ends with its request only when this is set
		// (go-sdk v1.8.0): what a closed 2026-07-28 stream must mean.
		o.PropagateRequestCancellation = true
		return mcp.NewStreamableHTTPHandler(func(*http.Request) *mcp.Server { return server }, &o)
	}
	if cfg.Stateless || cfg.Protocol == "" || cfg.Protocol.Stateless() {
		g.stateless = serve(true)
	}
	if !cfg.Stateless && !cfg.Protocol.Stateless() {
		g.stateful = serve(false)
	}
	return g
}

// route returns the handler that serves r, whose POST body holds msgs (nil
// for a request without one), and whether it is the stateless one.
func (g generations) route(r *http.Request, msgs []jsonrpc.Message) (http.Handler, bool) {
	switch {
	case g.stateful == nil:
		return g.stateless, true
	case g.stateless == nil:
		return g.stateful, false
	case r.Header.Get(sessionIDHeader) == "" && !hasStdioHeader(r.Header) && speaksStateless(r.Header, msgs):
		return g.stateless, true
	}
	return g.stateful, false
}

// hasStdioHeader reports whether h comes from a ledger-stdio process
// (StdioSpawnHeader). Its link to the ledger is a session whatever its
// client speaks: the process's spawn, its end and the call it dies with are
// its session's, so its server/discover is refused (-32022) and it
// initializes.
func hasStdioHeader(h http.Header) bool {
	_, ok := h[StdioSpawnHeader]
	return ok
}

// speaksStateless reports whether a request without a session speaks the
// self-describing protocol (SEP-2575): its Mcp-Protocol-Version header
// names 2026-07-28 or later, or one of its messages (msgs, the POST body)
// is a server/discover or carries a _meta protocol version.
func speaksStateless(h http.Header, msgs []jsonrpc.Message) bool {
	if v := h.Get(protocolVersionHeader); v != "" && wire.MCPProtocol(v).Stateless() {
		return true
	}
	for _, m := range msgs {
		if req, ok := m.(*jsonrpc.Request); ok && (req.Method == methodDiscover || metaProtocol(req) != "") {
			return true
		}
	}
	return false
}

// metaProtocol returns the protocol version req's _meta names, "" when none.
func metaProtocol(req *jsonrpc.Request) wire.MCPProtocol {
	var params struct {
		Meta map[string]any `json:"_meta"`
	}
	if json.Unmarshal(req.Params, &params) != nil {
		return ""
	}
	v, _ := params.Meta[metaProtocolVersion].(string)
	return wire.MCPProtocol(v)
}

// refusesInitialize reports whether the configuration answers initialize as
// a server of 2026-07-28 alone does (pinned to it): the method does not
// exist there.
func (g generations) refusesInitialize() bool { return g.pin.Stateless() }

// negotiate returns the version the SDK answers an initialize asking for
// requested with (go-sdk v1.8.0 negotiatedVersion): requested when it is
// a session version the ledger serves (wire.MCPProtocol.Served), else the
// newest session version it serves. TestNegotiatedProtocolRecorded holds
// it to what the SDK answers.
func (g generations) negotiate(requested string) wire.MCPProtocol {
	served := g.pin.Served()
	if p := wire.MCPProtocol(requested); slices.Contains(served, p) && !p.Stateless() {
		return p
	}
	for _, p := range served {
		if !p.Stateless() {
			return p
		}
	}
	return g.pin
}

// requestProtocol returns the protocol version a POST (its messages msgs)
// is served at, as far as the ledger can tell before the SDK answers: an
// initialize's negotiated version (negotiate), a session's (session, ""
// when the request has none), or the version the request names in its
// Mcp-Protocol-Version header or _meta. "" when it names none.
func (s *Server) requestProtocol(h http.Header, session string, msgs []jsonrpc.Message) wire.MCPProtocol {
	for _, m := range msgs {
		req, ok := m.(*jsonrpc.Request)
		if !ok {
			continue
		}
		if req.Method == MethodInitialize && session == "" {
			var params struct {
				ProtocolVersion string `json:"protocolVersion"`
			}
			_ = json.Unmarshal(req.Params, &params) // a bad initialize is the SDK's to refuse
			return s.gen.negotiate(params.ProtocolVersion)
		}
		if p := metaProtocol(req); p != "" {
			return s.gen.served(p)
		}
	}
	if session != "" {
		s.mu.Lock()
		p, ok := s.protocols[session]
		s.mu.Unlock()
		if ok {
			return p
		}
	}
	return s.gen.served(wire.MCPProtocol(h.Get(protocolVersionHeader)))
}

// served returns p when it is a version the ledger serves
// (wire.MCPProtocol.Served of the pin), else "": a request at a version
// the ledger refuses was not served at it.
func (g generations) served(p wire.MCPProtocol) wire.MCPProtocol {
	if !slices.Contains(g.pin.Served(), p) {
		return ""
	}
	return p
}

// negotiated records the version the session ss was initialized with (res,
// the SDK's answer), for the session's later requests.
func (s *Server) negotiated(ss *mcp.ServerSession, res mcp.Result) {
	ir, ok := res.(*mcp.InitializeResult)
	if !ok || ir == nil || ss.ID() == "" {
		return
	}
	s.mu.Lock()
	s.protocols[ss.ID()] = wire.MCPProtocol(ir.ProtocolVersion)
	s.mu.Unlock()
}

// refuseRemoved answers req, a call of a method the protocol it speaks does
// not have, as a 2026-07-28 server does: HTTP 404 and a JSON-RPC "method
// not found" (the conformance suite's
// sep-2575-http-server-method-not-found-404 checks).
func (s *Server) refuseRemoved(w http.ResponseWriter, req *jsonrpc.Request) {
	s.methodNotFound(w, req, http.StatusNotFound)
}

// serverOptions are the options of the ledger's go-sdk server for cfg: the
// versions it may negotiate (SupportedVersions of the pin), and, for the ledger's own
// tools, the prompts capability. go-sdk v1.8.0 answers prompts/list (an
// empty list) whether or not a server declares prompts, and a server that
// answers it must declare them (the conformance suite's
// sep-2575-server-declares-prompts-in-discover; sep-2549's caching checks
// want the answer), so the ledger declares prompts and has none. A
// forwarder declares what its server declares.
func serverOptions(cfg Config, log *slog.Logger) *mcp.ServerOptions {
	return &mcp.ServerOptions{Logger: log, SupportedProtocolVersions: SupportedVersions(cfg.Protocol), HasPrompts: cfg.Forward == nil}
}
