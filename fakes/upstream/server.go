package upstream

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"maps"
	"net/http"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/replaycheck/replaycheck/fakes/fault"
	"github.com/replaycheck/replaycheck/fakes/upstream/cassette"
	api "github.com/replaycheck/replaycheck/internal/dialect"
	"github.com/replaycheck/replaycheck/internal/runtoken"
	"github.com/replaycheck/replaycheck/internal/wire"
)

// DefaultMaxBody is the request body limit when Config.MaxBody is 0.
const DefaultMaxBody = 8 << 20

// maxRecords bounds the request records kept per run token (the oldest go).
const maxRecords = 4096

// Config configures a Server. The zero value is a scripted fake with the
// seed's default script, no log and an 8 MiB body limit.
type Config struct {
	// Script is the default script for runs without their own; zero = the seed's default.
	Script Script
	// Relay is a provider base URL (e.g. https://api.openai.com); "" = scripted mode.
	Relay string
	// Client sends relayed requests; nil = a net/http client with connect and
	// header timeouts that honours HTTP_PROXY/HTTPS_PROXY. The relay hands it
	// requests whose body cannot be rewound (GetBody nil), so net/http's
	// transport never re-sends one; a Client whose RoundTripper retries on its
	// own would break that.
	Client *http.Client
	// Log receives one "PATH KIND OUTCOME\n" line per model request; nil = none.
	Log io.Writer
	// Logger receives one structured record per model request; nil discards.
	Logger *slog.Logger
	// FlagsDir holds the seed rig's flag files fault_on, fault_once and
	// drop_stream, checked on every follow-up; "" = none.
	FlagsDir string
	// MaxBody is the request body limit in bytes; 0 = DefaultMaxBody. A
	// model request over it is answered 413 in its dialect's error shape,
	// recorded as bad_request, and passed to BodyTooLarge.
	MaxBody int64
	// BodyTooLarge, when set, is called with each model request refused
	// for a body over MaxBody, before the answer is written; it must not
	// block.
	BodyTooLarge func(BodyTooLarge)
	// Clock stamps records and "created" fields, and times recorded
	// answers; nil = time.Now.
	Clock func() time.Time
	// Record, when set, receives every relayed exchange whose answer came
	// whole (not cut by a fault, the provider or the client), with the
	// request's credentials scrubbed from the answer; it needs Relay. Its
	// write errors are logged to Logger and counted by its File's Loss. The
	// caller closes it after the server has stopped.
	Record *cassette.Recorder
	// TooLargeToRecord, when set, is called with the path of each relayed
	// plain answer Record did not record because its body was over
	// MaxRecordedBody bytes (its record's Unrecorded says so), before the
	// answer is written; it must not block.
	TooLargeToRecord func(path string)
	// Cassette, when set, answers model requests from recorded exchanges
	// (replay mode) instead of the script or the relay; faults apply to
	// replayed answers as to scripted ones.
	Cassette *cassette.Player
	// Miss is what a replay does with a request no entry matches:
	// MissError ("" too) or MissRelay.
	Miss string
	// ReplayTiming paces replayed answers as recorded: the wait for the
	// headers and the gaps between events.
	ReplayTiming bool
}

// Server is the upstream fake: an http.Handler answering /v1/chat/completions,
// /v1/responses, /v1/messages and /v1beta/models/{model}:generateContent
// (plus GET /v1/models, /v1/messages/count_tokens, GET /v1beta/models and
// :countTokens), mounted at "/". It is safe for concurrent use;
// Arm may be called while it serves.
type Server struct {
	cfg       Config
	maxBody   int64
	clock     func() time.Time
	client    *http.Client
	dialects  []dialectEntry
	bufs      sync.Pool
	args      argCache
	exchanges sync.Pool // of *exchange
	// delayHook, when set (by tests), is called as a delay starts waiting.
	delayHook func()
	// lingerWait, when set (by tests), replaces waitCtx for a drop's linger.
	lingerWait func(ctx context.Context, d time.Duration) bool
	// replayWait, when set (by tests), replaces waitCtx for replay timing.
	replayWait func(ctx context.Context, d time.Duration) bool

	mu       sync.Mutex              // guards the fields below and writes to cfg.Log
	script   *Script                 // the default script; replaced, never modified
	faults   fault.Registry[armable] // global and per-run
	runs     map[string]*runState
	logErr   error // the first failed write to cfg.Log
	total    wire.UpstreamCounts
	untokSeq int
	// changed, made by a WaitFault or WaitRequests that waits, is closed
	// (and let go) when an armed fault may have matched, fired or reached
	// its point, faults were armed or disarmed, or a request was recorded.
	changed chan struct{}
}

