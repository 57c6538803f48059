package loopback

import (
	"context"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
)

// TestGuard sends requests as a web page and as programs would to a guarded
// handler on a loopback listener: pages are refused, programs pass.
func TestGuard(t *testing.T) {
	srv := httptest.NewServer(Guard("model API", http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
		_, _ = io.WriteString(w, "ok")
	})))
	t.Cleanup(srv.Close)
	port := srv.Listener.Addr().String()[strings.LastIndex(srv.Listener.Addr().String(), ":")+1:]
	tests := []struct {
		name     string
		host     string
		origin   string
		want     int
		wantBody string
	}{
		{name: "an SDK: no Origin, 127.0.0.1 Host", host: "127.0.0.1:" + port, want: 200},
		{name: "localhost Host", host: "localhost:" + port, want: 200},
		{name: "a name under .localhost", host: "app.localhost:" + port, want: 200},
		{name: "IPv6 loopback Host", host: "[::1]:" + port, want: 200},
		{name: "the server's own origin", host: "127.0.0.1:" + port, origin: "http://127.0.0.1:" + port, want: 200},
		{name: "DNS rebinding: a foreign Host", host: "evil.example:" + port, want: 403, wantBody: `model API: Host \"evil.example:` + port + `\" is not a loopback name`},
		{name: "a foreign Origin", host: "127.0.0.1:" + port, origin: "http://evil.example", want: 403, wantBody: `model API: Origin \"http://evil.example\" is not this server's own`},
		{name: "a page on another loopback port", host: "127.0.0.1:" + port, origin: "http://localhost:3000", want: 403, wantBody: "Origin"},
		{name: "an opaque origin", host: "127.0.0.1:" + port, origin: "null", want: 403, wantBody: "Origin"},
		{name: "the issue's request", host: "evil.example:8765", origin: "http://evil.example", want: 403, wantBody: "Host"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			req, err := http.NewRequest("POST", srv.URL+"/v1/chat/completions", strings.NewReader("{}"))
			if err != nil {
				t.Fatal(err)
			}
			req.Host = tt.host
			if tt.origin != "" {
				req.Header.Set("Origin", tt.origin)
			}
			res, err := srv.Client().Do(req)
			if err != nil {
				t.Fatal(err)
			}
			defer res.Body.Close()
			b, _ := io.ReadAll(res.Body)
			if res.StatusCode != tt.want || !strings.Contains(string(b), tt.wantBody) {
				t.Errorf("got %d %s, want %d with %q", res.StatusCode, b, tt.want, tt.wantBody)
			}
		})
	}
}

// TestGuardNonLoopbackListener: a request that came in on a non-loopback
// address (a listener set up on purpose on 0.0.0.0 or a LAN address) may
// name any Host, but a foreign Origin is still refused.
func TestGuardNonLoopbackListener(t *testing.T) {
	h := Guard("MCP server", http.HandlerFunc(func(http.ResponseWriter, *http.Request) {}))
	for _, tt := range []struct {
		origin string
		want   int
	}{{"", 200}, {"http://evil.example", 403}} {
		req := httptest.NewRequest("POST", "http://lab-box.lan:8766/mcp", nil)
		req = req.WithContext(contextWithLocalAddr(req, "192.0.2.10:8766"))
		if tt.origin != "" {
			req.Header.Set("Origin", tt.origin)
		}
		w := httptest.NewRecorder()
		h.ServeHTTP(w, req)
		if w.Code != tt.want {
			t.Errorf("Origin %q on a LAN listener: %d, want %d", tt.origin, w.Code, tt.want)
		}
	}
}

// contextWithLocalAddr is r's context as net/http gives it to a handler of
// a connection to addr.
func contextWithLocalAddr(r *http.Request, addr string) context.Context {
	a, err := net.ResolveTCPAddr("tcp", addr)
	if err != nil {
		panic(err)
	}
	return context.WithValue(r.Context(), http.LocalAddrContextKey, a)
}
