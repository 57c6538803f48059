// Package fakepair serves the pair of fakes a run points its target at: the
// model API fake (fakes/upstream) and the ledger MCP server (fakes/ledger),
// each on a listener of its own behind the loopback guard. New builds the
// two fakes, Serve listens and serves, Own gives a run token addresses of its
// own, and Shutdown and Close stop them. run, serve and replaychecktest
// assemble their fakes with it.
package fakepair

import (
	"context"
	"errors"
	"fmt"
	"net"
	"net/http"
	"sync"
	"time"

	"github.com/replaycheck/replaycheck/fakes/control"
	"github.com/replaycheck/replaycheck/fakes/ledger"
	"github.com/replaycheck/replaycheck/fakes/upstream"
	"github.com/replaycheck/replaycheck/internal/loopback"
	"github.com/replaycheck/replaycheck/internal/procnet"
	"github.com/replaycheck/replaycheck/internal/runtoken"
)

// Side names one fake of the pair.
type Side string

// The two sides of a pair.
const (
	UpstreamSide Side = "upstream" // the model API fake
	LedgerSide   Side = "ledger"   // the ledger MCP server
)

// noun is how an error names the side ("starting the upstream fake").
func (s Side) noun() string {
	if s == UpstreamSide {
		return "upstream fake"
	}
	return "ledger"
}

// StartError is why one side of a pair did not start: the fake itself
// (Addr is "") or its listener (Addr is the address it could not take).
type StartError struct {
	Side Side   // the fake that did not start
	Addr string // the address it could not listen on, or ""
	Err  error  // the fake's error, or the listener's
}

// Error says which fake did not start, and why.
func (e *StartError) Error() string { return "starting the " + e.Side.noun() + ": " + e.Err.Error() }

// Unwrap returns Err.
func (e *StartError) Unwrap() error { return e.Err }

// Config configures a pair; the zero Config serves default fakes on
// 127.0.0.1 port 0, owned by no run.
type Config struct {
	// UpstreamAddr and MCPAddr are where Serve listens, host:port; ""
	// means 127.0.0.1 port 0.
	UpstreamAddr, MCPAddr string
	// Upstream and Ledger configure the fakes.
	Upstream upstream.Config
	Ledger   ledger.Config
	// Owner, when set, is the run token that owns the MCP address: every
	// request arriving there, session steps included, is the run's (see
	// runtoken.Handler).
	Owner string
	// OwnModel makes Owner own the model API's address too.
	OwnModel bool
}

// Pair is a model API fake and a ledger served together. Its methods are
// safe for concurrent use once Serve returned; Close stops it.
type Pair struct {
	cfg      Config
	upstream *upstream.Server
	ledger   *ledger.Server
	control  http.Handler

	base   context.Context // request contexts derive from it
	cancel context.CancelFunc
	failed chan error

	mu      sync.Mutex
	served  *served // nil until Serve
	stopped bool
}

// New builds both fakes, the model API's first; Serve serves them. Its
// error is always a *StartError naming the fake that did not start, and
// nothing stays open.
func New(cfg Config) (*Pair, error) {
	u, err := upstream.New(cfg.Upstream)
	if err != nil {
		return nil, &StartError{Side: UpstreamSide, Err: err}
	}
	l, err := ledger.New(cfg.Ledger)
	if err != nil {
		return nil, &StartError{Side: LedgerSide, Err: err}
	}
	base, cancel := context.WithCancel(context.Background())
	return &Pair{cfg: cfg, upstream: u, ledger: l, base: base, cancel: cancel, failed: make(chan error, 2)}, nil
}

// Start is New and then Serve: a pair serving, or a *StartError and
// nothing open.
func Start(cfg Config) (*Pair, error) {
	p, err := New(cfg)
	if err != nil {
		return nil, err
	}
	if err := p.Serve(); err != nil {
		p.Close()
		return nil, err
	}
	return p, nil
}

// Upstream returns the model API fake.
func (p *Pair) Upstream() *upstream.Server { return p.upstream }

// Ledger returns the ledger MCP server.
func (p *Pair) Ledger() *ledger.Server { return p.ledger }

// Owner returns the run token that owns the MCP address (Config.Owner), or "".
func (p *Pair) Owner() string { return p.cfg.Owner }

// HandleControl serves h at control.Prefix on the model API's address,
// outside the loopback guard (h guards itself). Call it before Serve.
func (p *Pair) HandleControl(h http.Handler) { p.control = h }

