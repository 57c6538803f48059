// Package target holds the model of the systems under test: a Target is
// a kind of system (the built-in gateway, a proxy, a client), started once
// per set of fakes into an Instance that app requests are sent through.
// Package targetfile builds proxy and client targets from target files
// (NewProxy, NewClient); package run schedules scenario runs on them and
// reads what it needs of a target from its Traits and its Instance's
// methods. Started processes live in package process, the app's HTTP
// client in package app.
//
// A new target kind touches: its file here (its spec, its Target with
// Traits and Start, its Instance with the six methods of Instance), and,
// for a named kind (builtin:…), a row in targetKinds; for a file kind, also
// its file in package targetfile (its YAML type and a loader that fills the
// spec), a row in targetfile's fileKinds and one in Schema's list
// (targetfile/schema.go), schemas/target.schema.json (go test
// ./internal/harness/targetfile -update) and the README's target-file section. It
// may be a client's via only if StartsPerRun says so.
//
// A new target-file field touches: the YAML type and its loader
// (targetfile/proxy.go or targetfile/client.go), the spec here (ProxySpec
// in proxy.go or ClientSpec in client.go) and the code that acts on it in
// the same file, schemas/target.schema.json and the README's target-file
// section; a new template variable also template.go (its name, its value
// and the Vars sets that offer it).
package target

import (
	"context"
	"fmt"
	"net/http"
	"slices"
	"sort"
	"strings"
	"time"

	"github.com/replaycheck/replaycheck/internal/harness/history"
	"github.com/replaycheck/replaycheck/internal/harness/process"
	"github.com/replaycheck/replaycheck/internal/harness/scenario"
	"github.com/replaycheck/replaycheck/internal/wire"
)

// Target is a kind of system under test, started once per set of fakes.
// Implementations: builtin (the embedded gateway, named builtin:…, one row
// in targetKinds), and the kinds package targetfile builds, proxy
// (proxy.go, NewProxy) and client (client.go, NewClient).
type Target interface {
	// Name identifies the target in reports, for example "builtin:guarded".
	Name() string
	// Traits says what the runner needs to know of the target beyond
	// starting it.
	Traits() Traits
	// Start starts an instance wired to fakes. knobs are the scenario's
	// gateway knobs, nil for the instance shared by scenarios without any.
	// The caller closes the instance.
	Start(ctx context.Context, fakes Fakes, knobs *scenario.Gateway) (Instance, error)
}

// Traits are what the runner needs to know of a target beyond starting it.
// The zero value is a target that apps reach over HTTP, that serves every
// endpoint and shares port-0 fakes with the others.
type Traits struct {
	// Client is set for a client target, whose scenario runs are runs of a
	// command, not HTTP requests the harness writes. The runner runs on it
	// only the scenarios made for clients (expect.client) and gives each run
	// fake addresses of its own in Request.Fakes, since a client writes its
	// own prompts and the run token cannot travel in them.
	Client bool
	// Exclusive is set when the target's instances must run one at a time:
	// a proxy on fixed fakes, on a fixed port, or running in a process the
	// harness does not own, and a client whose via proxy is one. The runner
	// runs such a target after the others, on fakes of its own at Fakes.
	Exclusive bool
	// Fakes are the fixed fake addresses of an Exclusive target; empty
	// parts are port 0.
	Fakes FakeAddrs
	// RetryAfterHint, when above zero, asks for Retry-After hints on the
	// error answers the upstream fake injects (retry_after_hint in the
	// file): unless the scenario sets its own, the runner adds
	// retry-after-ms and Retry-After of this duration to every injected
	// error that has neither, and notes it in the history, since it changes
	// the behaviour under test.
	RetryAfterHint time.Duration
	// Endpoints are the endpoints whose app requests the target serves;
	// nil is every one (a proxy finds out from the answers). The built-in
	// gateway has no Gemini front end.
	Endpoints []scenario.Endpoint
	// MCPTransports are the MCP transports the target reaches the ledger
	// over; nil is HTTP only (a proxy, a client whose command and env use
	// {{mcp_url}} or neither). The built-in gateway speaks both; a client
	// whose command or env uses the stdio ledger's command
	// ({{ledger_stdio_json}}, …) speaks stdio. The runner skips a scenario
	// over a transport the target does not speak (see Speaks).
	MCPTransports []wire.MCPTransport
	// Dialects are the model API dialects (chat, responses, messages,
	// gemini) the target calls, as its file declares them; nil is not
	// declared (every run shows which). The runner skips a scenario whose
	// faults act only on dialects the target does not call (see Calls).
	Dialects []string
	// Forward, when set, is the real MCP server every run on the target
	// forwards to in place of the ledger's own tools, unless the scenario
	// names its own (a target file's mcp; see Forward). The runner runs
	// every scenario on such a target on fakes and an instance of its own.
	Forward *Forward
	// Ledger are the ledger settings (protocol, honour_cancellation) of
	// every run on the target, unless the scenario chooses its own (a
	// target file's mcp; see scenario.LedgerSettings.Over). The runner runs
	// every scenario on a target that chooses any on fakes and an instance
	// of its own.
	Ledger scenario.LedgerSettings
	// Resumes is set for a target that can be killed and resumed (a target
	// file's resume, the built-in gateway run as a process of its own): the
	// runner skips a scenario that kills the target (faults.target) on a
	// target without it.
	Resumes bool
}

