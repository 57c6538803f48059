package ledger

import (
	"context"
	"errors"
	"log/slog"
	"slices"
	"sync"

	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// relays carries what the forwarded server sends on its own to the clients
// of a forwarding ledger: its notifications and its requests. The ledger
// has one session with the server for all its clients, so each is routed
// to the client session it belongs to: progress to the session whose
// request carried the token (the forwarder sends the server a token of its
// own per request and maps it back); a request of the server's (sampling,
// elicitation, roots) to the session whose request is in flight, the
// latest when several are; notifications/resources/updated to the sessions
// that subscribed to its URI; notifications/message to the sessions with a
// request in flight and those that set a logging level; list changes of
// resources and prompts to every session but the 2026-07-28 listeners (see
// listener), which get on their stream what they asked for;
// notifications/elicitation/complete to the session the server's
// elicitation with its id went to.
type relays struct {
	server *mcp.Server
	log    *slog.Logger

	mu          sync.Mutex
	next        int64                                  // the last request's number
	inflight    map[int64]*pending                     // requests being forwarded, by number
	answered    map[int64]*pending                     // the last answered ones (see lateRoutes)
	subscribers map[string]map[*mcp.ServerSession]bool // by resource URI
	levels      map[*mcp.ServerSession]bool            // sessions that set a logging level
	listeners   map[*listener]bool                     // 2026-07-28 clients' listen streams
	elicited    map[string]*mcp.ServerSession          // where the server's elicitations went, by elicitation id
}

// pending is a client's request being forwarded.
type pending struct {
	ctx     context.Context    // the request's: what is sent with it goes on its stream
	session *mcp.ServerSession // nil for a session of another kind
	token   any                // the client's progress token; nil if none
}

func newRelays(server *mcp.Server, log *slog.Logger) *relays {
	return &relays{
		server:      server,
		log:         log,
		inflight:    map[int64]*pending{},
		answered:    map[int64]*pending{},
		subscribers: map[string]map[*mcp.ServerSession]bool{},
		levels:      map[*mcp.ServerSession]bool{},
		listeners:   map[*listener]bool{},
		elicited:    map[string]*mcp.ServerSession{},
	}
}

// begin says a request of session with ctx and _meta meta is being
// forwarded: it returns the _meta to send the server (see upstreamMeta)
// and done, which says it was answered.
func (r *relays) begin(ctx context.Context, session mcp.Session, meta mcp.Meta) (mcp.Meta, func()) {
	ss, _ := session.(*mcp.ServerSession)
	r.mu.Lock()
	defer r.mu.Unlock()
	r.next++
	n := r.next
	r.inflight[n] = &pending{ctx: ctx, session: ss, token: meta[progressTokenKey]}
	return upstreamMeta(meta, n), func() {
		r.mu.Lock()
		defer r.mu.Unlock()
		p := r.inflight[n]
		delete(r.inflight, n)
		// What comes late goes on the session's own stream: the
		// request's has ended.
		r.answered[n] = &pending{ctx: context.Background(), session: p.session, token: p.token}
		delete(r.answered, n-lateRoutes)
	}
}

// lateRoutes is how many answered requests the server's progress
// notifications are still relayed for. go-sdk's client handles the
// notifications it receives on a queue of their own and an answer as it
// comes, so a notification the server sent before its answer can be
// handled after it.
const lateRoutes = 64

// subscribe says session subscribed to uri at the server.
func (r *relays) subscribe(session *mcp.ServerSession, uri string) {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.subscribers[uri] == nil {
		r.subscribers[uri] = map[*mcp.ServerSession]bool{}
	}
	r.subscribers[uri][session] = true
}

// unsubscribe says session unsubscribed from uri at the server.
func (r *relays) unsubscribe(session *mcp.ServerSession, uri string) {
	r.mu.Lock()
	defer r.mu.Unlock()
	delete(r.subscribers[uri], session)
}

// listen relays the server's notifications l agreed to on its stream from
// now on; it returns the resource URIs no client had subscribed to, which
// the forwarder is to subscribe to at the server.
func (r *relays) listen(l *listener) []string {
	r.mu.Lock()
	defer r.mu.Unlock()
	var fresh []string
	for _, uri := range l.agreed.ResourceSubscriptions {
		if !r.subscribedLocked(uri) {
			fresh = append(fresh, uri)
		}
	}
	r.listeners[l] = true
	return fresh
}

// unlisten stops relaying to l; it returns the resource URIs no client is
// subscribed to any more, which the forwarder is to unsubscribe from.
func (r *relays) unlisten(l *listener) []string {
	r.mu.Lock()
	defer r.mu.Unlock()
	delete(r.listeners, l)
	var stale []string
	for _, uri := range l.agreed.ResourceSubscriptions {
		if !r.subscribedLocked(uri) {
			stale = append(stale, uri)
		}
	}
	return stale
}

// subscribedLocked reports whether a session subscribed to uri, or a
// listener listens to its updates. r.mu is held.
func (r *relays) subscribedLocked(uri string) bool {
	if len(r.subscribers[uri]) > 0 {
		return true
	}
	for l := range r.listeners {
		if slices.Contains(l.agreed.ResourceSubscriptions, uri) {
			return true
		}
	}
	return false
}

// listening returns the listeners for which wants says yes.
func (r *relays) listening(wants func(*listener) bool) []*listener {
	r.mu.Lock()
	defer r.mu.Unlock()
	var out []*listener
	for l := range r.listeners {
		if wants(l) {
			out = append(out, l)
		}
	}
	return out
}

// levelled says session set a logging level at the server.
func (r *relays) levelled(session *mcp.ServerSession) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.levels[session] = true
}