// runState is what the server keeps for one run token.
type runState struct {
	script *Script
	// cassette, when set (ArmCassette), answers the run's requests instead
	// of a script.
	cassette *cassette.Player
	counts   wire.UpstreamCounts
	requests []wire.UpstreamRequest
	seq      int
	// rounds maps the seq of an answer with tool calls to its script round,
	// so a follow-up that carries only the latest results (Responses'
	// previous_response_id) still gets the next round.
	rounds map[int]int
	// minted maps the id of each tool call of a scripted answer to the
	// step, attempt and round it was made for (again_if_failed).
	minted map[string]mintedCall
	// active is when the run was last armed or had a request (LastActive).
	active time.Time
}

// maxRounds bounds runState.rounds (cleared when full).
const maxRounds = 4096

// roundOf returns the script round a request is at: 0 for an initial one;
// for a follow-up, one past the latest round whose calls it answers, by the
// call ids the fake minted, or else the rounds of results it carries
// (rounds that answer calls the model asked for again not counted).
// s.mu must be held.
func (st *runState) roundOf(token string, req *api.Request) int {
	if !req.FollowUp {
		return 0
	}
	r := max(req.Rounds-st.againRounds(req), 1)
	if token == "" {
		return r
	}
	for _, id := range req.ResultIDs {
		if seq, ok := idSeq(id, token); ok {
			if g, ok := st.rounds[seq]; ok {
				r = max(r, g+1)
			}
		}
	}
	return r
}

// idSeq returns the request number in an id the fake minted for token
// ("call_<token>_<seq>_<i>", "toolu_<token>_<seq>_<i>").
func idSeq(id, token string) (int, bool) {
	i := strings.Index(id, token)
	if i < 0 {
		return 0, false
	}
	rest := id[i+len(token):]
	if len(rest) < 2 || rest[0] != '_' && rest[0] != '-' {
		return 0, false
	}
	n, digits := 0, 0
	for _, c := range []byte(rest[1:]) {
		if c < '0' || c > '9' || digits > 9 {
			break
		}
		n = n*10 + int(c-'0')
		digits++
	}
	return n, digits > 0
}

// New returns a Server for cfg. It fails on an invalid script or relay URL.
func New(cfg Config) (*Server, error) {
	if err := cfg.Script.Validate(); err != nil {
		return nil, fmt.Errorf("upstream script: %w", err)
	}
	if cfg.MaxBody < 0 {
		return nil, fmt.Errorf("upstream max body %d: must not be negative", cfg.MaxBody)
	}
	if err := checkReplay(&cfg); err != nil {
		return nil, err
	}
	s := &Server{
		cfg:      cfg,
		maxBody:  cfg.MaxBody,
		clock:    cfg.Clock,
		client:   cfg.Client,
		dialects: dialectTable(),
		script:   &Script{Steps: slices.Clone(cfg.Script.Steps)},
		runs:     make(map[string]*runState),
	}
	if s.maxBody == 0 {
		s.maxBody = DefaultMaxBody
	}
	if s.clock == nil {
		s.clock = time.Now
	}
	if cfg.Relay != "" {
		if err := checkRelayURL(cfg.Relay); err != nil {
			return nil, err
		}
		if s.client == nil {
			s.client = defaultRelayClient()
		}
	}
	return s, nil
}

// Arm sets the script and faults of one run token, replacing earlier ones;
// script nil means the default script. Token "" sets the global faults that
// apply to every request (and, when script is not nil, the default script).
// A token's faults are matched before the global ones; each fault counts its
// own matching occurrences for Times (a token's list counts only that token's
// requests). The run's counts and records are kept.
func (s *Server) Arm(token string, script *Script, faults []Fault) error {
	return s.arm(token, script, nil, faults)
}