// Serve listens on both addresses, the model API's first, and serves the
// fakes until Shutdown or Close; both accept connections when it returns.
// An address it cannot take is a *StartError naming the side and the
// address, and nothing stays listening. Call it once.
func (p *Pair) Serve() error {
	var up http.Handler = p.upstream
	if p.cfg.Owner != "" && p.cfg.OwnModel {
		up = runtoken.Handler(p.cfg.Owner, up)
	}
	up = loopback.Guard("model API", up)
	if p.control != nil {
		mux := http.NewServeMux()
		mux.Handle(control.Prefix, p.control)
		mux.Handle("/", up)
		up = mux
	}
	var mcp http.Handler = p.ledger
	if p.cfg.Owner != "" {
		mcp = runtoken.Handler(p.cfg.Owner, mcp)
	}
	sv, err := p.serve(p.cfg.UpstreamAddr, p.cfg.MCPAddr, up, mcp)
	if err != nil {
		return err
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.stopped {
		sv.close()
		return errors.New("serving the fakes: the pair is closed")
	}
	p.served = sv
	return nil
}

// served are the two servers of a pair's addresses or of a run's own.
type served struct {
	servers       []*http.Server // the model API's first
	upURL, mcpURL string         // …/v1, …/mcp
	mcpLn         *procnet.Listener
}

// close stops serving at once.
func (sv *served) close() error {
	var errs []error
	for _, srv := range sv.servers {
		errs = append(errs, srv.Close())
	}
	return errors.Join(errs...)
}

// serve listens on upAddr and mcpAddr and serves up there and mcp at /mcp,
// behind the loopback guard. An address it cannot take is a *StartError,
// and nothing stays listening.
func (p *Pair) serve(upAddr, mcpAddr string, up, mcp http.Handler) (*served, error) {
	upLn, err := loopback.Listen(upAddr)
	if err != nil {
		return nil, &StartError{Side: UpstreamSide, Addr: orPortZero(upAddr), Err: err}
	}
	ln, err := loopback.Listen(mcpAddr)
	if err != nil {
		upLn.Close()
		return nil, &StartError{Side: LedgerSide, Addr: orPortZero(mcpAddr), Err: err}
	}
	mcpLn := procnet.Track(ln)
	mux := http.NewServeMux()
	mux.Handle("/mcp", loopback.Guard("MCP server", mcp))
	base := func(net.Listener) context.Context { return p.base }
	sv := &served{
		servers: []*http.Server{
			{Handler: up, ReadHeaderTimeout: readHeaderTimeout, BaseContext: base},
			{Handler: mux, ReadHeaderTimeout: readHeaderTimeout, BaseContext: base},
		},
		upURL:  "http://" + upLn.Addr().String() + "/v1",
		mcpURL: "http://" + mcpLn.Addr().String() + "/mcp",
		mcpLn:  mcpLn,
	}
	for i, ln := range []net.Listener{upLn, mcpLn} {
		go func() {
			if err := sv.servers[i].Serve(loopback.DeferHeaderTimeout(ln)); !errors.Is(err, http.ErrServerClosed) {
				select {
				case p.failed <- err:
				default:
				}
			}
		}()
	}
	return sv, nil
}

// readHeaderTimeout bounds reading a request's headers.
const readHeaderTimeout = 10 * time.Second

// orPortZero is addr, or 127.0.0.1:0 when it is "".
func orPortZero(addr string) string {
	if addr == "" {
		return "127.0.0.1:0"
	}
	return addr
}

// UpstreamURL is the model API's base URL with /v1 (OpenAI's base URL; the
// other dialects' paths are served on the same host); "" before Serve.
func (p *Pair) UpstreamURL() string {
	if sv := p.servedNow(); sv != nil {
		return sv.upURL
	}
	return ""
}

// MCPURL is the ledger's Streamable HTTP endpoint (…/mcp); "" before Serve.
func (p *Pair) MCPURL() string {
	if sv := p.servedNow(); sv != nil {
		return sv.mcpURL
	}
	return ""
}

// MCPListener is the listener of the MCP address, which can tell whether it
// holds input the ledger has not taken in; nil before Serve.
func (p *Pair) MCPListener() *procnet.Listener {
	if sv := p.servedNow(); sv != nil {
		return sv.mcpLn
	}
	return nil
}

// servedNow returns what Serve serves, or nil.
func (p *Pair) servedNow() *served {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.served
}

// Failed receives the error of a listener that stopped serving before
// Shutdown or Close (an accept that failed).
func (p *Pair) Failed() <-chan error { return p.failed }

// Owned is a pair's fakes served at addresses of one run token's own:
// everything arriving there belongs to the run. The caller closes it.
type Owned struct{ sv *served }

// Own serves the pair's fakes at two more addresses on 127.0.0.1 port 0,
// owned by token (see runtoken.Handler), until the Owned is closed.
func (p *Pair) Own(token string) (*Owned, error) {
	sv, err := p.serve("", "", loopback.Guard("model API", runtoken.Handler(token, p.upstream)), runtoken.Handler(token, p.ledger))
	if err != nil {
		se := err.(*StartError)
		what := map[Side]string{UpstreamSide: "model API", LedgerSide: "MCP"}[se.Side]
		return nil, fmt.Errorf("starting the run's own %s address: %w", what, se.Err)
	}
	return &Owned{sv}, nil
}

// UpstreamURL is the run's own model API base URL (…/v1).
func (o *Owned) UpstreamURL() string { return o.sv.upURL }

// MCPURL is the run's own MCP endpoint (…/mcp).
func (o *Owned) MCPURL() string { return o.sv.mcpURL }

// MCPListener is the listener of the run's own MCP address.
func (o *Owned) MCPListener() *procnet.Listener { return o.sv.mcpLn }

// Close stops serving the run's own addresses at once; the pair serves on.
func (o *Owned) Close() error { return o.sv.close() }

// Shutdown stops serving: it ends the requests in flight (their contexts
// are cancelled, so streams end), waits for their handlers until ctx ends
// and then closes what is left. The fakes stay open, for their counts,
// until Close. Its error says when ctx cut the wait short.
func (p *Pair) Shutdown(ctx context.Context) error {
	sv := p.stop()
	if sv == nil {
		return nil
	}
	var errs []error
	for _, srv := range sv.servers {
		if err := srv.Shutdown(ctx); err != nil {
			errs = append(errs, fmt.Errorf("shutting down the fakes: %w", errors.Join(err, srv.Close())))
		}
	}
	return errors.Join(errs...)
}

// Close stops serving at once, if Shutdown did not, and closes the fakes
// (the ledger syncs its file and ends a forwarded server).
func (p *Pair) Close() error {
	var err error
	if sv := p.stop(); sv != nil {
		err = sv.close()
	}
	return errors.Join(err, p.ledger.Close())
}

// stop marks the pair stopped, cancels its requests' contexts, and returns
// what is still to stop: nil before Serve and the second time.
func (p *Pair) stop() *served {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.stopped {
		return nil
	}
	p.stopped = true
	p.cancel()
	return p.served
}