// latest returns the request in flight forwarded last, or nil.
func (r *relays) latest() *pending {
	r.mu.Lock()
	defer r.mu.Unlock()
	var last int64
	for n, p := range r.inflight {
		if n > last && p.session != nil {
			last = n
		}
	}
	return r.inflight[last]
}

// clientOptions are the handlers of the forwarder's client that relay what
// the server sends; toolsChanged handles notifications/tools/list_changed.
func (r *relays) clientOptions(toolsChanged func(context.Context, *mcp.ToolListChangedRequest)) *mcp.ClientOptions {
	return &mcp.ClientOptions{
		ToolListChangedHandler: toolsChanged,
		ProgressNotificationHandler: func(_ context.Context, req *mcp.ProgressNotificationClientRequest) {
			r.progress(req.Params)
		},
		LoggingMessageHandler: func(_ context.Context, req *mcp.LoggingMessageRequest) {
			r.message(req.Params)
		},
		ResourceUpdatedHandler: func(_ context.Context, req *mcp.ResourceUpdatedNotificationRequest) {
			r.mu.Lock()
			var to []*mcp.ServerSession
			for ss := range r.subscribers[req.Params.URI] {
				to = append(to, ss)
			}
			r.mu.Unlock()
			const method = "notifications/resources/updated"
			r.notifyAll(to, method, req.Params)
			for _, l := range r.listening(func(l *listener) bool { return slices.Contains(l.agreed.ResourceSubscriptions, req.Params.URI) }) {
				r.notify(l.ctx, l.session, method, stamped(l, req.Params))
			}
		},
		ResourceListChangedHandler: func(_ context.Context, req *mcp.ResourceListChangedRequest) {
			const method = "notifications/resources/list_changed"
			r.notifyAll(r.unlistening(), method, req.Params)
			for _, l := range r.listening(func(l *listener) bool { return l.agreed.ResourcesListChanged }) {
				r.notify(l.ctx, l.session, method, stamped(l, req.Params))
			}
		},
		PromptListChangedHandler: func(_ context.Context, req *mcp.PromptListChangedRequest) {
			const method = "notifications/prompts/list_changed"
			r.notifyAll(r.unlistening(), method, req.Params)
			for _, l := range r.listening(func(l *listener) bool { return l.agreed.PromptsListChanged }) {
				r.notify(l.ctx, l.session, method, stamped(l, req.Params))
			}
		},
		ElicitationCompleteHandler: func(_ context.Context, req *mcp.ElicitationCompleteNotificationRequest) {
			r.mu.Lock()
			ss := r.elicited[req.Params.ElicitationID]
			delete(r.elicited, req.Params.ElicitationID)
			r.mu.Unlock()
			if ss == nil {
				r.log.Debug("forward: an elicitation/complete of no elicitation relayed dropped", "id", req.Params.ElicitationID)
				return
			}
			if err := ss.NotifyElicitationComplete(context.Background(), req.Params); err != nil {
				r.log.Debug("forward: relaying elicitation/complete", "err", err)
			}
		},
		CreateMessageHandler: func(_ context.Context, req *mcp.CreateMessageRequest) (*mcp.CreateMessageResult, error) {
			p := r.latest()
			if p == nil {
				return nil, errNoRequest
			}
			return p.session.CreateMessage(p.ctx, req.Params)
		},
		ElicitationHandler: func(_ context.Context, req *mcp.ElicitRequest) (*mcp.ElicitResult, error) {
			p := r.latest()
			if p == nil {
				return nil, errNoRequest
			}
			if id := req.Params.ElicitationID; id != "" {
				r.mu.Lock()
				r.elicited[id] = p.session
				r.mu.Unlock()
			}
			return p.session.Elicit(p.ctx, req.Params)
		},
		// The server's requests reach the clients as they come: the
		// forwarder does not answer them itself.
		MultiRoundTrip: &mcp.MultiRoundTripOptions{Disabled: true},
		// What the forwarder relays, it offers: the default roots, and
		// elicitation of both modes (a client that has not the mode asked
		// answers the relayed request with its error).
		Capabilities: &mcp.ClientCapabilities{
			RootsV2:     &mcp.RootCapabilities{ListChanged: true},
			Elicitation: &mcp.ElicitationCapabilities{Form: &mcp.FormElicitationCapabilities{}, URL: &mcp.URLElicitationCapabilities{}},
		},
	}
}

