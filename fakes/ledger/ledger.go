// Package ledger is the ledger fake: a real MCP server, on the official Go
// SDK over Streamable HTTP, whose tools append lines to a ledger, and which
// counts every tools/call, write, idempotency key and cancellation per run
// token, with faults that fail, drop, error or delay a call.
//
// It is part of replaycheck's Go API: a Go test serves it through
// replaychecktest and arms its Fault type (see that package).
//
// Tools: commit_write(entry) appends one line; commit_write_keyed(entry,
// idempotency_key) appends only the first time a key is seen and answers
// later calls with the first result; read_ledger() returns the lines. Their
// annotations (readOnlyHint, idempotentHint, destructiveHint) are
// configurable, so a scenario can advertise misleading hints.
//
// Every tools/call is attributed to a run: the run whose own address it
// arrived at (a request whose context carries a token, see
// runtoken.Handler), else the run token (see internal/runtoken) found in its
// arguments; calls without either count under "" (unattributed). At a run's
// own address the other MCP messages (initialize, tools/list, notifications,
// a session's GET and DELETE) are events of that run too; elsewhere they are
// shared session traffic, counted under "".
//
// A ledger-stdio process (replaycheck ledger-stdio, the stdio server a
// client spawns, which forwards its calls here) sets StdioSpawnHeader on its
// requests: its initialize is recorded as one spawn (wire.MCPSpawn, counted
// in MCPCounts.Spawns) for the run whose address it arrived at, and its end
// as one wire.MCPExit (counted in MCPCounts.Exits): by a stdio fault (when
// the ledger tells it to exit), a clean end (its DELETE, StdioEndHeader
// saying why), or gone (its standalone stream's connection closed while its
// session was open: killed or crashed), with the call it left unanswered.
//
// The stdio fault kinds (stdio_exit, stdio_hang, stdio_malformed_line;
// transport stdio in the table) act on the ledger-stdio process and fire
// only on what comes from one. The ledger arms and counts them per run, so
// their times span respawns, and tells the process: a stdio_exit at start
// refuses the process's initialize with StdioFaultHeader; on a call, the
// tool handler attaches the fault's name to the result under the _meta key
// StdioFaultMeta (the director hook), which the process strips and obeys.
//
// A call counts as cancelled when, before its answer was written, the client
// closed the POST that carried it, or sent notifications/cancelled for it on
// its session; each call counts at most once, and a notice for an answered
// call is not a cancellation (some clients send one after every call). The
// go-sdk client does both when a CallTool context ends. Stateless requests
// have no session to scope request ids, so there only the closed POST counts.
//
// Each fault kind owns its behaviour, as a toxic does in toxiproxy: its file
// (fault_<name>.go) holds its settings, their validation (check), its effect
// at the hooks it acts at, and its explore probes. The hooks (declared in
// fault.go) are asked in Server.ServeHTTP, an http.Handler wrapped around the
// SDK's handler, since a tool handler's context belongs to the MCP session,
// not to the POST: refusing a session step (fail_before_execute with a
// Method), refusing a POST before the SDK sees it (fail_before_execute,
// unauthorized, expire_session), the POST going to the tools (delay records
// itself); in the tool handlers: before execution (is_error), after it
// (change_tools), holding the answer (delay); and at the answer on the
// stream, the wrapper's ResponseWriter (drop_after_execute and expire_session
// after execute cut it, duplicate_answer writes its event twice); and, for
// calls from a ledger-stdio process, in the result the process obeys
// (stdio_exit before execute preempts the tool; stdio_exit, stdio_hang and
// stdio_malformed_line direct the process). The
// wrapper, the handlers and the writer ask the faults that fired on a call at
// each hook and know no kind. A call of a tool no longer offered is recorded
// as one (its wire.MCPCall event says UnknownTool). Sessions are bounded on request:
// Config.SessionTimeout closes idle ones and Config.MaxSessions refuses an
// initialize past the cap (Server.Sessions counts both).
//
// With Config.Forward the ledger is a forwarder in front of a real MCP
// server (forward.go): it offers that server's tools instead of its own and
// forwards each call that reaches a tool handler once, so every fault acts
// at the forwarding point; what the forwarder saw is recorded as calls,
// writes and forward_unknown faults (see Forward). Forward.Record writes the
// forwarded exchanges to an MCP cassette, and Forward.Cassette replays one
// in place of the server, offline (cassette.go).
//
// The faults armed on the ledger live in a fault.Registry (fakes/fault),
// shared with the upstream fake: ids, the global and per-run lists, their
// counts and reports (wire.FaultReport), and the firing sequence.
//
// Each kind's row of the fault table (faultKinds, a fault.Kind: the table
// shape the upstream fake shares) is returned by its file: its YAML name, how
// a Fault carries it, its explore probes and its MCP transport; its action
// is a fault.Action (Check validates its settings, Holds says how long a
// firing holds its run back).
//
// Adding a fault kind NAME, a stdio one included, takes these files:
//   - fakes/ledger/fault_NAME.go: its settings type implementing action
//     (Check, Holds) and the hook interfaces of the points where it acts
//     (director for one a ledger-stdio process carries out), its probes,
//     and NAMEKind returning its row (name, Get, probes, transport);
//   - fakes/ledger/fault.go: its field in Fault and NAMEKind() in
//     faultKinds;
//   - internal/wire/mcpfault.go: its MCP fault name (the fault events'
//     name the history stores) and its row in MCPFaultMeanings — whether the
//     tool ran, whether the fault ends the call, what the client sees, its
//     words in a report, and its stdio effect (what a ledger-stdio process
//     does: fakes/ledgerstdio reads the row);
//   - fakes/ledger/fault_NAME_test.go: its test (TestFaultKindsHaveMeanings
//     checks the row).
//
// Generated, not written: the JSON Schema (go test
// ./internal/harness/targetfile -update), the control API's fault schemas
// (go test ./fakes/control -run TestSpecFaultSchemas -update) and the
// scenario goldens that list the kinds (go test ./internal/harness/scenario
// -update). Kinds, ParseFault's messages, explore's kinds, the rules, the
// run, the reports and the ledger-stdio process follow from the two tables;
// internal/checklist's TestChecklists adds a throwaway stdio kind this way.
// Only a stdio effect no kind had before (a new wire.StdioEffect) also takes
// its case in fakes/ledgerstdio/fault.go (stdout.Write); only a probe at a
// new kind of point takes a Site (fakes/fault/probe.go) and its case in
// internal/harness/explore; a rule that judges the kind by name is a
// choice, not a need. The user documentation of the kinds is
// docs/reference/faults.md.
package ledger

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"maps"
	"net/http"
	"sync"
	"sync/atomic"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/replaycheck/replaycheck/fakes/fault"
	"github.com/replaycheck/replaycheck/internal/linefile"
	"github.com/replaycheck/replaycheck/internal/wire"
)

