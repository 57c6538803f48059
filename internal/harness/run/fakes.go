package run

import (
	"errors"
	"fmt"
	"net/http"
	"time"

	"github.com/replaycheck/replaycheck/fakes/ledger"
	"github.com/replaycheck/replaycheck/fakes/upstream"
	"github.com/replaycheck/replaycheck/internal/harness/target"
	"github.com/replaycheck/replaycheck/internal/loopback"
	"github.com/replaycheck/replaycheck/internal/procnet"
	"github.com/replaycheck/replaycheck/internal/runtoken"
)

// fakesEnv is a ledger and an upstream fake on loopback listeners.
type fakesEnv struct {
	ledger    *ledger.Server
	upstream  *upstream.Server
	ledgerSrv *http.Server
	upSrv     *http.Server
	urls      target.Fakes
	owned     bool // the ledger is one run token's own (startFakes' owner)
	// mcpListener is the ledger's listener.
	mcpListener *procnet.Listener
}

// startFakes starts a ledger and an upstream fake, at addrs where set and on
// 127.0.0.1 port 0 otherwise. With owner set the ledger is that run token's
// own: everything arriving at it belongs to the run (see runtoken.Handler),
// its session steps included. With fwd set the ledger forwards to that real
// MCP server instead of offering its own tools (see ledger.Forward).
func startFakes(annotations map[string]ledger.Annotations, now func() time.Time, addrs target.FakeAddrs, owner string, fwd *ledger.Forward) (*fakesEnv, error) {
	l, err := ledger.New(ledger.Config{Annotations: annotations, Now: now, Forward: fwd})
	if err != nil {
		return nil, fmt.Errorf("starting the ledger: %w", err)
	}
	u, err := upstream.New(upstream.Config{Clock: now})
	if err != nil {
		l.Close()
		return nil, fmt.Errorf("starting the upstream fake: %w", err)
	}
	mux := http.NewServeMux()
	var mcp http.Handler = l
	if owner != "" {
		mcp = runtoken.Handler(owner, l)
	}
	mux.Handle("/mcp", mcp)
	ln, err := loopback.Listen(addrs.MCP)
	if err != nil {
		l.Close()
		return nil, fmt.Errorf("starting the ledger: %w", err)
	}
	mcpListener := procnet.Track(ln)
	lsrv, lurl := loopback.ServeOn(mcpListener, "MCP server", mux)
	usrv, uurl, err := loopback.Serve(addrs.Upstream, "model API", u)
	if err != nil {
		lsrv.Close()
		l.Close()
		return nil, fmt.Errorf("starting the upstream fake: %w", err)
	}
	return &fakesEnv{ledger: l, upstream: u, ledgerSrv: lsrv, upSrv: usrv, urls: target.Fakes{Upstream: uurl + "/v1", MCP: lurl + "/mcp"}, owned: owner != "", mcpListener: mcpListener}, nil
}

// own serves the fakes at addresses of the run token's own: everything
// arriving there belongs to the run. It returns them, the listener of the
// MCP address, and a func that closes them.
func (e *fakesEnv) own(token string) (target.Fakes, *procnet.Listener, func(), error) {
	usrv, uurl, err := loopback.Serve("", "model API", runtoken.Handler(token, e.upstream))
	if err != nil {
		return target.Fakes{}, nil, nil, fmt.Errorf("starting the run's own model API address: %w", err)
	}
	mux := http.NewServeMux()
	mux.Handle("/mcp", runtoken.Handler(token, e.ledger))
	ln, err := loopback.Listen("")
	if err != nil {
		usrv.Close()
		return target.Fakes{}, nil, nil, fmt.Errorf("starting the run's own MCP address: %w", err)
	}
	mcpListener := procnet.Track(ln)
	lsrv, lurl := loopback.ServeOn(mcpListener, "MCP server", mux)
	return target.Fakes{Upstream: uurl + "/v1", MCP: lurl + "/mcp"}, mcpListener, func() { usrv.Close(); lsrv.Close() }, nil
}

// Close stops both fakes and their listeners.
func (e *fakesEnv) Close() error {
	return errors.Join(e.upSrv.Close(), e.ledgerSrv.Close(), e.ledger.Close())
}
