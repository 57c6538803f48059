package ledger

import (
	"encoding/json"

	"github.com/modelcontextprotocol/go-sdk/jsonrpc"

	"github.com/replaycheck/replaycheck/internal/runtoken"
	"github.com/replaycheck/replaycheck/internal/wire"
)

// StdioUnforwardedHeader is a request header of the DELETE a ledger-stdio
// process closes its session with: one value per tools/call the process read
// from its client and never sent to the ledger, mostly because the client
// gave it up first (cancelled it, or closed the process's stdin, also
// before the process dispatched it), the call's tool name. Each is recorded
// as a wire.MCPUnforwarded event, so a run can tell a call the target sent
// and the harness's stdio server did not deliver in time from a call the
// target never sent.
const StdioUnforwardedHeader = "Replaycheck-Stdio-Unforwarded"

// unforwardedLocked records one MCPUnforwarded event for token per tool in
// tools, the calls the ledger-stdio process pid (of session) never
// forwarded; nothing once the process's end was recorded (a DELETE sent
// again). s.mu must be held.
func (s *Server) unforwardedLocked(token, session, pid string, tools []string) {
	if s.stdioEnded[session] {
		return
	}
	for _, t := range tools {
		s.unforwardedEventLocked(token, pid, t)
	}
}

// stdioCallsAfterEnd records an MCPUnforwarded event for each tools/call in
// msgs that the ledger-stdio process pid sent on its session after its end
// was recorded: the process wrote the call out as its client gave it up and
// closed the session at once, and the ledger took the DELETE first, so the
// SDK refuses the call (unknown session) and it never runs. The process
// counted it as forwarded. A call is the run's of owner, or of the token in
// its arguments when owner is ""; nothing for a session that is not a
// ledger-stdio process's that ended.
func (s *Server) stdioCallsAfterEnd(owner, session, pid string, msgs []jsonrpc.Message) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if pid == "" || !s.stdioEnded[session] {
		return
	}
	for _, m := range msgs {
		req, ok := m.(*jsonrpc.Request)
		if !ok || !req.IsCall() || req.Method != "tools/call" {
			continue
		}
		var params struct {
			Name      string          `json:"name"`
			Arguments json.RawMessage `json:"arguments"`
		}
		if json.Unmarshal(req.Params, &params) != nil || params.Name == "" {
			continue
		}
		token := owner
		if token == "" {
			token = runtoken.Find(params.Arguments)
		}
		s.unforwardedEventLocked(token, pid, params.Name)
	}
}

// unforwardedEventLocked records that the ledger-stdio process pid never
// delivered token's call of tool. s.mu must be held.
func (s *Server) unforwardedEventLocked(token, pid, tool string) {
	s.eventLocked(wire.MCPEvent{Token: token, Kind: wire.MCPUnforwarded, Tool: tool, PID: pid})
	s.log.Info("ledger-stdio process never delivered a call its client gave up", "token", token, "pid", pid, "tool", tool)
}
