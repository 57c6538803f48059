package ledger

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"iter"
	"net/http"
	"reflect"

	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/replaycheck/replaycheck/internal/runtoken"
	"github.com/replaycheck/replaycheck/internal/wire"
)

// callState is where a call is in its life. Guarded by Server.mu.
type callState int

const (
	callInFlight   callState = iota
	callAnswered             // the answer was written to the client
	callCancelled            // the client gave up before the answer
	callRefused              // a refuser answered its POST in place of the SDK
	callDropped              // a cutter closed the connection before the answer
	callUnanswered           // the POST ended without an answer, the client still there
)

// call is one tools/call request the ledger received.
type call struct {
	token   string
	tool    string
	args    json.RawMessage
	id      jsonrpc.ID
	idText  string // JSON-RPC id as text
	inKey   inflightKey
	fired   []firedFault       // the faults that fired on it, in firing order
	state   callState          // guarded by Server.mu
	claimed bool               // a tool handler took it; guarded by Server.mu
	outcome string             // the fault that answered it in the tool's place (its result's Fault); guarded by Server.mu
	dedup   bool               // answered from an earlier call with its key; guarded by Server.mu
	gone    chan struct{}      // closed when the client gives up
	session *mcp.ServerSession // the session a tool handler ran it on; nil before
	// pid is the process id a ledger-stdio process announced on the POST
	// (StdioSpawnHeader); "" for a call that did not come from one.
	pid string
	// directive is the stdio fault the process carrying the call was told
	// to carry out, and effect what the process does (wire.StdioEffect, from
	// the MCP fault table), so what then becomes of the call; guarded by
	// Server.mu.
	directive string
	effect    wire.StdioEffect

	// protocol is the MCP protocol version the call was sent at (its
	// session's, or the stateless request's); "" when the ledger could not
	// tell.
	protocol wire.MCPProtocol
}

// inflightKey finds an unanswered call from a cancel notice: the session and
// the request id. Stateless calls have no session and are not registered.
type inflightKey struct {
	session string
	id      string // type-tagged request id
}

// post is one HTTP POST that carried tool calls.
type post struct {
	session   string // its Mcp-Session-Id; "" when stateless
	header    http.Header
	calls     []*call
	unclaimed int  // calls no tool handler took yet; guarded by Server.mu
	finished  bool // the POST is over; guarded by Server.mu
}

