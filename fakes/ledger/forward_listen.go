package ledger

import (
	"context"
	"maps"
	"slices"
	"sync"

	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// listener is a 2026-07-28 client's subscriptions/listen stream through a
// forwarding ledger: the server's notifications it agreed to are relayed on
// it (see relays), each with the listen request's id in its _meta
// (mcp.MetaKeySubscriptionID), as a 2026-07-28 server sends them.
type listener struct {
	ctx     context.Context // the listen request's: what is sent with it goes on its stream
	session *mcp.ServerSession
	// agreed are the server's notifications relayed: prompts' and
	// resources' list changes, and the resource URIs whose updates are.
	agreed mcp.NotificationSubscriptions
	relay  *relays
	acked  chan struct{} // closed once the acknowledgement went out
	fresh  []string      // the URIs to subscribe to at the server; set before acked is closed

	mu sync.Mutex
	id any // the listen request's id, from the SDK's acknowledgement
}

// listenKey is the context key of the listener whose acknowledgement the
// SDK sends (see relaySending).
type listenKey struct{}

// listen serves a subscriptions/listen of a client of the forwarding
// ledger: the SDK (next) acknowledges it, and holds it for the ledger's own
// notifications (its tool list's changes), while the forwarder adds the
// notifications of the server's that the client asked for and the server
// sends (agree), subscribes to the resources at the server, and relays what
// the server sends until the stream ends.
func (f *forwarder) listen(ctx context.Context, method string, req *mcp.SubscriptionsListenRequest, next mcp.MethodHandler) (mcp.Result, error) {
	if req.Params == nil || req.Params.Notifications == nil || req.Session == nil {
		return next(ctx, method, req) // the SDK's to refuse
	}
	l := &listener{ctx: ctx, session: req.Session, agreed: f.agree(req.Params.Notifications), relay: f.relay, acked: make(chan struct{})}
	type answer struct {
		res mcp.Result
		err error
	}
	done := make(chan answer, 1)
	go func() {
		res, err := next(context.WithValue(ctx, listenKey{}, l), method, req)
		done <- answer{res, err}
	}()
	var a answer
	finished := false
	select {
	case <-l.acked:
	case a = <-done:
		finished = true
	}
	select {
	case <-l.acked:
	default:
		return a.res, a.err // refused: no acknowledgement
	}
	defer f.unlisten(l)
	for _, uri := range l.fresh {
		if err := f.session.Subscribe(ctx, &mcp.SubscribeParams{URI: uri}); err != nil {
			f.log.Warn("forward: subscribing to a resource at the server for a listening client", "uri", uri, "err", err)
		}
	}
	if !finished {
		a = <-done
	}
	if a.err == nil && l.relays() {
		// The SDK ends a listen at once that agreed to none of the
		// ledger's own notifications; the server's go on.
		<-ctx.Done()
	}
	return a.res, a.err
}

// unlisten stops relaying to l and unsubscribes at the server from the
// resources no client listens to any more.
func (f *forwarder) unlisten(l *listener) {
	ctx, cancel := context.WithTimeout(context.Background(), f.limit)
	defer cancel()
	for _, uri := range f.relay.unlisten(l) {
		if err := f.session.Unsubscribe(ctx, &mcp.UnsubscribeParams{URI: uri}); err != nil {
			f.log.Debug("forward: unsubscribing from a resource at the server", "uri", uri, "err", err)
		}
	}
}

// agree returns the notifications of want that the server sends, as its
// capabilities say: its prompts' and resources' list changes, and updates
// of the resources in want when it takes subscriptions.
func (f *forwarder) agree(want *mcp.NotificationSubscriptions) mcp.NotificationSubscriptions {
	var out mcp.NotificationSubscriptions
	caps := f.session.InitializeResult().Capabilities
	if caps == nil {
		return out
	}
	if p := caps.Prompts; p != nil {
		out.PromptsListChanged = want.PromptsListChanged && p.ListChanged
	}
	if r := caps.Resources; r != nil {
		out.ResourcesListChanged = want.ResourcesListChanged && r.ListChanged
		if r.Subscribe {
			out.ResourceSubscriptions = slices.Clone(want.ResourceSubscriptions)
		}
	}
	return out
}

// relays reports whether l relays any of the server's notifications.
func (l *listener) relays() bool {
	return l.agreed.PromptsListChanged || l.agreed.ResourcesListChanged || len(l.agreed.ResourceSubscriptions) > 0
}

// acknowledged returns the SDK's acknowledgement sent, with the server's
// notifications l agreed to in place of the ledger's; it notes the listen
// request's id it carries and relays to l from then on, so a client that
// got the acknowledgement gets what the server sends after it.
func (l *listener) acknowledged(sent *mcp.SubscriptionsAcknowledgedParams) *mcp.SubscriptionsAcknowledgedParams {
	l.mu.Lock()
	l.id = sent.Meta[mcp.MetaKeySubscriptionID]
	l.mu.Unlock()
	l.fresh = l.relay.listen(l)
	out := *sent
	out.Notifications.PromptsListChanged = l.agreed.PromptsListChanged
	out.Notifications.ResourcesListChanged = l.agreed.ResourcesListChanged
	out.Notifications.ResourceSubscriptions = l.agreed.ResourceSubscriptions
	return &out
}

// stamped returns a copy of params with l's listen request id in its
// _meta.
func stamped[T any, P interface {
	*T
	mcp.Params
}](l *listener, params P) P {
	out := P(new(T))
	*out = *params
	meta := maps.Clone(params.GetMeta())
	if meta == nil {
		meta = map[string]any{}
	}
	l.mu.Lock()
	meta[mcp.MetaKeySubscriptionID] = l.id
	l.mu.Unlock()
	out.SetMeta(meta)
	return out
}
