// Package loopback serves HTTP handlers on loopback listeners, for the fakes
// and the targets the harness starts.
package loopback

import (
	"errors"
	"fmt"
	"net"
	"net/http"
	"syscall"
	"time"
)

// Serve serves h on addr (127.0.0.1 port 0 when empty) and returns the
// server and its base URL (http://host:port). The caller closes the server.
// An address already in use is an error that says so.
func Serve(addr string, h http.Handler) (*http.Server, string, error) {
	if addr == "" {
		addr = "127.0.0.1:0"
	}
	ln, err := net.Listen("tcp", addr)
	if errors.Is(err, syscall.EADDRINUSE) {
		return nil, "", fmt.Errorf("address %s is already in use (a replaycheck serve or another run still going?): %w", addr, err)
	}
	if err != nil {
		return nil, "", fmt.Errorf("listening on %s: %w", addr, err)
	}
	srv := &http.Server{Handler: h, ReadHeaderTimeout: 10 * time.Second}
	go srv.Serve(ln)
	return srv, "http://" + ln.Addr().String(), nil
}
