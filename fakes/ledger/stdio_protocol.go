package ledger

import (
	"net/http"
	"slices"

	"github.com/replaycheck/replaycheck/internal/wire"
)

// stdioProtocol is the protocol exchange with a ledger-stdio process (stdio
// set: h has StdioSpawnHeader): it tells the process the version
// Config.Protocol pins (StdioPinHeader on w), and returns the version the
// process's own client used for the request (StdioProtocolHeader in h), ""
// for a request without one, one that is not from a process, or a version
// the ledger does not know.
func (s *Server) stdioProtocol(w http.ResponseWriter, h http.Header, stdio bool) wire.MCPProtocol {
	if !stdio {
		return ""
	}
	if s.gen.pin != "" {
		w.Header().Set(StdioPinHeader, string(s.gen.pin))
	}
	p := wire.MCPProtocol(h.Get(StdioProtocolHeader))
	if !slices.Contains(wire.MCPProtocols(), p) {
		return ""
	}
	return p
}
