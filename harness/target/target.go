package run

import (
	"context"
	"fmt"
	"net/http"
	"sort"
	"strings"

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

// endpointInstance is an Instance that apps reach at a base URL (a proxy or
// the built-in gateway), so a client target can be put in front of it (via).
type endpointInstance interface {
	Instance
	// endpoint returns the base URL (without /v1) and the headers an app
	// sends with every request.
	endpoint() (base string, header http.Header)
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
