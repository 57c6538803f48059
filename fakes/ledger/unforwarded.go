package ledger

import "github.com/replaycheck/replaycheck/internal/wire"

// StdioUnforwardedHeader is a request header of the DELETE a ledger-stdio
// process closes its session with: one value per tools/call the process read
// from its client and never sent to the ledger, mostly because the client
// gave it up first (cancelled it, or closed the process's stdin, also
// before the process dispatched it), the call's tool name. Each is recorded as a wire.MCPUnforwarded event, so a run can tell
// a call the target sent and the harness's stdio server did not deliver in
// time from a call the target never sent.
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
		s.eventLocked(wire.MCPEvent{Token: token, Kind: wire.MCPUnforwarded, Tool: t, PID: pid})
		s.log.Info("ledger-stdio process never forwarded a call its client gave up", "token", token, "pid", pid, "tool", t)
	}
}