// DefaultMaxBodyBytes bounds a request body when Config.MaxBodyBytes is 0.
const DefaultMaxBodyBytes = 1 << 20

// DefaultBodyTimeout bounds reading a request body when Config.BodyTimeout
// is 0.
const DefaultBodyTimeout = 30 * time.Second

// Config configures a ledger Server.
type Config struct {
	// Path is the ledger file, one line per write, appended to (created if
	// missing) and synced before a tool answers; "" keeps the ledger in memory only.
	Path string
	// File, when set in place of Path, is a ledger file already open and
	// shared with other servers (one `replaycheck run --ledger`, whose runs
	// each have fakes of their own): the server appends its lines to it
	// and leaves it open at Close. Line numbers in answers count this
	// server's writes.
	File *linefile.File
	// Stateless serves stateless Streamable HTTP only (no sessions): every
	// request, of whichever version, on go-sdk's stateless handler, as
	// `serve --stateless` always did. Without it the ledger serves both
	// generations (see Protocol).
	Stateless bool
	// Protocol pins the MCP protocol version the ledger speaks; "" (the
	// default) negotiates as a current server does: 2026-07-28 to clients
	// that ask for it (server/discover, or a request that names it in its
	// Mcp-Protocol-Version header or _meta: served statelessly), an older
	// version to clients that initialize (a session, at the version asked
	// for, else 2025-11-25). Pinned to 2026-07-28 the ledger serves only
	// self-describing requests and answers initialize 404 with "method not
	// found"; pinned to an older version it serves only sessions, answers
	// every initialize with that version and refuses server/discover with
	// the SDK's unsupported-version error (-32022) listing it, so a client
	// falls back to initialize. New refuses a version not in
	// wire.MCPProtocols.
	Protocol wire.MCPProtocol
	// HonourCancellation makes the ledger's tools honour cancellation as
	// the 2026-07-28 specification asks a server to: a call whose request
	// stream closed (or that the client cancelled) before its write
	// committed writes nothing. By default a call writes once it ran, as
	// most servers do.
	HonourCancellation bool
	// Annotations overrides tool annotations by tool name; nil or a missing
	// tool keeps the defaults (read_ledger is readOnly, commit_write_keyed is
	// idempotent, no tool is destructive).
	Annotations map[string]Annotations
	// Logger receives what the ledger does; nil discards.
	Logger *slog.Logger
	// MaxBodyBytes bounds a request body; 0 means DefaultMaxBodyBytes.
	MaxBodyBytes int64
	// BodyTimeout bounds reading a POST body, so a client that sends it
	// slowly cannot hold a connection; a body not read in time gets 408. 0
	// means DefaultBodyTimeout.
	BodyTimeout time.Duration
	// Now is the clock for event times; nil means time.Now.
	Now func() time.Time
	// SessionTimeout closes an MCP session that received no request for
	// this long (its standalone GET stream does not count); 0 never does.
	SessionTimeout time.Duration
	// Forward, when set, makes the ledger a forwarder in front of a real MCP
	// server: it offers that server's tools instead of its own and forwards
	// their calls (see Forward). New connects to the server; Close
	// disconnects (and ends a spawned one).
	Forward *Forward
	// MaxSessions caps the open MCP sessions: past it an initialize is
	// refused (503 with a JSON-RPC error saying why) until one ends; 0 sets
	// no cap.
	MaxSessions int
}