// errNoRequest answers a request of the server's that came while no
// client's request was being forwarded: there is no client to ask.
var errNoRequest = errors.New("forward: no client request is in flight to relay the server's request to")

// rootsMiddleware is the forwarder's client's receiving middleware that
// relays the server's roots/list to the client (see relays) instead of
// answering it from the forwarder's own (empty) roots.
func (r *relays) rootsMiddleware(next mcp.MethodHandler) mcp.MethodHandler {
	return func(ctx context.Context, method string, req mcp.Request) (mcp.Result, error) {
		list, ok := req.(*mcp.ListRootsRequest)
		if !ok {
			return next(ctx, method, req)
		}
		p := r.latest()
		if p == nil {
			return nil, errNoRequest
		}
		return p.session.ListRoots(p.ctx, list.Params)
	}
}

// progress relays the server's progress notification to the session whose
// request its token names, with that request's own token.
func (r *relays) progress(params *mcp.ProgressNotificationParams) {
	n, ok := requestNumber(params.ProgressToken)
	r.mu.Lock()
	p := r.inflight[n]
	if p == nil {
		p = r.answered[n]
	}
	r.mu.Unlock()
	if !ok || p == nil || p.session == nil || p.token == nil {
		r.log.Debug("forward: a progress notification of no request in flight dropped", "token", params.ProgressToken)
		return
	}
	sent := *params
	sent.ProgressToken = p.token
	if err := p.session.NotifyProgress(p.ctx, &sent); err != nil {
		r.log.Debug("forward: relaying a progress notification", "err", err)
	}
}

// requestNumber returns the number of the request a progress token the
// forwarder sent names, as the client decoded it.
func requestNumber(token any) (int64, bool) {
	switch t := token.(type) {
	case float64:
		return int64(t), float64(int64(t)) == t
	case int64:
		return t, true
	case int:
		return int64(t), true
	}
	return 0, false
}