// arm is Arm, with player (nil for none) answering the token's requests.
func (s *Server) arm(token string, script *Script, player *cassette.Player, faults []Fault) error {
	if token != "" && !runtoken.Valid(token) {
		return fmt.Errorf("arming upstream: %q is not a run token", token)
	}
	if script != nil {
		if err := script.Validate(); err != nil {
			return fmt.Errorf("arming upstream for %q: script: %w", token, err)
		}
	}
	armed, err := s.armable(token, player, faults)
	if err != nil {
		return err
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	s.faults.Arm(token, armed)
	s.changedLocked()
	if token == "" {
		if script != nil {
			s.script = &Script{Steps: slices.Clone(script.Steps)}
		}
		return nil
	}
	st := s.run(token)
	st.cassette = player
	if script != nil {
		c := Script{Steps: slices.Clone(script.Steps)}
		st.script = &c
	} else {
		st.script = nil
	}
	return nil
}

// ArmCassette sets the faults of one run token, like Arm, and has player
// answer the run's model requests as recorded (see Config.Cassette), in
// place of a script: a replayed answer carries the run's token where the
// recorded request carried its own, faults apply to it as to a scripted
// one, and a request no entry matches is a cassette_miss (never relayed).
// Entries are served in the player's order; give each run a player of its
// own (cassette.NewPlayer) so runs do not take each other's answers. Arm
// for the token puts a script back.
func (s *Server) ArmCassette(token string, player *cassette.Player, faults []Fault) error {
	if !runtoken.Valid(token) {
		return fmt.Errorf("arming upstream: %q is not a run token", token)
	}
	if player == nil {
		return fmt.Errorf("arming upstream for %q: no cassette", token)
	}
	return s.arm(token, nil, player, faults)
}

// Counts returns the counts of one run token ("" = requests without a token).
func (s *Server) Counts(token string) wire.UpstreamCounts {
	s.mu.Lock()
	defer s.mu.Unlock()
	if st, ok := s.runs[token]; ok {
		return st.counts.Clone()
	}
	return wire.UpstreamCounts{}.Clone()
}

// Tokens returns the run tokens the server has seen or armed, unordered.
func (s *Server) Tokens() []string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return slices.Collect(maps.Keys(s.runs))
}

// Total returns the counts over all requests.
func (s *Server) Total() wire.UpstreamCounts {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.total.Clone()
}

// Requests returns a copy of one run's records in arrival order (at most the
// last 4096).
func (s *Server) Requests(token string) []wire.UpstreamRequest {
	s.mu.Lock()
	defer s.mu.Unlock()
	st, ok := s.runs[token]
	if !ok {
		return nil
	}
	reqs := st.requests
	if len(reqs) > maxRecords {
		reqs = reqs[len(reqs)-maxRecords:]
	}
	out := make([]wire.UpstreamRequest, len(reqs))
	copy(out, reqs)
	return out
}

// WaitRequests waits until cond holds for one run's records (as Requests
// returns them) and returns them. It wakes on each record, not on a timer,
// and fails when ctx ends first.
func (s *Server) WaitRequests(ctx context.Context, token string, cond func([]wire.UpstreamRequest) bool) ([]wire.UpstreamRequest, error) {
	for {
		s.mu.Lock()
		changed := s.nextChangeLocked()
		s.mu.Unlock()
		reqs := s.Requests(token)
		if cond(reqs) {
			return reqs, nil
		}
		select {
		case <-changed:
		case <-ctx.Done():
			return reqs, fmt.Errorf("waiting for the model requests of %q: %w", token, ctx.Err())
		}
	}
}

// run returns the state of token, creating it, and marks it active now.
// s.mu must be held.
func (s *Server) run(token string) *runState {
	st, ok := s.runs[token]
	if !ok {
		st = &runState{}
		s.runs[token] = st
	}
	st.active = s.clock()
	return st
}