// Annotations are the hints a tool advertises in tools/list. A nil field
// keeps the tool's default. In YAML and JSON: readOnlyHint, idempotentHint,
// destructiveHint.
type Annotations struct {
	ReadOnly    *bool `json:"readOnlyHint,omitempty" yaml:"readOnlyHint,omitempty" jsonschema_description:"Advertise readOnlyHint (the tool does not modify its environment)."`
	Idempotent  *bool `json:"idempotentHint,omitempty" yaml:"idempotentHint,omitempty" jsonschema_description:"Advertise idempotentHint (repeated calls with the same arguments have no additional effect)."`
	Destructive *bool `json:"destructiveHint,omitempty" yaml:"destructiveHint,omitempty" jsonschema_description:"Advertise destructiveHint (the tool may perform destructive updates)."`
}

// Server is the ledger MCP server. Its methods are safe for concurrent use.
// Callers mount ServeHTTP at /mcp and call Close when done.
type Server struct {
	log         *slog.Logger
	now         func() time.Time
	maxBody     int64
	bodyTimeout time.Duration

	// honourCancel is Config.HonourCancellation (see commit).
	honourCancel bool

	sessionTimeout  time.Duration
	maxSessions     int
	admit           sync.Mutex // held while a session opens under maxSessions
	sessionsRefused atomic.Int64
	sessionsLive    atomic.Int64 // initialized sessions not closed yet

	mcp     *mcp.Server
	gen     generations // the SDK's Streamable HTTP handlers (protocol.go)
	journal *journal
	fwd     *forwarder // nil unless forwarding (Config.Forward)

	closing   chan struct{} // closed by Close: delays end
	closeOnce sync.Once
	closeErr  error

	posts sync.Map // postKey → *post, until its calls are claimed (see register)

	mu          sync.Mutex
	runs        map[string]*run         // by run token; "" holds calls without one
	total       *run                    // counts and keys over all runs
	faults      fault.Registry[armable] // global and per-run
	annotations map[string]Annotations
	dedup       map[string]*keyedWrite // commit_write_keyed results by key
	// keyRuns counts, per idempotency key, the runs kept that saw it; a key
	// and its dedup entry are forgotten with the last of them (Forget).
	keyRuns       map[string]int
	keysForgotten int                   // keys Forget dropped
	inflight      map[inflightKey]*call // unanswered calls by session and request id
	changed       chan struct{}         // closed and replaced on every event
	// tools maps each offered tool name to the ledger tool it works as
	// (change_tools renames and adds tools).
	tools map[string]string
	// listSent counts the notifications/tools/list_changed sent per session.
	listSent map[*mcp.ServerSession]uint64
	// listed counts the tools/list requests per session id.
	listed map[string]uint64
	// listens are the open subscriptions/listen streams of stateless
	// clients (2026-07-28), each with the run of the address it came to.
	listens map[*mcp.ServerSession]string
	// relistWait bounds a change_tools answer's wait for a relist
	// (notifyWait; tests set it).
	relistWait time.Duration
	// stdioEnded holds the sessions of the ledger-stdio processes whose
	// end was recorded, each listed in the run it was recorded for
	// (run.stdioEnded), with which it is forgotten.
	stdioEnded map[string]bool
	// stdioHeld holds, by session id, the call whose answer a ledger-stdio
	// process was told to hold (stdio_hang): its client has no answer.
	stdioHeld map[string]*call
	// protocols holds, by session id, the version each open session was
	// initialized with.
	protocols map[string]wire.MCPProtocol
}

