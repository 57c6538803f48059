// Package control is the HTTP control API of a running pair of fakes (the
// model upstream and the ledger MCP server), for engineers reproducing a bug
// by hand and for test suites in other languages: read the counts, arm and
// disarm named faults, reset, and read a run's timeline while the fakes
// serve. openapi.yaml (served at Prefix+"openapi.yaml") describes it.
//
// It serves the replaycheck command and its tests; it is not an API and may
// change in any release (replaycheck's Go API is replaychecktest and the
// fakes it arms: fakes/upstream, fakes/ledger, fakes/fault).
//
// Every route is under Prefix:
//
//	GET    /_replaycheck/health             200 {"status":"ok"} once the fakes serve (no key needed)
//	GET    /_replaycheck/openapi.yaml       the OpenAPI 3.1 description of this API
//	GET    /_replaycheck/counts             counts per run token and in total, lines files lost,
//	                                        faults that never fired, the ledger's MCP sessions
//	GET    /_replaycheck/faults[?run=T]     the armed faults, with ids, matched and fired counts
//	POST   /_replaycheck/faults             add faults {run, upstream: [...], mcp: [...]}; 201 with their ids
//	PUT    /_replaycheck/faults             replace the faults of the body's run (or the global ones)
//	DELETE /_replaycheck/faults[?run=T]     disarm every fault, or those armed for run T (?run= the global ones)
//	GET    /_replaycheck/faults/{id}        one armed fault
//	DELETE /_replaycheck/faults/{id}        disarm one fault
//	POST   /_replaycheck/reset              forget counts, events and faults (the ledger file stays)
//	GET    /_replaycheck/timeline?run=T     what both fakes saw for run T ("" = no token), in order
//
// A wrong method gets 405 with Allow. A request from a web page is refused
// (see loopback.Guard: a foreign Origin or Host). Without a key, only
// loopback clients are served (403); with a key set, every request but
// health must carry `Authorization: Bearer KEY` (401 with WWW-Authenticate
// otherwise; the key is compared in constant time), from any address. A
// POST or PUT must carry `Content-Type: application/json` or a YAML type
// (application/yaml, application/x-yaml, text/yaml), else 415: no HTML form
// can send one (a page cannot send PUT or DELETE without a CORS preflight,
// which the API never answers). A bad request gets 400 with {"error": …} naming the
// problem and, for a body, its line and column; nothing of it is applied.
package control

import (
	"crypto/subtle"
	"encoding/json"
	"errors"
	"fmt"
	"maps"
	"mime"
	"net"
	"net/http"
	"slices"
	"strings"
	"time"

	"github.com/replaycheck/replaycheck/fakes/ledger"
	"github.com/replaycheck/replaycheck/fakes/upstream"
	"github.com/replaycheck/replaycheck/internal/linefile"
	"github.com/replaycheck/replaycheck/internal/loopback"
	"github.com/replaycheck/replaycheck/internal/runtoken"
	"github.com/replaycheck/replaycheck/internal/secret"
	"github.com/replaycheck/replaycheck/internal/wire"
	"github.com/replaycheck/replaycheck/internal/yamlfile"
)

// Prefix is the path under which the API is served.
const Prefix = "/_replaycheck/"

// maxBody bounds a request body.
const maxBody = 1 << 20

// API serves the control API of one pair of fakes. Upstream and Ledger are
// required; Key, when not "", must be presented as a bearer token (it is
// never logged or echoed). It is safe for concurrent use.
type API struct {
	Upstream *upstream.Server
	Ledger   *ledger.Server
	Key      string
	// Files are the files the fakes append to (ledger file, upstream log,
	// cassette being recorded), whose lost lines GET counts reports.
	Files []*linefile.File
	// Runs, when set, bounds the runs the fakes keep; GET counts prunes
	// first and says how many runs were dropped.
	Runs *RunLimit
}