// message relays the server's log message to the sessions with a request
// in flight (on its stream) and to those that set a level.
func (r *relays) message(params *mcp.LoggingMessageParams) {
	r.mu.Lock()
	sent := map[*mcp.ServerSession]bool{}
	var inflight []*pending
	for _, p := range r.inflight {
		if p.session != nil && !sent[p.session] {
			sent[p.session] = true
			inflight = append(inflight, p)
		}
	}
	var levelled []*mcp.ServerSession
	for ss := range r.levels {
		if !sent[ss] {
			levelled = append(levelled, ss)
		}
	}
	r.mu.Unlock()
	const method = "notifications/message"
	for _, p := range inflight {
		// go-sdk's client handles notifications on a queue of their own
		// (see lateRoutes): the request may have been answered, and its
		// stream closed, since it was seen in flight. What the server
		// sent goes on the session's own stream then.
		if err := sendRelayed(p.ctx, p.session, method, params); err != nil {
			r.notify(context.Background(), p.session, method, params)
		}
	}
	r.notifyAll(levelled, method, params)
}

// unlistening returns the ledger's client sessions but those of listeners.
func (r *relays) unlistening() []*mcp.ServerSession {
	r.mu.Lock()
	listening := map[*mcp.ServerSession]bool{}
	for l := range r.listeners {
		listening[l.session] = true
	}
	r.mu.Unlock()
	var out []*mcp.ServerSession
	for ss := range r.server.Sessions() {
		if !listening[ss] {
			out = append(out, ss)
		}
	}
	return out
}

// notifyAll sends each of sessions the server's notification method with
// params, on its session's stream.
func (r *relays) notifyAll(sessions []*mcp.ServerSession, method string, params mcp.Params) {
	for _, ss := range sessions {
		r.notify(context.Background(), ss, method, params)
	}
}

// notify sends ss the server's notification method with params unchanged.
// ServerSession has no method that sends any notification, so the
// forwarder sends an empty progress notification that carries the real one
// in ctx, and relaySending, its sending middleware, sends that instead.
func (r *relays) notify(ctx context.Context, ss *mcp.ServerSession, method string, params mcp.Params) {
	if err := sendRelayed(ctx, ss, method, params); err != nil {
		r.log.Debug("forward: relaying a notification", "method", method, "err", err)
	}
}

// sendRelayed is notify that returns the error of the sending.
func sendRelayed(ctx context.Context, ss *mcp.ServerSession, method string, params mcp.Params) error {
	ctx = context.WithValue(ctx, relayedKey{}, relayed{method: method, params: params})
	return ss.NotifyProgress(ctx, &mcp.ProgressNotificationParams{})
}

// relayedKey is the context key of a notification notify relays.
type relayedKey struct{}

// relayed is a notification of the server's being relayed to a client.
type relayed struct {
	method string
	params mcp.Params
}

// relaySending is a forwarding ledger's sending middleware: it sends the
// notification notify relays in place of the progress notification that
// carries it, and a listener's acknowledgement as the listener agreed it.
func relaySending(next mcp.MethodHandler) mcp.MethodHandler {
	return func(ctx context.Context, method string, req mcp.Request) (mcp.Result, error) {
		ss, isServer := req.GetSession().(*mcp.ServerSession)
		ack, isAck := req.GetParams().(*mcp.SubscriptionsAcknowledgedParams)
		if l, ok := ctx.Value(listenKey{}).(*listener); ok && isServer && isAck {
			res, err := next(ctx, method, &mcp.ServerRequest[mcp.Params]{Session: ss, Params: l.acknowledged(ack)})
			close(l.acked)
			return res, err
		}
		r, ok := ctx.Value(relayedKey{}).(relayed)
		if !ok || !isServer || method != "notifications/progress" {
			return next(ctx, method, req)
		}
		return next(ctx, r.method, &mcp.ServerRequest[mcp.Params]{Session: ss, Params: r.params})
	}
}
