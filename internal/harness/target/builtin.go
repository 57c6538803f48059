package target

import (
	"context"
	"fmt"
	"net/http"
	"os"
	"slices"
	"strings"

	"github.com/replaycheck/replaycheck/fakes/gateway"
	"github.com/replaycheck/replaycheck/internal/harness/app"
	"github.com/replaycheck/replaycheck/internal/harness/history"
	"github.com/replaycheck/replaycheck/internal/harness/process"
	"github.com/replaycheck/replaycheck/internal/harness/scenario"
	"github.com/replaycheck/replaycheck/internal/loopback"
	"github.com/replaycheck/replaycheck/internal/suggest"
	"github.com/replaycheck/replaycheck/internal/wire"
)

var _ Reachable = (*builtinInstance)(nil)

// builtin is the embedded gateway, in-process on a loopback listener of its
// own, with a set of replay bugs switched on.
type builtin struct {
	name string
	bugs gateway.Bugs
}

// parseBuiltin parses "guarded", "naive" or "BUG[,BUG]".
func parseBuiltin(spec string) (Target, error) {
	var bugs gateway.Bugs
	var err error
	switch spec {
	case "", gateway.ModeGuarded:
		spec = gateway.ModeGuarded
		bugs, err = gateway.ParseBugs(gateway.ModeGuarded, nil)
	case gateway.ModeNaive:
		bugs, err = gateway.ParseBugs(gateway.ModeNaive, nil)
	default:
		names := strings.Split(spec, ",")
		if err := unknownBuiltin(names); err != nil {
			return nil, err
		}
		bugs, err = gateway.ParseBugs(gateway.ModeGuarded, names)
	}
	if err != nil {
		return nil, err
	}
	return &builtin{name: "builtin:" + spec, bugs: bugs}, nil
}

// unknownBuiltin returns an error naming the first of names that is no
// gateway bug, with every name a builtin target takes (its modes, then its
// bugs) and the closest of them; nil when all are bugs.
func unknownBuiltin(names []string) error {
	valid := []string{gateway.ModeGuarded, gateway.ModeNaive}
	for _, b := range gateway.AllBugs() {
		valid = append(valid, string(b.Bug))
	}
	for i, n := range names {
		n = strings.TrimSpace(n)
		if slices.Contains(valid[2:], n) {
			continue
		}
		if slices.Contains(valid[:2], n) {
			return fmt.Errorf("builtin target %s stands alone: %s and %s are modes, not bugs to switch on with others", n, gateway.ModeGuarded, gateway.ModeNaive)
		}
		candidates := valid
		if len(names) > 1 {
			candidates = valid[2:] // a mode stands alone
		}
		var fixes []string
		for _, c := range suggest.Similar(n, candidates) {
			fixed := slices.Clone(names)
			fixed[i] = c
			fixes = append(fixes, "builtin:"+strings.Join(fixed, ","))
		}
		hint := ""
		if len(fixes) > 0 {
			hint = " (did you mean " + strings.Join(fixes, " or ") + "?)"
		}
		return fmt.Errorf("unknown builtin target name %q%s: want %s (the default: the fixed gateway), %s (every bug switched on), or gateway bugs switched on one by one, BUG[,BUG], of %s",
			n, hint, gateway.ModeGuarded, gateway.ModeNaive, strings.Join(valid[2:], ", "))
	}
	return nil
}

// Name returns "builtin:SPEC".
func (b *builtin) Name() string { return b.name }

// Traits says the gateway has front ends for the dialects it serves
// (gateway.Served: chat, responses and messages, not gemini), reaches
// MCP over HTTP and stdio, and resumes after a kill (run as a process of
// its own with a checkpoint, see gatewayProcess).
func (b *builtin) Traits() Traits {
	return Traits{
		Endpoints:     endpoints(gateway.Served()),
		MCPTransports: []wire.MCPTransport{wire.MCPTransportHTTP, wire.MCPTransportStdio},
		Resumes:       true,
	}
}

