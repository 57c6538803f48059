package ledger

import (
	"fmt"
	"net/http"
	"strconv"
	"time"

	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// Sessions are the MCP sessions of a stateful ledger: how many are open,
// and how many initialize requests were refused because MaxSessions were.
type Sessions struct {
	Live    int `json:"live"`
	Refused int `json:"refused"`
	// Max is Config.MaxSessions (0 = no cap); IdleTimeout is
	// Config.SessionTimeout as a Go duration ("" = never).
	Max         int    `json:"max,omitempty"`
	IdleTimeout string `json:"idle_timeout,omitempty"`
}

// Sessions returns the ledger's MCP session counts.
func (s *Server) Sessions() Sessions {
	out := Sessions{Live: s.liveSessions(), Refused: int(s.sessionsRefused.Load()), Max: s.maxSessions}
	if s.sessionTimeout > 0 {
		out.IdleTimeout = s.sessionTimeout.String()
	}
	return out
}

func (s *Server) liveSessions() int { return int(s.sessionsLive.Load()) }

// openedSession counts ss, whose initialize the SDK is handling, as live
// until it closes (DELETE, the idle timeout, expire_session or shutdown).
// Sessions the SDK opens for other requests without a session id (a
// client's server/discover probe) close with their request and never count.
func (s *Server) openedSession(ss *mcp.ServerSession) {
	s.sessionsLive.Add(1)
	go func() {
		_ = ss.Wait()
		s.mu.Lock()
		delete(s.protocols, ss.ID())
		s.sessionsLive.Add(-1)
		s.wakeLocked()
		s.mu.Unlock()
	}()
}

// opensSession reports whether a POST without a session id carries an
// initialize request, which makes the SDK open a session.
func opensSession(msgs []jsonrpc.Message) bool {
	for _, m := range msgs {
		if req, ok := m.(*jsonrpc.Request); ok && req.IsCall() && req.Method == MethodInitialize {
			return true
		}
	}
	return false
}

// admitSession reports whether a new session may open, holding s.admit
// until release is called, so that sessions opening at once cannot pass the
// cap together; when it may not, it answers the initialize itself: 503 with
// a JSON-RPC error saying why.
func (s *Server) admitSession(w http.ResponseWriter, msgs []jsonrpc.Message) (release func(), ok bool) {
	s.admit.Lock()
	n := s.liveSessions()
	if n < s.maxSessions {
		return s.admit.Unlock, true
	}
	s.admit.Unlock()
	s.sessionsRefused.Add(1)
	idle := "never"
	if s.sessionTimeout > 0 {
		idle = "after " + s.sessionTimeout.String() + " without a request"
	}
	msg := fmt.Sprintf("ledger: %d MCP sessions are open, the most it keeps; a session ends on DELETE or %s; try again later", n, idle)
	s.log.Warn("ledger session refused", "live", n, "max", s.maxSessions)
	var id jsonrpc.ID
	for _, m := range msgs {
		if req, ok := m.(*jsonrpc.Request); ok && req.Method == MethodInitialize {
			id = req.ID
			break
		}
	}
	b, err := jsonrpc.EncodeMessage(&jsonrpc.Response{ID: id, Error: &jsonrpc.Error{Code: codeServerBusy, Message: msg}})
	if err != nil {
		http.Error(w, msg, http.StatusServiceUnavailable)
		return nil, false
	}
	w.Header().Set("Content-Type", "application/json")
	if s.sessionTimeout > 0 {
		w.Header().Set("Retry-After", strconv.Itoa(int(max(s.sessionTimeout/time.Second, 1))))
	}
	w.WriteHeader(http.StatusServiceUnavailable)
	_, _ = w.Write(b)
	return nil, false
}

// codeServerBusy is the JSON-RPC error code (implementation-defined server
// error range) of an initialize refused at the session cap.
const codeServerBusy = -32000
