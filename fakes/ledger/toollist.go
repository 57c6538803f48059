package ledger

import (
	"context"
	"maps"
	"slices"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/replaycheck/replaycheck/internal/runtoken"
)

// notifyWait bounds how long a change_tools answer waits for the calling
// session's notifications/tools/list_changed to go out (the SDK sends it
// 10ms after a change) and for the session to list the tools again. A client
// that lists on the notification gets its answer at once, so its next
// request is sure to offer the new list; one that answers a ping sent behind
// the notification gets it a few of the ping's round trips later (see
// relistGraceTrips); one that answers no ping, after this wait. It is
// thousands of times what a client takes to act on the notification: at 1s
// a busy machine (256 parallel runs beside 4 busy loops) could make the
// answer go before a guarded client had seen the notification, and its next
// request offer the stale list.
const notifyWait = 5 * time.Second

// methodToolListChanged is the notification the SDK sends when tools change.
const methodToolListChanged = "notifications/tools/list_changed"

// baseTools returns the tool list the server starts with: each ledger tool
// under its own name.
func baseTools() map[string]string {
	m := map[string]string{}
	for _, t := range toolNames() {
		m[t] = t
	}
	return m
}

// baseToolsLocked returns the tool list the server starts with: baseTools,
// or a forwarding ledger's server's tools as last listed. s.mu must be held.
func (s *Server) baseToolsLocked() map[string]string {
	if s.fwd == nil {
		return baseTools()
	}
	m := map[string]string{}
	for _, t := range s.fwd.names() {
		m[t] = t
	}
	return m
}

// knownTool reports whether a fault may name the tool: a ledger tool, or a
// tool a forwarding ledger's server lists.
func (s *Server) knownTool(name string) bool {
	if s.fwd == nil {
		return isTool(name)
	}
	return s.fwd.tool(name) != nil
}

// offeredLocked reports whether the server offers the tool name. s.mu must
// be held.
func (s *Server) offeredLocked(name string) bool {
	_, ok := s.tools[name]
	return ok
}

// listChangedMiddleware counts the notifications/tools/list_changed the SDK
// sends each session, once they were written to the session's stream.
func (s *Server) listChangedMiddleware(next mcp.MethodHandler) mcp.MethodHandler {
	return func(ctx context.Context, method string, req mcp.Request) (mcp.Result, error) {
		res, err := next(ctx, method, req)
		if method == methodToolListChanged {
			if ss, ok := req.GetSession().(*mcp.ServerSession); ok {
				s.mu.Lock()
				if run, listen := s.listens[ss]; listen {
					s.runLocked(run).listSent++
				} else {
					s.listSent[ss]++
				}
				s.wakeLocked()
				s.mu.Unlock()
			}
		}
		return res, err
	}
}

// maxTrackedSessions bounds the sessions whose tools/list requests and
// list_changed notifications are counted; past it, the counts of sessions
// the SDK no longer holds are dropped, so a long serve stays bounded.
const maxTrackedSessions = 256

// methodSubscriptionsListen is the 2026-07-28 request whose stream carries
// a stateless client's notifications.
const methodSubscriptionsListen = "subscriptions/listen"

// listen handles a subscriptions/listen request (next): while its stream is
// open, the notifications sent on it are counted for the run of the address
// it came to (run.listSent).
func (s *Server) listen(ctx context.Context, method string, req mcp.Request, next mcp.MethodHandler) (mcp.Result, error) {
	ss, ok := req.GetSession().(*mcp.ServerSession)
	if !ok {
		return next(ctx, method, req)
	}
	owner, _ := runtoken.FromContext(ctx)
	s.mu.Lock()
	s.listens[ss] = owner
	s.mu.Unlock()
	defer func() {
		s.mu.Lock()
		delete(s.listens, ss)
		s.mu.Unlock()
	}()
	return next(ctx, method, req)
}

// noteListed counts a tools/list request of the session id, or, without
// one (2026-07-28), of the run owner's.
func (s *Server) noteListed(owner, id string) {
	if id == "" {
		s.mu.Lock()
		defer s.mu.Unlock()
		s.runLocked(owner).listed++
		s.wakeLocked()
		return
	}
	var live map[string]bool
	if s.trackedSessions() > maxTrackedSessions {
		live = map[string]bool{}
		for ss := range s.mcp.Sessions() {
			live[ss.ID()] = true
		}
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	if live != nil {
		for k := range s.listed {
			if !live[k] {
				delete(s.listed, k)
			}
		}
		for ss := range s.listSent {
			if !live[ss.ID()] {
				delete(s.listSent, ss)
			}
		}
	}
	s.listed[id]++
	s.wakeLocked()
}

// trackedSessions returns how many sessions' counts are kept.
func (s *Server) trackedSessions() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return max(len(s.listed), len(s.listSent))
}