// Handler returns the API's handler, to be mounted at Prefix.
func (a *API) Handler() http.Handler {
	mux := http.NewServeMux()
	route := func(path string, methods map[string]http.HandlerFunc) {
		mux.Handle(Prefix+path, byMethod(methods))
	}
	route("health", map[string]http.HandlerFunc{http.MethodGet: func(w http.ResponseWriter, _ *http.Request) {
		writeJSON(w, http.StatusOK, map[string]string{"status": "ok"})
	}})
	route("openapi.yaml", map[string]http.HandlerFunc{http.MethodGet: func(w http.ResponseWriter, _ *http.Request) {
		w.Header().Set("Content-Type", "application/yaml")
		_, _ = w.Write(Spec) // the client went away; nothing to do
	}})
	route("counts", map[string]http.HandlerFunc{http.MethodGet: a.counts})
	route("faults", map[string]http.HandlerFunc{
		http.MethodGet: a.listFaults, http.MethodPost: a.addFaults, http.MethodPut: a.replaceFaults, http.MethodDelete: a.clearFaults,
	})
	route("faults/{id}", map[string]http.HandlerFunc{http.MethodGet: a.getFault, http.MethodDelete: a.deleteFault})
	route("reset", map[string]http.HandlerFunc{http.MethodPost: a.reset})
	route("timeline", map[string]http.HandlerFunc{http.MethodGet: a.timeline})
	mux.HandleFunc(Prefix, func(w http.ResponseWriter, r *http.Request) {
		writeError(w, http.StatusNotFound, fmt.Sprintf("%s %s: no such control route; see GET health, GET openapi.yaml, GET counts, GET/POST/PUT/DELETE faults, GET/DELETE faults/{id}, POST reset, GET timeline under %s", r.Method, r.URL.Path, Prefix))
	})
	return loopback.Guard("control API", http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path != Prefix+"health" {
			if a.Key == "" && !fromLoopback(r) {
				writeError(w, http.StatusForbidden, "the control API answers loopback clients only when serve has no control key (--control-key)")
				return
			}
			if a.Key != "" && !bearer(r, a.Key) {
				w.Header().Set("WWW-Authenticate", `Bearer realm="replaycheck control API"`)
				writeError(w, http.StatusUnauthorized, "missing or wrong Authorization: Bearer key (the control key serve was started with)")
				return
			}
		}
		if (r.Method == http.MethodPost || r.Method == http.MethodPut) && !documentType(r.Header.Get("Content-Type")) {
			writeError(w, http.StatusUnsupportedMediaType, fmt.Sprintf("%s %s: Content-Type %q; send application/json or application/yaml", r.Method, r.URL.Path, r.Header.Get("Content-Type")))
			return
		}
		mux.ServeHTTP(w, r)
	}))
}

// byMethod serves each request with the handler of its method, and answers
// any other method 405 with Allow listing the route's methods.
func byMethod(methods map[string]http.HandlerFunc) http.Handler {
	allow := strings.Join(slices.Sorted(maps.Keys(methods)), ", ")
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		h, ok := methods[r.Method]
		if !ok {
			w.Header().Set("Allow", allow)
			writeError(w, http.StatusMethodNotAllowed, fmt.Sprintf("%s %s: method not allowed; this route takes %s", r.Method, r.URL.Path, allow))
			return
		}
		h(w, r)
	})
}

// documentType reports whether the media type of a Content-Type header is
// JSON or YAML.
func documentType(contentType string) bool {
	t, _, err := mime.ParseMediaType(contentType)
	if err != nil {
		return false
	}
	switch t {
	case "application/json", "application/yaml", "application/x-yaml", "text/yaml", "text/x-yaml":
		return true
	}
	return false
}

func fromLoopback(r *http.Request) bool {
	host, _, err := net.SplitHostPort(r.RemoteAddr)
	if err != nil {
		return false
	}
	ip := net.ParseIP(host)
	return ip != nil && ip.IsLoopback()
}

func bearer(r *http.Request, key string) bool {
	got, ok := secret.Bearer(r.Header.Get("Authorization"))
	return ok && subtle.ConstantTimeCompare([]byte(got), []byte(key)) == 1
}

