// Package target starts the systems under test and sends them app
// requests. A Target is the built-in gateway (ParseTarget) or a target file
// (LoadTargetFile): kind proxy, a gateway at a URL that the harness may
// start in a process group of its own with a config rendered from the fakes'
// URLs, and kind client, a command run once per scenario request with an
// environment pointing at the fakes. ResolveTarget takes either.
//
// Package run schedules scenario runs on targets; what it needs of a target
// beyond Target and Instance it finds through the optional interfaces
// Client, Placer, RetryHinter, Noter, OutputTail and Unrunnable, and a client target's
// via finds a base URL through Reachable.
package target

import (
	"context"
	"fmt"
	"net/http"
	"sort"
	"strings"
	"time"

	"github.com/replaycheck/replaycheck/harness/history"
	"github.com/replaycheck/replaycheck/harness/scenario"
)

// Target is a kind of system under test, started once per set of fakes.
// Implementations: builtin (the embedded gateway, named builtin:…, one row
// in targetKinds), and the target file kinds proxy (target_proxy.go) and
// client (target_client.go), one row each in fileKinds. Adding a named kind
// is one file and a row in targetKinds; adding a file kind is one file with
// its YAML type and a loader, and a row in fileKinds.
type Target interface {
	// Name identifies the target in reports, for example "builtin:guarded".
	Name() string
	// Start starts an instance wired to fakes. knobs are the scenario's
	// gateway knobs, nil for the instance shared by scenarios without any.
	// The caller closes the instance.
	Start(ctx context.Context, fakes Fakes, knobs *scenario.Gateway) (Instance, error)
}

// Fakes are the URLs of a pair of fakes.
type Fakes struct {
	// Upstream is the model API base URL including /v1.
	Upstream string
	// MCP is the ledger's Streamable HTTP URL.
	MCP string
}

// Instance is a started target that app requests can be sent through.
type Instance interface {
	// Send sends one app request and reads the whole answer. It returns when
	// the answer ended or ctx is done; Start and End are filled by the caller.
	Send(ctx context.Context, req Request) history.Exchange
	// Limits describes the instance's retry configuration for the history.
	Limits() history.Setup
	// Close stops the instance and frees what it holds.
	Close() error
}

// Client is a Target whose scenario runs are runs of a command, not HTTP
// requests the harness writes. Implemented by client targets (kind client).
// The runner runs on it only the scenarios made for clients (expect.client)
// and gives each run fake addresses of its own in Request.Fakes, since a
// client writes its own prompts and the run token cannot travel in them.
type Client interface {
	Target
	// ClientTarget marks the target as a client; it does nothing.
	ClientTarget()
}

// Placer is a Target that says where its fakes must listen and whether its
// instances must run one at a time. Implemented by proxy targets (fixed
// fakes, a fixed port, or a running process the harness does not own) and
// by client targets, through their via proxy. The runner runs a target whose
// Placement is exclusive after the others, on fakes of its own at addrs;
// a Target that is not a Placer shares port-0 fakes with the others.
type Placer interface {
	// Placement returns the fixed fake addresses (empty parts are port 0)
	// and whether instances must run one at a time.
	Placement() (addrs FakeAddrs, exclusive bool)
}

// RetryHinter is a Target that wants Retry-After hints on the error answers
// the upstream fake injects. Implemented by proxy and client targets
// (retry_after_hint in the file). Unless the scenario sets its own
// retry_after_hint, the runner adds retry-after-ms and Retry-After of this
// duration to every injected error that has neither, and notes it in the
// history, since it changes the behaviour under test.
type RetryHinter interface {
	// RetryAfterHint is the hint; zero or less asks for none.
	RetryAfterHint() time.Duration
}

// Noter is an Instance with remarks for every history of a run on it.
// Implemented by proxy instances (gateway knobs a proxy the harness does not
// start cannot take) and client instances (gateway knobs a client does not
// have). The runner appends them to History.Notes.
type Noter interface {
	// Notes returns the remarks; nil when there are none.
	Notes() []string
}

// OutputTail is an Instance whose process output the harness captures.
// Implemented by proxy instances (the output of a started proxy, secrets
// masked; nothing when the harness started no process). The runner takes
// OutputSeq before a scenario run and records OutputSince after it as
// History.TargetOutput, the lines the target printed meanwhile.
type OutputTail interface {
	// OutputSeq returns a mark of how much output was written so far.
	OutputSeq() uint64
	// OutputSince returns the kept lines written after mark seq, oldest
	// first.
	OutputSince(seq uint64) []string
}

// Unrunnable is an Instance that can find out, while it runs, that its
// target cannot run at all: a *CannotRunError (a client's command, or the
// program its shell runs, is not found or not executable). Implemented by
// client instances. The runner asks after each run on the instance; a run
// that ends so is not judged, and the suite stops with the error (exit 3).
type Unrunnable interface {
	// CannotRun returns the first such error; nil while there is none.
	CannotRun() error
}

// Reachable is an Instance that apps reach at a base URL: the built-in
// gateway and proxy instances. A client target's via uses it to put the
// client in front of the proxy: the client's model API base URLs point at
// BaseURL and its keys are the Authorization bearer of the header.
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

// EndpointServer is a Target that serves app requests of some endpoints
// only. Implemented by the built-in gateway (chat, responses and messages:
// it has no Gemini front end). A Target that is not one is taken to serve
// every endpoint; proxy targets find out from the answers.
type EndpointServer interface {
	Target
	// Serves reports whether the target serves app requests of endpoint e.
	Serves(e scenario.Endpoint) bool
}

// Unserved returns the first endpoint of requests that t does not serve,
// "" when it serves them all.
func Unserved(t Target, requests []scenario.Request) scenario.Endpoint {
	es, ok := t.(EndpointServer)
	if !ok {
		return ""
	}
	for _, r := range requests {
		if !es.Serves(r.Endpoint) {
			return r.Endpoint
		}
	}
	return ""
}

// IsClient reports whether t is a client target, whose scenario runs are runs
// of a command rather than HTTP requests.
func IsClient(t Target) bool {
	_, ok := t.(Client)
	return ok
}

// PlacementOf returns the fixed fake addresses of t and whether t's
// instances must run one at a time (see Placer); a Target that is no Placer
// shares port-0 fakes.
func PlacementOf(t Target) (FakeAddrs, bool) {
	if p, ok := t.(Placer); ok {
		return p.Placement()
	}
	return FakeAddrs{}, false
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