// Speaks reports whether t reaches the ledger over transport (see
// Traits.MCPTransports); every target speaks MCPTransportAny.
func Speaks(t Target, transport wire.MCPTransport) bool {
	if transport == wire.MCPTransportAny {
		return true
	}
	spoken := t.Traits().MCPTransports
	if spoken == nil {
		return transport == wire.MCPTransportHTTP
	}
	return slices.Contains(spoken, transport)
}

// Calls reports whether t may call a dialect that the faults of s act on
// (see Traits.Dialects and scenario.Scenario.Dialects): true when either
// leaves it open.
func Calls(t Target, s *scenario.Scenario) bool {
	declared, needed := t.Traits().Dialects, s.Dialects()
	return declared == nil || needed == nil || slices.ContainsFunc(needed, func(d string) bool { return slices.Contains(declared, d) })
}

// FakeAddrs are fixed loopback addresses of the fakes.
type FakeAddrs struct {
	// Upstream is the model API fake's host:port, e.g. 127.0.0.1:8765.
	Upstream string
	// MCP is the ledger's host:port, e.g. 127.0.0.1:8766.
	MCP string
}

// Fakes are the URLs of a pair of fakes.
type Fakes struct {
	// Upstream is the model API base URL including /v1.
	Upstream string
	// MCP is the ledger's Streamable HTTP URL.
	MCP string
	// MCPTransport is how the instance is to reach the ledger: over
	// MCPTransportStdio the built-in gateway spawns replaycheck ledger-stdio
	// MCP; MCPTransportAny or MCPTransportHTTP, it connects to MCP. Other
	// targets reach it as their files say (see Traits.MCPTransports).
	MCPTransport wire.MCPTransport
	// Killable says the instance's runs kill it and resume it (a scenario
	// with faults.target): the built-in gateway then runs as a process of
	// its own, which a kill can end.
	Killable bool
}

// Instance is a started target that app requests can be sent through.
type Instance interface {
	// Send sends one app request and reads the whole answer. It returns when
	// the answer ended or ctx is done; Start and End are filled by the caller.
	Send(ctx context.Context, req Request) history.Exchange
	// Limits describes the instance's retry configuration for the history.
	Limits() history.Setup
	// Notes returns remarks for every history of a run on the instance
	// (gateway knobs it could not take); nil when there are none. The runner
	// appends them to History.Notes.
	Notes() []string
	// Output returns the output of the process the harness started for the
	// instance, secrets masked; nil when there is none (the built-in
	// gateway, a proxy the harness does not start, a client, whose output
	// is each run's). The runner takes its Seq before a scenario run and
	// records its Since after it as History.TargetOutput.
	Output() *process.Output
	// CannotRun returns the first error a run found saying the target
	// cannot run at all, a *process.CannotRunError (a client's command, or
	// the program its shell runs, is not found or not executable); nil
	// while there is none. The runner asks after each run; a run that ends
	// so is not judged, and the suite stops with the error (exit 3).
	CannotRun() error
	// Close stops the instance and frees what it holds.
	Close() error
}