// Start starts a gateway on its own loopback listener, reaching the ledger
// over stdio (a process it spawns) when f.MCPTransport says so.
func (b *builtin) Start(ctx context.Context, f Fakes, knobs *scenario.Gateway) (Instance, error) {
	transport := &http.Transport{MaxIdleConnsPerHost: 64}
	cfg := gateway.Config{
		Upstream:   f.Upstream,
		MCP:        f.MCP,
		Bugs:       b.bugs,
		HTTPClient: &http.Client{Transport: transport},
	}
	if f.MCPTransport == wire.MCPTransportStdio {
		// The stdio ledger of this instance's ledger: replaycheck
		// ledger-stdio URL, run by this very binary (a test binary stands
		// in for replaycheck with ledgerstdio.Main).
		exe, err := os.Executable()
		if err != nil {
			return nil, fmt.Errorf("starting %s over MCP stdio: finding replaycheck's own binary: %w", b.name, err)
		}
		cfg.MCPCommand = []string{exe, LedgerStdioCommand, f.MCP}
	}
	// The gateway's own timeouts unless a knob sets them: the starvation
	// check weighs the harness's lateness against the timeout that decided
	// a run, and the default one decides it as well as a set one.
	setup := history.Setup{
		NumRetries:        gateway.DefaultNumRetries,
		ToolTimeout:       history.Duration(gateway.DefaultToolTimeout),
		StreamIdleTimeout: history.Duration(gateway.DefaultStreamIdleTimeout),
	}
	if knobs != nil {
		if knobs.NumRetries != nil {
			setup.NumRetries = *knobs.NumRetries
			cfg.NumRetries = *knobs.NumRetries
			if cfg.NumRetries == 0 {
				cfg.NumRetries = -1 // the gateway's "no retries"; 0 is its default
			}
		}
		cfg.Fallbacks = knobs.Fallbacks
		setup.Fallbacks = len(knobs.Fallbacks) > 0
		if knobs.ToolTimeout > 0 {
			cfg.ToolTimeout = knobs.ToolTimeout.D()
			setup.ToolTimeout = history.Duration(knobs.ToolTimeout)
		}
		if knobs.StreamIdleTimeout > 0 {
			cfg.StreamIdleTimeout = knobs.StreamIdleTimeout.D()
			setup.StreamIdleTimeout = history.Duration(knobs.StreamIdleTimeout)
		}
	}
	if f.Killable {
		return b.startProcess(ctx, cfg, setup)
	}
	gw, err := gateway.New(cfg)
	if err != nil {
		return nil, fmt.Errorf("starting %s: %w", b.name, err)
	}
	srv, url, err := loopback.Serve("", "gateway", gw)
	if err != nil {
		gw.Close()
		return nil, fmt.Errorf("starting %s: %w", b.name, err)
	}
	return &builtinInstance{
		gw: gw, srv: srv, setup: setup, transport: transport,
		app: app.New(url, nil, nil),
	}, nil
}

type builtinInstance struct {
	gw        *gateway.Gateway
	srv       *http.Server
	setup     history.Setup
	transport *http.Transport
	app       *app.Client
}

func (i *builtinInstance) Send(ctx context.Context, req Request) history.Exchange {
	return i.app.Send(ctx, req.Request)
}

func (i *builtinInstance) Limits() history.Setup { return i.setup }

// Notes is nil: the gateway takes every knob.
func (i *builtinInstance) Notes() []string { return nil }

// Output is nil: the gateway runs in the harness's own process.
func (i *builtinInstance) Output() *process.Output { return nil }

// CannotRun is nil: the gateway always runs.
func (i *builtinInstance) CannotRun() error { return nil }

// BaseURL is the gateway's loopback URL; it needs no headers.
func (i *builtinInstance) BaseURL() (string, http.Header) { return i.app.Endpoint() }

func (i *builtinInstance) Close() error {
	err := i.srv.Close()
	if gerr := i.gw.Close(); gerr != nil && err == nil {
		err = gerr
	}
	i.transport.CloseIdleConnections()
	i.app.Close()
	return err
}

// endpoints are the scenario endpoints of the dialects named.
func endpoints(names []string) []scenario.Endpoint {
	out := make([]scenario.Endpoint, len(names))
	for i, n := range names {
		out[i] = scenario.Endpoint(n)
	}
	return out
}