// receive counts one tools/call, sent at protocol version proto, and notes
// the faults that fire on it. The call belongs to owner, the run whose own
// address it arrived at, when set; else to the run token its arguments
// carry. pid is the process id of the
// ledger-stdio process that sent it, "" when none did: only then can the
// stdio kinds fire. proto is the protocol version the call was made at, ""
// when the ledger cannot tell.
func (s *Server) receive(owner, session, pid string, proto wire.MCPProtocol, req *jsonrpc.Request) *call {
	var params struct {
		Name      string          `json:"name"`
		Arguments json.RawMessage `json:"arguments"`
	}
	_ = json.Unmarshal(req.Params, &params) // a bad params object is the SDK's to refuse
	token := owner
	if token == "" {
		token = runtoken.Find(params.Arguments)
	}
	c := &call{
		token:    token,
		tool:     params.Name,
		args:     params.Arguments,
		id:       req.ID,
		idText:   fmt.Sprint(req.ID.Raw()),
		gone:     make(chan struct{}),
		pid:      pid,
		protocol: proto,
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	r := s.runLocked(c.token)
	r.counts.Calls[c.tool]++
	s.total.counts.Calls[c.tool]++
	args, key := wire.CallArgs(c.args)
	s.eventLocked(wire.MCPEvent{Token: c.token, Protocol: c.protocol, Kind: wire.MCPCall, Tool: c.tool, RequestID: c.idText, Args: args, Key: key, UnknownTool: !s.offeredLocked(c.tool) && !s.unlistedLocked(c.tool)})
	stdio := c.pid != ""
	s.faults.FireEach(c.token, func(a *armable) bool {
		return a.matchesCall(c.tool, stdio) && (session != "" || !needsSession(a.act))
	}, func(a *armable) {
		c.fired = append(c.fired, firedFault{kind: a.name, act: a.act})
	})
	if session != "" {
		c.inKey = inflightKey{session: session, id: idKey(req.ID.Raw())}
		s.inflight[c.inKey] = c
	}
	s.log.Debug("ledger call", "tool", c.tool, "token", c.token, "request_id", c.idText)
	return c
}

// idKey tags a request id with its JSON type, so 1 and "1" differ.
func idKey(raw any) string { return fmt.Sprintf("%T:%v", raw, raw) }

// cancelNotice handles a notifications/cancelled: a call still in flight on
// the same session is cancelled; a notice for an answered or unknown call is
// not counted. Stateless requests have no session to scope request ids, so
// their notices are ignored (the closed POST is the signal there).
func (s *Server) cancelNotice(session string, params json.RawMessage) {
	if session == "" {
		return
	}
	var p struct {
		RequestID any `json:"requestId"`
	}
	if err := json.Unmarshal(params, &p); err != nil {
		return
	}
	id, err := jsonrpc.MakeID(p.RequestID)
	if err != nil || !id.IsValid() {
		return
	}
	s.mu.Lock()
	c := s.inflight[inflightKey{session: session, id: idKey(id.Raw())}]
	s.mu.Unlock()
	if c != nil {
		s.giveUp(c, "notifications/cancelled")
	}
}

// giveUp records that the client gave up on c before its answer, once.
func (s *Server) giveUp(c *call, cause string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if c.state != callInFlight {
		return
	}
	c.state = callCancelled
	close(c.gone)
	s.endLocked(c)
	s.runLocked(c.token).counts.Cancellations++
	s.total.counts.Cancellations++
	s.eventLocked(wire.MCPEvent{Token: c.token, Protocol: c.protocol, Kind: wire.MCPCancelled, Tool: c.tool, RequestID: c.idText, Cause: cause})
	s.log.Info("ledger call cancelled", "tool", c.tool, "token", c.token, "request_id", c.idText, "cause", cause)
}

func (s *Server) giveUpPost(p *post, cause string) {
	for _, c := range p.calls {
		s.giveUp(c, cause)
	}
}

// endLocked forgets c as in flight. s.mu must be held.
func (s *Server) endLocked(c *call) {
	if c.inKey.session != "" && s.inflight[c.inKey] == c {
		delete(s.inflight, c.inKey)
	}
}

// answered records that the answer to p's calls reached the connection.
func (s *Server) answered(p *post, status int) {
	s.mu.Lock()
	defer s.mu.Unlock()
	for c := range s.endInFlightLocked(p, callAnswered) {
		if c.directive == "" || c.effect.Answered() {
			e := wire.MCPEvent{Token: c.token, Protocol: c.protocol, Kind: wire.MCPResult, Tool: c.tool, RequestID: c.idText, Fault: c.outcome, Dedup: c.dedup}
			if status >= 400 {
				e.Status = status
			}
			s.eventLocked(e)
		}
		switch {
		case c.directive != "" && c.effect.Exits():
			s.exitLocked(c.token, p.session, c.pid, c, wire.MCPExitFault, c.directive)
		case c.directive != "" && !c.effect.Answered() && p.session != "":
			// The process holds the answer (stdio_hang): the call is in
			// flight for its client until the process ends.
			s.stdioHeld[p.session] = c
		}
	}
}

// refuser returns the fault that answers p in place of the SDK: the
// highest-ranked refusal that fired on any of its calls (the first of
// equals), or nil.
func (p *post) refuser() refuser {
	var by refuser
	rank := 0
	for _, c := range p.calls {
		for f := range hooks[refuser](c) {
			if r := f.refusal(); r > rank {
				by, rank = f, r
			}
		}
	}
	return by
}

// cut returns where p's answer is cut on the stream — the earliest cut any
// fault that fired on its calls asks — and the highest-ranked cutter, which
// names the cut; dropNone and nil when none cuts.
func (p *post) cut() (dropPoint, cutter) {
	at := dropNone
	var by cutter
	rank := 0
	for _, c := range p.calls {
		for _, f := range c.fired {
			k, ok := f.act.(cutter)
			if !ok {
				continue
			}
			where, r := k.cut()
			at = earlierDrop(at, where)
			if r > rank {
				by, rank = k, r
			}
		}
	}
	return at, by
}

// dispatch tells the dispatchers that fired on p's calls that the POST goes
// to the tools.
func (s *Server) dispatch(p *post) {
	s.mu.Lock()
	defer s.mu.Unlock()
	for _, c := range p.calls {
		for d := range hooks[dispatcher](c) {
			d.dispatchedLocked(s, c)
		}
	}
}

// finishPost ends p's in-flight calls with state and, when fault is set,
// records the fault's events.
func (s *Server) finishPost(p *post, state callState, fault string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	for c := range s.endInFlightLocked(p, state) {
		if fault != "" {
			s.eventLocked(wire.MCPEvent{Token: c.token, Protocol: c.protocol, Kind: wire.MCPFault, Tool: c.tool, RequestID: c.idText, Fault: fault})
		}
	}
}

// endInFlightLocked ends each of p's calls still in flight with state, then
// yields it. s.mu must be held.
func (s *Server) endInFlightLocked(p *post, state callState) iter.Seq[*call] {
	return func(yield func(*call) bool) {
		for _, c := range p.calls {
			if c.state != callInFlight {
				continue
			}
			c.state = state
			s.endLocked(c)
			if !yield(c) {
				return
			}
		}
	}
}

// callMiddleware links a tools/call the SDK dispatches to the call the
// wrapper received, through the POST registry (see postKey).
func (s *Server) callMiddleware(next mcp.MethodHandler) mcp.MethodHandler {
	return func(ctx context.Context, method string, req mcp.Request) (mcp.Result, error) {
		if method == MethodInitialize {
			// A stateless handler's sessions have no id and end with
			// their request.
			ss, ok := req.GetSession().(*mcp.ServerSession)
			if !ok || ss.ID() == "" {
				return next(ctx, method, req)
			}
			s.openedSession(ss)
			res, err := next(ctx, method, req)
			if err == nil {
				s.negotiated(ss, res)
			}
			return res, err
		}
		if method == methodSubscriptionsListen {
			return s.listen(ctx, method, req, next)
		}
		if method != "tools/call" {
			return next(ctx, method, req)
		}
		if c := s.claim(req); c != nil {
			ctx = context.WithValue(ctx, callKey{}, c)
		}
		return next(ctx, method, req)
	}
}

// claim finds and takes the call the wrapper received for req, or nil.
func (s *Server) claim(req mcp.Request) *call {
	extra := req.GetExtra()
	params, ok := req.GetParams().(*mcp.CallToolParamsRaw)
	if extra == nil || extra.Header == nil || !ok {
		return nil
	}
	v, ok := s.posts.Load(postKeyOf(extra.Header))
	if !ok {
		return nil
	}
	p := v.(*post)
	s.mu.Lock()
	defer s.mu.Unlock()
	var found *call
	for _, c := range p.calls {
		if !c.claimed && c.tool == params.Name && (found == nil || bytes.Equal(c.args, params.Arguments)) {
			found = c
			if bytes.Equal(c.args, params.Arguments) {
				break
			}
		}
	}
	if found == nil {
		return nil
	}
	found.claimed = true
	p.unclaimed--
	if p.unclaimed == 0 && p.finished {
		s.posts.Delete(postKeyOf(p.header))
	}
	return found
}

// callFrom returns the call the middleware linked to ctx. A tools/call that
// did not come through the wrapper gets a fault-free call, already answered
// as far as cancellation counting goes.
func callFrom(ctx context.Context, req *mcp.CallToolRequest) *call {
	if c, ok := ctx.Value(callKey{}).(*call); ok {
		if req != nil {
			c.session = req.Session
		}
		return c
	}
	c := &call{state: callAnswered, gone: make(chan struct{})}
	if req != nil && req.Params != nil {
		c.tool = req.Params.Name
		c.token = runtoken.Find(req.Params.Arguments)
	}
	if req != nil {
		c.session = req.Session
	}
	return c
}

// callKey is the context key of the call callMiddleware links to a tool
// handler's context.
type callKey struct{}

// postKey names the POST a tools/call came in, for the tool handler the SDK
// runs it in: the identity of the header map of the request the wrapper
// hands the SDK. go-sdk v1.8.0 gives a tool handler that very map
// (mcp.RequestExtra.Header) and nothing else of its HTTP request — the
// JSON-RPC id stays inside the SDK, and the handler's context is the
// session's — while a client can send headers but cannot name a map in the
// ledger's memory, so the link cannot be spoofed. A registered post keeps
// its header map (post.header), so no other map can take its address while
// it is registered.
type postKey uintptr

func postKeyOf(h http.Header) postKey { return postKey(reflect.ValueOf(h).Pointer()) }

// register makes p, carried by r, findable by the tool handlers of its calls
// until they all claimed it (claim) or it ended without them (serveCalls).
func (s *Server) register(r *http.Request, p *post) {
	p.header = r.Header
	p.unclaimed = len(p.calls)
	s.posts.Store(postKeyOf(p.header), p)
}