// Reachable is an Instance that apps reach at a base URL: the built-in
// gateway's and a proxy's, not a client's. A client target's via uses it to
// put the client in front of the proxy: the client's model API base URLs
// point at BaseURL and its keys are the Authorization bearer of the header.
type Reachable interface {
	Instance
	// BaseURL returns the base URL (without /v1) and the headers an app
	// sends with every request. The header's values are secrets.
	BaseURL() (base string, header http.Header)
}

// Request is one rendered app request.
type Request struct {
	scenario.Request
	// Token is the run token, for targets that need it outside the body.
	Token string
	// Fakes, when set, are the run's own fake addresses: everything that
	// arrives there belongs to the run. Client targets get them (a client
	// sends its own prompts, so the token cannot travel in them); they win
	// over the addresses the instance was started with.
	Fakes *Fakes
	// Kill, when set, kills the instance's process at the scenario's kill
	// point and resumes it (see Kill); only an instance of a target that
	// resumes (Traits.Resumes), started Killable, gets one.
	Kill *Kill
}

// targetKind parses the part of a target name after "KIND:".
type targetKind struct {
	name  string
	parse func(spec string) (Target, error)
	doc   string
}

// targetKinds is the table of target kinds, keyed by the name before ':'.
func targetKinds() []targetKind {
	return []targetKind{
		{"builtin", parseBuiltin, "builtin:guarded (default), builtin:naive, or builtin:BUG[,BUG] — the embedded gateway with those replay bugs switched on"},
	}
}

// Unserved returns the first endpoint of requests that t does not serve
// (see Traits.Endpoints), "" when it serves them all.
func Unserved(t Target, requests []scenario.Request) scenario.Endpoint {
	served := t.Traits().Endpoints
	if served == nil {
		return ""
	}
	for _, r := range requests {
		if !slices.Contains(served, r.Endpoint) {
			return r.Endpoint
		}
	}
	return ""
}

// StartsPerRun reports whether each Start of t starts an instance of its
// own wired to the fakes it is given: the built-in gateway, and a proxy the
// harness starts (start:) on no fixed fakes; not a client, nor a proxy that
// runs already. A client's via must be one, so that each client run can
// have fake addresses of its own.
func StartsPerRun(t Target) bool {
	switch t := t.(type) {
	case *builtin:
		return true
	case *proxy:
		return t.spec.Fakes == nil && t.spec.Start != nil
	}
	return false
}

// IsNamed reports whether arg is a target name with a known kind prefix
// (builtin:guarded), not a target file's path.
func IsNamed(arg string) bool {
	kind, _, ok := strings.Cut(arg, ":")
	if !ok {
		return false
	}
	for _, k := range targetKinds() {
		if k.name == kind {
			return true
		}
	}
	return false
}

// ParseTarget parses a target name such as "builtin:guarded".
func ParseTarget(name string) (Target, error) {
	kind, spec, _ := strings.Cut(name, ":")
	var kinds []string
	for _, k := range targetKinds() {
		if k.name == kind {
			t, err := k.parse(spec)
			if err != nil {
				return nil, fmt.Errorf("target %q: %w", name, err)
			}
			return t, nil
		}
		kinds = append(kinds, k.doc)
	}
	sort.Strings(kinds)
	return nil, fmt.Errorf("target %q: unknown kind %q; want %s", name, kind, strings.Join(kinds, "; "))
}