// relistGraceTrips and minRelistGrace bound the wait for a relist once the
// client has answered a ping sent behind the notification: by then it has
// read the notification (a session's messages arrive in order, and the SDK
// handles them in order), and a client that lists on it does so about one
// round trip later. The answer waits relistGraceTrips of the ping's round
// trips, at least minRelistGrace: a busy machine slows the ping as it slows
// the relist, so the wait grows with the load instead of failing a client
// that relists.
const (
	relistGraceTrips = 10
	minRelistGrace   = 100 * time.Millisecond
)

// relister is whose relist a change_tools answer waits for: the calling
// session, or, for a call without one (2026-07-28), the run of the address
// it came to, whose subscriptions/listen streams carry the notification and
// whose tools/list requests carry no session.
type relister struct {
	session *mcp.ServerSession // nil for a stateless call
	run     string
}

// relisterOf returns whose relist the answer of the call c, handled on
// ctx, waits for.
func relisterOf(ctx context.Context, c *call) relister {
	if c.session != nil && c.session.ID() != "" {
		return relister{session: c.session}
	}
	owner, _ := runtoken.FromContext(ctx)
	return relister{run: owner}
}

// countsLocked returns how many list_changed notifications w was sent and
// how many times it listed the tools. s.mu must be held.
func (w relister) countsLocked(s *Server) (sent, listed uint64) {
	if w.session != nil {
		return s.listSent[w.session], s.listed[w.session.ID()]
	}
	r := s.runLocked(w.run)
	return r.listSent, r.listed
}

// sessionID is w's session's id, "" for a stateless client.
func (w relister) sessionID() string {
	if w.session == nil {
		return ""
	}
	return w.session.ID()
}

// awaitRelist returns at once for a stateless client of a run with no
// subscriptions/listen stream open (nothing can tell it); else it waits
// until w was sent more list_changed notifications than sent and then
// listed the tools more often than listed; or until w's session answered a
// ping sent after the notification and relistGraceTrips of its round trips
// passed (a stateless client, which the server cannot ping, is not waited
// for that way); or s.relistWait passed, ctx ended or the server closes.
func (s *Server) awaitRelist(ctx context.Context, w relister, sent, listed uint64) {
	s.mu.Lock()
	wait := s.relistWait
	unheard := w.session == nil && !slices.Contains(slices.Collect(maps.Values(s.listens)), w.run)
	s.mu.Unlock()
	if unheard {
		return // a stateless client that listens for no notification is not told
	}
	timer := time.NewTimer(wait)
	defer timer.Stop()
	start := time.Now()
	// Not ctx: the ping must follow the notification on the session's own
	// stream, not go ahead of it on the stream of the call being answered.
	pingCtx, cancel := context.WithCancel(context.Background())
	defer cancel()
	var pong chan time.Duration
	for {
		s.mu.Lock()
		n, l := w.countsLocked(s)
		changed := s.changed
		s.mu.Unlock()
		if n > sent && l > listed {
			return
		}
		if n > sent && pong == nil && w.session != nil {
			pong = make(chan time.Duration, 1)
			go func() {
				at := time.Now()
				if w.session.Ping(pingCtx, nil) == nil {
					pong <- time.Since(at)
				}
			}()
		}
		select {
		case <-changed:
		case rtt := <-pong:
			if grace := max(relistGraceTrips*rtt, minRelistGrace); time.Since(start)+grace < wait {
				wait = time.Since(start) + grace
				timer.Reset(grace)
			}
		case <-timer.C:
			s.log.Info("ledger: the client did not list the tools again after list_changed; answering", "session", w.sessionID(), "run", w.run, "notified", n > sent, "wait", wait.Round(time.Millisecond))
			return
		case <-ctx.Done():
			return
		case <-s.closing:
			return
		}
	}
}

// restoreTools gives back the tool list the server started with.
func (s *Server) restoreTools() {
	s.mu.Lock()
	var removed []string
	for name, base := range s.tools {
		if name != base {
			removed = append(removed, name)
		}
	}
	base := s.baseToolsLocked()
	var missing []string
	for t := range base {
		if !s.offeredLocked(t) {
			missing = append(missing, t)
		}
	}
	s.tools = base
	annotations := maps.Clone(s.annotations)
	s.mu.Unlock()
	if len(removed) > 0 {
		s.mcp.RemoveTools(removed...)
	}
	for _, t := range missing {
		s.addTool(t, t, annotations[t])
	}
}