// New returns a ledger server. It opens the ledger file when cfg.Path is set;
// the caller must Close the server.
func New(cfg Config) (*Server, error) {
	log := cfg.Logger
	if log == nil {
		log = slog.New(slog.NewTextHandler(io.Discard, nil))
	}
	now := cfg.Now
	if now == nil {
		now = time.Now
	}
	maxBody := cfg.MaxBodyBytes
	if maxBody <= 0 {
		maxBody = DefaultMaxBodyBytes
	}
	bodyTimeout := cfg.BodyTimeout
	if bodyTimeout <= 0 {
		bodyTimeout = DefaultBodyTimeout
	}
	if err := checkProtocol(cfg.Protocol); err != nil {
		return nil, err
	}
	if cfg.Forward != nil && len(cfg.Annotations) > 0 {
		return nil, errors.New("ledger: annotations are the ledger's tools' hints; a forwarded server advertises its own (see Forward.Writes)")
	}
	for tool := range cfg.Annotations {
		if !isTool(tool) {
			return nil, fmt.Errorf("ledger annotations: unknown tool %q; want one of %v", tool, toolNames())
		}
	}
	if cfg.Path != "" && cfg.File != nil {
		return nil, errors.New("ledger: Path and File are exclusive")
	}
	j, err := openJournal(cfg.Path, cfg.File)
	if err != nil {
		return nil, fmt.Errorf("ledger: %w", err)
	}
	s := &Server{
		log:         log,
		now:         now,
		maxBody:     maxBody,
		bodyTimeout: bodyTimeout,
		journal:     j,

		sessionTimeout: cfg.SessionTimeout,
		maxSessions:    cfg.MaxSessions,
		closing:        make(chan struct{}),
		runs:           map[string]*run{},
		total:          newRun(),
		annotations:    maps.Clone(cfg.Annotations),
		dedup:          map[string]*keyedWrite{},
		keyRuns:        map[string]int{},
		inflight:       map[inflightKey]*call{},
		changed:        make(chan struct{}),
		tools:          baseTools(),
		listSent:       map[*mcp.ServerSession]uint64{},
		listens:        map[*mcp.ServerSession]string{},
		listed:         map[string]uint64{},
		relistWait:     notifyWait,
		stdioEnded:     map[string]bool{},
		stdioHeld:      map[string]*call{},
		protocols:      map[string]wire.MCPProtocol{},
	}
	if s.annotations == nil {
		s.annotations = map[string]Annotations{}
	}
	s.honourCancel = cfg.HonourCancellation
	s.mcp = mcp.NewServer(&mcp.Implementation{Name: "replaycheck-ledger", Version: "1"}, serverOptions(cfg, log))
	s.mcp.AddReceivingMiddleware(s.callMiddleware, s.forwardUnlisted) // the first is outermost
	s.mcp.AddSendingMiddleware(s.listChangedMiddleware)
	if cfg.Forward != nil {
		fwd, err := s.connectForward(*cfg.Forward)
		if err != nil {
			_ = j.close()
			return nil, fmt.Errorf("ledger: %w", err)
		}
		s.fwd = fwd
		s.tools = s.baseToolsLocked()
	}
	for tool := range s.tools {
		s.addTool(tool, tool, s.annotations[tool])
	}
	if s.fwd != nil {
		s.fwd.install()
	}
	s.gen = newGenerations(s.mcp, cfg, mcp.StreamableHTTPOptions{
		Logger:              log,
		MaxRequestBodyBytes: maxBody,
		SessionTimeout:      cfg.SessionTimeout,
	})
	return s, nil
}

