package ledger

import (
	"context"
	"maps"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// notifyWait bounds how long a change_tools answer waits for the calling
// session's notifications/tools/list_changed to go out (the SDK sends it
// 10ms after a change) and for the session to list the tools again. A client
// that lists only when it next needs the tools (or never) gets its answer
// after this wait; one that lists on the notification gets it at once, so
// its next request is sure to offer the new list. It is the one wall clock
// of a tool-list scenario, so it is thousands of times what a client takes
// to act on the notification: at 1s a busy machine (256 parallel runs beside
// 4 busy loops) could make the answer go before a guarded client had seen
// the notification, and its next request offer the stale list.
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
				s.listSent[ss]++
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

// noteListed counts a tools/list request of the session id.
func (s *Server) noteListed(id string) {
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

// awaitRelist waits until ss was sent more list_changed notifications than
// sent and then listed the tools more often than listed, or notifyWait
// passed, ctx ended or the server closes.
func (s *Server) awaitRelist(ctx context.Context, ss *mcp.ServerSession, sent, listed uint64) {
	timer := time.NewTimer(notifyWait)
	defer timer.Stop()
	for {
		s.mu.Lock()
		n, l, changed := s.listSent[ss], s.listed[ss.ID()], s.changed
		s.mu.Unlock()
		if n > sent && l > listed {
			return
		}
		select {
		case <-changed:
		case <-timer.C:
			s.log.Info("ledger: the session did not list the tools again after list_changed; answering", "session", ss.ID(), "notified", n > sent, "wait", notifyWait)
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