// LastActive returns when each run token the server keeps was last armed or
// had a request (by Config.Clock), for a caller that keeps only the most
// recent runs (see Forget).
func (s *Server) LastActive() map[string]time.Time {
	s.mu.Lock()
	defer s.mu.Unlock()
	out := make(map[string]time.Time, len(s.runs))
	for t, st := range s.runs {
		out[t] = st.active
	}
	return out
}

// ServeHTTP answers the model API paths; anything else is a 404 in the
// OpenAI error shape.
func (s *Server) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	path := r.URL.Path
	switch {
	case isGeminiAncillary(path):
		if s.cfg.Relay != "" {
			s.relayAncillary(w, r)
			return
		}
		s.serveGemini(w, r)
		return
	case path == "/v1/models" || len(path) > len("/v1/models/") && path[:len("/v1/models/")] == "/v1/models/" && !isGeminiModelRequest(path):
		if s.cfg.Relay != "" {
			s.relayAncillary(w, r)
			return
		}
		s.serveModels(w, r)
		return
	case path == api.MessagesCountTokensPath:
		if s.cfg.Relay != "" {
			s.relayAncillary(w, r)
			return
		}
		s.serveCountTokens(w, r)
		return
	}
	de, call, ok := s.dialectFor(r.URL)
	if !ok {
		msg := "no such endpoint: " + r.Method + " " + path
		if strings.HasPrefix(path, "/v1beta/") {
			writeJSON(w, http.StatusNotFound, geminiErrorBody(http.StatusNotFound, "NOT_FOUND", msg))
			return
		}
		writeJSON(w, http.StatusNotFound, openAIErrorBody(http.StatusNotFound, msg))
		return
	}
	if r.Method != http.MethodPost {
		w.Header().Set("Allow", http.MethodPost)
		writeJSON(w, http.StatusMethodNotAllowed, de.d.errorBody(http.StatusMethodNotAllowed, path+" takes POST, not "+r.Method))
		return
	}
	bp := s.getBuf()
	defer s.putBuf(bp)
	x, _ := s.exchanges.Get().(*exchange)
	if x == nil {
		x = new(exchange)
	}
	defer func() { *x = exchange{}; s.exchanges.Put(x) }()
	x.s, x.w, x.r, x.de = s, w, r, de
	x.answeredRound = -1
	body, err := readBody(r, w, s.maxBody, (*bp)[:0])
	*bp = body[:0]
	x.body = body
	x.token = runOf(r, body)
	x.kind = wire.KindInitial
	if err != nil {
		if tl := (errBodyTooLarge{}); errors.As(err, &tl) && s.cfg.BodyTooLarge != nil {
			s.cfg.BodyTooLarge(BodyTooLarge{Path: r.URL.Path, Size: tl.size, Limit: tl.limit})
		}
		x.writeError(wire.OutcomeBadRequest, bodyStatus(err), err.Error(), nil)
		return
	}
	x.req, err = de.d.parse(body)
	if call.model != "" {
		x.req.Model, x.req.Stream = call.model, call.stream
	}
	if err != nil {
		x.writeError(wire.OutcomeBadRequest, http.StatusBadRequest, fmt.Sprintf("%s: unparsable request body: %v", path, err), nil)
		return
	}
	if call.bad != "" {
		x.writeError(wire.OutcomeBadRequest, http.StatusBadRequest, call.bad, nil)
		return
	}
	if x.req.FollowUp {
		x.kind = wire.KindFollowUp
	}
	s.serveModelRequest(x)
	if !x.recorded {
		// Only a client that left mid-answer gets here (a relayed stream
		// whose writes failed); it is still recorded, once.
		x.finish(wire.OutcomeClientGone, 0)
	}
}

// relayUnsupported names the first setting of f that relay mode cannot
// carry out, or "" when there is none.
func relayUnsupported(f *Fault) string {
	var ks [maxKinds]kind
	used, _ := f.kinds(ks[:0])
	for _, k := range used {
		if nr, ok := k.(notRelayed); ok {
			if name := nr.relayUnsupported(); name != "" {
				return name
			}
		}
	}
	return ""
}
