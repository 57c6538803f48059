package itemserver

import (
	"net/http"
	"net/http/httptest"
	"testing"

	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// ServeHTTPStoppable serves a new item server over Streamable HTTP, as
// ServeHTTP does, for a test that takes the server away before it ends
// (a replay with the server gone): stop closes it, and runs again when the
// test ends.
func ServeHTTPStoppable(t testing.TB) (s *Server, url string, stop func()) {
	t.Helper()
	s = &Server{}
	srv := s.MCPServer()
	ts := httptest.NewServer(mcp.NewStreamableHTTPHandler(func(*http.Request) *mcp.Server { return srv }, nil))
	t.Cleanup(ts.Close)
	return s, ts.URL, ts.Close
}