// Close ends pending delays, writes what is pending and closes the ledger
// file. Later writes fail; counts and events stay readable.
func (s *Server) Close() error {
	s.closeOnce.Do(func() {
		close(s.closing)
		if s.fwd != nil {
			if err := s.fwd.close(); err != nil {
				s.log.Warn("forward: closing the connection to the MCP server", "err", err)
			}
		}
		s.closeErr = s.journal.close()
	})
	return s.closeErr
}

// Arm sets the faults of one run token, replacing earlier ones and their
// occurrence counts; token "" sets the global faults, which apply to every
// call. A call is matched against its token's faults first, then the global
// ones; each entry counts its own matching calls for Times. Arm validates
// every fault first and changes nothing on error; the error names the fault.
func (s *Server) Arm(token string, faults []Fault) error {
	a, err := s.armable(faults)
	if err != nil {
		return err
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	if token != "" {
		s.runLocked(token)
	}
	s.faults.Arm(token, a)
	s.log.Info("ledger faults armed", "token", token, "faults", len(a))
	return nil
}

// FaultReports returns, in armed order, what became of the faults armed for
// token ("" = the global faults): the calls (or session steps, or spawns)
// each matched and those it acted on; nil when none are armed.
func (s *Server) FaultReports(token string) []wire.FaultReport {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.faults.Reports(token)
}

// ArmedFaults returns the faults armed for token ("" = the global faults)
// and their reports (FaultReports), index by index, both taken at once.
// The faults share their pointer fields with the server's copies and must
// not be modified.
func (s *Server) ArmedFaults(token string) ([]Fault, []wire.FaultReport) {
	s.mu.Lock()
	defer s.mu.Unlock()
	armed, reports := s.faults.Armed(token)
	faults := make([]Fault, len(armed))
	for i, a := range armed {
		faults[i] = a.fault
	}
	return faults, reports
}

// SetAnnotations replaces the annotations of one tool; later tools/list
// answers show them (the SDK notifies sessions that the list changed). An
// unknown tool is ignored and logged.
func (s *Server) SetAnnotations(tool string, a Annotations) {
	if !isTool(tool) {
		s.log.Warn("ledger annotations for an unknown tool ignored", "tool", tool)
		return
	}
	s.mu.Lock()
	s.annotations[tool] = a
	var names []string
	for name, base := range s.tools {
		if base == tool {
			names = append(names, name)
		}
	}
	s.mu.Unlock()
	for _, name := range names {
		s.addTool(name, tool, a)
	}
}

// Counts returns the counts of one run token; "" holds calls whose arguments
// carry no token.
func (s *Server) Counts(token string) wire.MCPCounts {
	s.mu.Lock()
	defer s.mu.Unlock()
	if r, ok := s.runs[token]; ok {
		return r.counts.Clone()
	}
	return wire.MCPCounts{Calls: map[string]int{}}
}

// Total returns the counts over all run tokens.
func (s *Server) Total() wire.MCPCounts {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.total.counts.Clone()
}

// Tokens returns the run tokens the ledger has seen or armed, unordered.
func (s *Server) Tokens() []string {
	s.mu.Lock()
	defer s.mu.Unlock()
	out := make([]string, 0, len(s.runs))
	for t := range s.runs {
		out = append(out, t)
	}
	return out
}

// MaxRunEvents bounds the events kept per run token: past it, the oldest half
// is forgotten (counts stay exact), so a long `serve` session cannot grow
// without bound (Trim bounds the events of no run more tightly).
const MaxRunEvents = 1 << 16

// Events returns a copy of one run token's events, in the order they happened
// (at most the last MaxRunEvents).
func (s *Server) Events(token string) []wire.MCPEvent {
	s.mu.Lock()
	defer s.mu.Unlock()
	if r, ok := s.runs[token]; ok {
		return append([]wire.MCPEvent(nil), r.events...)
	}
	return nil
}

// File returns the ledger file, whose Loss counts the lines it wrote and
// lost; nil when the ledger is in memory only.
func (s *Server) File() *linefile.File { return s.journal.file }

// Entries returns the ledger lines written by this server that it keeps, in
// write order (the order of the file): all of them but those of the runs
// forgotten (Forget) and the oldest of no run (Trim).
func (s *Server) Entries() []string { return s.journal.snapshot() }

// WaitFor blocks until cond holds for the counts of token, or ctx ends. It
// returns the counts that satisfied cond, or the last counts with ctx's error.
// It is how a caller waits for the ledger to observe something that happens
// after the client already returned, such as a cancellation.
func (s *Server) WaitFor(ctx context.Context, token string, cond func(wire.MCPCounts) bool) (wire.MCPCounts, error) {
	for {
		s.mu.Lock()
		var c wire.MCPCounts
		if r, ok := s.runs[token]; ok {
			c = r.counts.Clone()
		} else {
			c = wire.MCPCounts{Calls: map[string]int{}}
		}
		changed := s.changed
		s.mu.Unlock()
		if cond(c) {
			return c, nil
		}
		select {
		case <-changed:
		case <-ctx.Done():
			return c, fmt.Errorf("waiting for ledger counts of %q: %w", token, ctx.Err())
		}
	}
}

// runLocked returns the run of token, creating it, and marks it active
// now. s.mu must be held.
func (s *Server) runLocked(token string) *run {
	r, ok := s.runs[token]
	if !ok {
		r = newRun()
		s.runs[token] = r
	}
	r.active = s.now()
	return r
}

// LastActive returns when each run token the ledger keeps was last armed or
// seen (by Config.Now), for a caller that keeps only the most recent runs
// (see Forget).
func (s *Server) LastActive() map[string]time.Time {
	s.mu.Lock()
	defer s.mu.Unlock()
	out := make(map[string]time.Time, len(s.runs))
	for t, r := range s.runs {
		out[t] = r.active
	}
	return out
}

// eventLocked records e for its token and wakes WaitFor. s.mu must be held.
func (s *Server) eventLocked(e wire.MCPEvent) {
	e.Time = s.now()
	r := s.runLocked(e.Token)
	if len(r.events) >= MaxRunEvents {
		r.events = append(r.events[:0], r.events[len(r.events)/2:]...)
	}
	r.events = append(r.events, e)
	r.counts.AddProtocol(e)
	s.total.counts.AddProtocol(e)
	s.wakeLocked()
}

// wakeLocked wakes everything waiting on s.changed. s.mu must be held.
func (s *Server) wakeLocked() {
	close(s.changed)
	s.changed = make(chan struct{})
}

var _ http.Handler = (*Server)(nil)

// errEmptyKey is the tool error for commit_write_keyed without a key.
var errEmptyKey = errors.New("idempotency_key must not be empty")