// RunCounts are the counts of one run token ("" for requests that carried
// none), as the count table of `replaycheck serve` shows them.
type RunCounts struct {
	Token    string              `json:"token"`
	Upstream wire.UpstreamCounts `json:"upstream"`
	MCP      wire.MCPCounts      `json:"mcp"`
	// LastActive is when either fake last saw the run; zero in the total.
	LastActive time.Time `json:"last_active,omitzero"`
}

// Counts is the answer of GET counts.
type Counts struct {
	Runs  []RunCounts `json:"runs"`
	Total RunCounts   `json:"total"`
	// WriteErrors lists the files that lost lines (a full disk); empty when
	// every line was written.
	WriteErrors []WriteError `json:"write_errors"`
	// UnfiredFaults lists the armed faults, global and per run, that have
	// not acted on any request (yet): one that matched requests it could not
	// act on says so by its matched count.
	UnfiredFaults []UnfiredFault `json:"unfired_faults"`
	// MCPSessions are the ledger's open MCP sessions and the initializes
	// refused at its cap.
	MCPSessions ledger.Sessions `json:"mcp_sessions"`
	// MCPKeys are the idempotency keys the ledger remembers for
	// commit_write_keyed, and those it forgot with the runs that saw them.
	MCPKeys ledger.Keys `json:"mcp_keys"`
	// MCPLines are the ledger lines the ledger keeps in memory (read_ledger
	// returns them), and those it forgot with their runs or past the limit
	// of no run (RunLimit); the ledger file keeps them all.
	MCPLines ledger.Lines `json:"mcp_lines"`
	// DroppedRuns counts the runs forgotten, least recently active first,
	// to keep MaxRuns (RunLimit); their counts stay in the total. MaxRuns
	// is 0 when every run is kept.
	DroppedRuns int `json:"dropped_runs"`
	MaxRuns     int `json:"max_runs,omitempty"`
}

// WriteError is what one file lost: lines whose append failed (each is
// absent from the file, never torn) and the first error.
type WriteError struct {
	File    string `json:"file"`
	Written int    `json:"written"`
	Lost    int    `json:"lost"`
	Error   string `json:"error"`
}

// UnfiredFault is an armed fault that has not fired: Upstream or MCP holds
// it, in the shape POST faults takes, for Run ("" = every request).
type UnfiredFault struct {
	// ID is its id for GET and DELETE faults/{id}.
	ID       string          `json:"id"`
	Run      string          `json:"run"`
	Upstream *upstream.Fault `json:"upstream,omitempty"`
	MCP      *ledger.Fault   `json:"mcp,omitempty"`
	// Matched counts the requests it matched without acting on them.
	Matched int `json:"matched"`
}

// CountsOf returns the counts of every run token either fake keeps, in
// token order, the total, what files lost, the faults that did not fire and
// the ledger's sessions. With limit (nil for none) it prunes the runs first
// and says how many were dropped.
func CountsOf(u *upstream.Server, l *ledger.Server, limit *RunLimit, files ...*linefile.File) Counts {
	var dropped, maxRuns int
	if limit != nil {
		limit.Prune()
		dropped, maxRuns = limit.Dropped(), limit.Max
	}
	active := lastActive(u, l)
	tokens := slices.Sorted(maps.Keys(active))
	out := Counts{Runs: []RunCounts{}, Total: RunCounts{Token: "", Upstream: u.Total(), MCP: l.Total()},
		WriteErrors: writeErrors(files), UnfiredFaults: unfired(u, l, tokens), MCPSessions: l.Sessions(),
		MCPKeys: l.Keys(), MCPLines: l.Lines(), DroppedRuns: dropped, MaxRuns: maxRuns}
	for _, t := range tokens {
		rc := RunCounts{Token: t, Upstream: u.Counts(t), MCP: l.Counts(t), LastActive: active[t]}
		if rc.Upstream.Initial+rc.Upstream.FollowUp+rc.MCP.CallsTotal()+rc.MCP.Messages+rc.MCP.WriteFailures == 0 {
			continue
		}
		out.Runs = append(out.Runs, rc)
	}
	return out
}

