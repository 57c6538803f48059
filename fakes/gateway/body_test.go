package gateway

import (
	"bufio"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"
)

// TestSlowBodyIsCutOff: a client that sends its body a byte at a time, and
// then nothing, gets 408 once BodyTimeout has passed instead of holding the
// connection (and a gateway goroutine) for as long as it likes.
func TestSlowBodyIsCutOff(t *testing.T) {
	g, err := New(Config{Upstream: "http://127.0.0.1:1/v1", MCP: "http://127.0.0.1:1/mcp", BodyTimeout: 50 * time.Millisecond})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { g.Close() })
	srv := httptest.NewServer(g)
	t.Cleanup(srv.Close)
	conn, err := net.Dial("tcp", srv.Listener.Addr().String())
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	// The test's own bound: without the gateway's, the read below waits
	// for it and fails.
	_ = conn.SetDeadline(time.Now().Add(10 * time.Second))
	body := seedBody(pathChat, seedAsk, false, false)
	if _, err := fmt.Fprintf(conn, "POST %s HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\nContent-Length: %d\r\n\r\n%s", pathChat, len(body), body[:1]); err != nil {
		t.Fatal(err)
	}
	resp, err := http.ReadResponse(bufio.NewReader(conn), nil)
	if err != nil {
		t.Fatalf("no answer to a stalled body: %v", err)
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusRequestTimeout {
		t.Errorf("status %d, want 408", resp.StatusCode)
	}
}

// TestOverLimitBodyIs413: a body over the gateway's limit gets 413, whether
// its length is declared or it is sent chunked.
func TestOverLimitBodyIs413(t *testing.T) {
	srv := serveUnreachable(t)
	big := `{"model":"m","messages":[{"role":"user","content":"` + strings.Repeat("x", maxAppBody) + `"}]}`
	for _, chunked := range []bool{false, true} {
		t.Run(fmt.Sprintf("chunked=%v", chunked), func(t *testing.T) {
			req, err := http.NewRequest(http.MethodPost, srv.URL+pathChat, strings.NewReader(big))
			if err != nil {
				t.Fatal(err)
			}
			if chunked {
				req.ContentLength = -1
				req.Body = io.NopCloser(struct{ io.Reader }{strings.NewReader(big)})
			}
			resp, err := srv.Client().Do(req)
			if err != nil {
				t.Fatal(err)
			}
			resp.Body.Close()
			if resp.StatusCode != http.StatusRequestEntityTooLarge {
				t.Errorf("status %d, want 413", resp.StatusCode)
			}
		})
	}
}

// TestDeepBodyIs400: a body nested past nesting.Max is refused with 400 at
// the place the limit was crossed, before it is decoded.
func TestDeepBodyIs400(t *testing.T) {
	srv := serveUnreachable(t)
	res, err := srv.Client().Post(srv.URL+pathChat, "application/json", strings.NewReader(`{"model":"m","messages":`+strings.Repeat("[", 1_000_000)))
	if err != nil {
		t.Fatal(err)
	}
	defer res.Body.Close()
	b, _ := io.ReadAll(res.Body)
	if res.StatusCode != http.StatusBadRequest || !strings.Contains(string(b), "request body:1:124: nests deeper than 100 levels") {
		t.Errorf("got %d %s, want 400 naming request body:1:124", res.StatusCode, b)
	}
}

// serveUnreachable serves a gateway whose upstream and MCP server cannot be
// reached, for tests of what it refuses before calling either.
func serveUnreachable(t *testing.T) *httptest.Server {
	t.Helper()
	g, err := New(Config{Upstream: "http://127.0.0.1:1/v1", MCP: "http://127.0.0.1:1/mcp"})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { g.Close() })
	srv := httptest.NewServer(g)
	t.Cleanup(srv.Close)
	return srv
}
