// Package loopback serves HTTP handlers on loopback listeners, for the fakes
// and the targets the harness starts.
package loopback

import (
	"encoding/json"
	"errors"
	"fmt"
	"net"
	"net/http"
	"net/url"
	"strconv"
	"strings"
	"syscall"
	"time"
)

// Serve serves h behind Guard, named what, on addr (127.0.0.1 port 0 when
// empty) and returns the server and its base URL (http://host:port). The
// caller closes the server.
// An address already in use is an error that says so.
func Serve(addr, what string, h http.Handler) (*http.Server, string, error) {
	ln, err := Listen(addr)
	if err != nil {
		return nil, "", err
	}
	srv, u := ServeOn(ln, what, h)
	return srv, u, nil
}

// Listen listens for TCP on addr, 127.0.0.1 port 0 when empty. An address
// already in use is an error that says so.
func Listen(addr string) (*net.TCPListener, error) {
	if addr == "" {
		addr = "127.0.0.1:0"
	}
	ln, err := net.Listen("tcp", addr)
	if errors.Is(err, syscall.EADDRINUSE) {
		return nil, fmt.Errorf("address %s is already in use (a replaycheck serve or another run still going?): %w", addr, err)
	}
	if err != nil {
		return nil, fmt.Errorf("listening on %s: %w", addr, err)
	}
	return ln.(*net.TCPListener), nil
}

// ServeOn serves h behind Guard, named what, on ln and returns the server
// and its base URL (http://host:port). The caller closes the server, which
// closes ln.
func ServeOn(ln net.Listener, what string, h http.Handler) (*http.Server, string) {
	return serveOn(ln, what, h, readHeaderTimeout)
}

// readHeaderTimeout bounds how long a server of ServeOn waits for a
// request's headers once its first byte came; a connection that sends
// nothing stays open, as a kept-alive one does, until the client or the
// server's Close closes it.
const readHeaderTimeout = 10 * time.Second

// serveOn is ServeOn with the header timeout given.
func serveOn(ln net.Listener, what string, h http.Handler, headerTimeout time.Duration) (*http.Server, string) {
	srv := &http.Server{Handler: Guard(what, h), ReadHeaderTimeout: headerTimeout}
	go srv.Serve(DeferHeaderTimeout(ln))
	return srv, "http://" + ln.Addr().String()
}

// Guard wraps h so that a web page in a browser on this machine cannot use
// it: a request whose Origin header is not the server's own loopback origin
// (http://127.0.0.1:PORT, http://localhost:PORT, http://[::1]:PORT, with
// the port the request came in on), or whose Host is not a loopback name
// or address (a DNS rebinding: a page's own name resolved to 127.0.0.1),
// gets 403 with {"error": …} saying which. Programs (SDKs, agents, curl)
// send no Origin and a loopback Host, and pass. A request that came in on a
// non-loopback address of the server (a listener on 0.0.0.0 or a LAN
// address, set up on purpose) skips the Host check; the Origin check holds
// for every request. what names the service in the error ("model API").
func Guard(what string, h http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if msg := refusal(r); msg != "" {
			w.Header().Set("Content-Type", "application/json")
			w.WriteHeader(http.StatusForbidden)
			b, _ := json.Marshal(map[string]string{"error": what + ": " + msg})
			_, _ = w.Write(append(b, '\n'))
			return
		}
		h.ServeHTTP(w, r)
	})
}

// refusal says why Guard refuses r, or "".
func refusal(r *http.Request) string {
	local, _ := r.Context().Value(http.LocalAddrContextKey).(net.Addr)
	port := portOf(r.Host)
	localLoopback := true
	if a, ok := local.(*net.TCPAddr); ok {
		port = strconv.Itoa(a.Port)
		localLoopback = a.IP.IsLoopback()
	}
	if localLoopback && !IsLoopbackHost(hostOf(r.Host)) {
		return fmt.Sprintf("Host %q is not a loopback name or address; requests from web pages (DNS rebinding) are refused", r.Host)
	}
	if origin, ok := r.Header["Origin"]; ok {
		u, err := url.Parse(strings.Join(origin, ","))
		if err != nil || u.Scheme != "http" || !IsLoopbackHost(u.Hostname()) || u.Port() != port {
			return fmt.Sprintf("Origin %q is not this server's own; requests from web pages are refused", strings.Join(origin, ","))
		}
	}
	return ""
}

// IsLoopbackHost reports whether host (a name or an IP address, without a
// port or brackets) is localhost, a name under .localhost, or a loopback
// address: names a browser resolves to this machine without asking DNS.
func IsLoopbackHost(host string) bool {
	host = strings.ToLower(strings.TrimSuffix(host, "."))
	if host == "localhost" || strings.HasSuffix(host, ".localhost") {
		return true
	}
	ip := net.ParseIP(host)
	return ip != nil && ip.IsLoopback()
}

// hostOf is the host of a Host header, without its port or brackets.
func hostOf(hostport string) string {
	if h, _, err := net.SplitHostPort(hostport); err == nil {
		return h
	}
	return strings.TrimSuffix(strings.TrimPrefix(hostport, "["), "]")
}

// portOf is the port of a Host header, or "" (the default port).
func portOf(hostport string) string {
	if _, p, err := net.SplitHostPort(hostport); err == nil {
		return p
	}
	return ""
}