func writeErrors(files []*linefile.File) []WriteError {
	out := []WriteError{}
	for _, f := range files {
		if l := f.Loss(); l.Err != nil {
			out = append(out, WriteError{File: l.Path, Written: l.Written, Lost: l.Lost, Error: l.Err.Error()})
		}
	}
	return out
}

// unfired returns the faults armed globally and for tokens that did not
// fire, upstream first.
func unfired(u *upstream.Server, l *ledger.Server, tokens []string) []UnfiredFault {
	out := []UnfiredFault{}
	runs := append([]string{""}, slices.DeleteFunc(slices.Clone(tokens), func(t string) bool { return t == "" })...)
	for _, run := range runs {
		up, reps := u.ArmedFaults(run)
		for i, r := range reps {
			if r.Fired == 0 {
				out = append(out, UnfiredFault{ID: upstreamID(r.ID), Run: run, Upstream: &up[i], Matched: r.Matched})
			}
		}
		mcp, reps := l.ArmedFaults(run)
		for i, r := range reps {
			if r.Fired == 0 {
				out = append(out, UnfiredFault{ID: mcpID(r.ID), Run: run, MCP: &mcp[i], Matched: r.Matched})
			}
		}
	}
	return out
}

func (a *API) counts(w http.ResponseWriter, _ *http.Request) {
	writeJSON(w, http.StatusOK, CountsOf(a.Upstream, a.Ledger, a.Runs, a.Files...))
}

// Problem is the body of a 400 answer: what is wrong and, in a request body,
// where (1-based line and column; 0 when it is not at one place).
type Problem struct {
	Error  string `json:"error"`
	Line   int    `json:"line,omitempty"`
	Column int    `json:"column,omitempty"`
}

func problem(err error) *Problem {
	var ye *yamlfile.Error
	if !errors.As(err, &ye) {
		return &Problem{Error: err.Error()}
	}
	return &Problem{Error: ye.Msg, Line: ye.Line, Column: ye.Col}
}

func (a *API) reset(w http.ResponseWriter, _ *http.Request) {
	a.Upstream.Reset()
	a.Ledger.Reset()
	writeJSON(w, http.StatusOK, map[string]any{"reset": true, "ledger_file": "kept"})
}

// Event is one thing a fake saw for a run, in the timeline.
type Event struct {
	// At is the event's time (RFC 3339 with nanoseconds).
	At time.Time `json:"at"`
	// Side is upstream or mcp; Upstream or MCP holds the fake's own record.
	Side     string                `json:"side"`
	Upstream *wire.UpstreamRequest `json:"upstream,omitempty"`
	MCP      *wire.MCPEvent        `json:"mcp,omitempty"`
}

func (a *API) timeline(w http.ResponseWriter, r *http.Request) {
	q := r.URL.Query()
	if !q.Has("run") {
		writeError(w, http.StatusBadRequest, `run: missing; give ?run=TOKEN, or ?run= for the requests that carried no token`)
		return
	}
	run := q.Get("run")
	if run != "" && !runtoken.Valid(run) {
		writeError(w, http.StatusBadRequest, fmt.Sprintf("run: %q is not a run token", run))
		return
	}
	var out []Event
	for _, u := range a.Upstream.Requests(run) {
		out = append(out, Event{At: u.Time, Side: "upstream", Upstream: &u})
	}
	for _, e := range a.Ledger.Events(run) {
		out = append(out, Event{At: e.Time, Side: "mcp", MCP: &e})
	}
	slices.SortStableFunc(out, func(x, y Event) int { return x.At.Compare(y.At) })
	if out == nil {
		out = []Event{}
	}
	writeJSON(w, http.StatusOK, map[string]any{"run": run, "events": out})
}

func writeJSON(w http.ResponseWriter, status int, v any) {
	b, err := json.MarshalIndent(v, "", "  ")
	if err != nil {
		status, b = http.StatusInternalServerError, []byte(`{"error":"encoding the answer failed"}`)
	}
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(status)
	_, _ = w.Write(append(b, '\n')) // the client went away; nothing to do
}

func writeError(w http.ResponseWriter, status int, msg string) {
	writeJSON(w, status, Problem{Error: msg})
}
