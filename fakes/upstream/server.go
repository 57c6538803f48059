package upstream

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"maps"
	"net"
	"net/http"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/replaycheck/replaycheck/fakes/upstream/cassette"
	"github.com/replaycheck/replaycheck/internal/nesting"
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
	// MaxBody is the request body limit in bytes; 0 = DefaultMaxBody.
	MaxBody int64
	// Clock stamps records and "created" fields, and times recorded
	// answers; nil = time.Now.
	Clock func() time.Time
	// Record, when set, receives every relayed exchange whose answer came
	// whole (not cut by a fault, the provider or the client), with the
	// request's credentials scrubbed from the answer; it needs Relay. Its
	// write errors are logged to Logger and counted by its File's Loss. The
	// caller closes it after the server has stopped.
	Record *cassette.Recorder
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

	mu       sync.Mutex // guards the fields below and writes to cfg.Log
	script   *Script    // the default script; replaced, never modified
	global   []*armedFault
	runs     map[string]*runState
	logErr   error // the first failed write to cfg.Log
	total    Counts
	untokSeq int
}

// runState is what the server keeps for one run token.
type runState struct {
	script *Script
	// cassette, when set (ArmCassette), answers the run's requests instead
	// of a script.
	cassette *cassette.Player
	faults   []*armedFault
	counts   Counts
	requests []Request
	seq      int
	// rounds maps the seq of an answer with tool calls to its script round,
	// so a follow-up that carries only the latest results (Responses'
	// previous_response_id) still gets the next round.
	rounds map[int]int
}

// maxRounds bounds runState.rounds (cleared when full).
const maxRounds = 4096

// roundOf returns the script round a request is at: 0 for an initial one;
// for a follow-up, one past the latest round whose calls it answers, by the
// call ids the fake minted, or else the rounds of results it carries.
// s.mu must be held.
func (st *runState) roundOf(token string, req *request) int {
	if !req.followUp {
		return 0
	}
	r := max(req.rounds, 1)
	if token == "" {
		return r
	}
	for _, id := range req.resultIDs {
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

// Counts are a run's (or all) classified requests and their outcomes.
type Counts = wire.UpstreamCounts // transitional: removed after the issue-19 merge

// Request is the structured record of one model request.
type Request = wire.UpstreamRequest // transitional: removed after the issue-19 merge

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
	armed := make([]*armedFault, len(faults))
	for i, f := range faults {
		if err := f.Validate(); err != nil {
			return fmt.Errorf("arming upstream for %q: faults[%d].%w", token, i, err)
		}
		if s.cfg.Relay != "" && s.cfg.Cassette == nil && player == nil {
			if name := relayUnsupported(&f); name != "" {
				return fmt.Errorf("arming upstream for %q: faults[%d].%s: not available in relay mode (scripted and replayed streams only)", token, i, name)
			}
		}
		armed[i] = &armedFault{Fault: f}
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	if token == "" {
		s.global = armed
		if script != nil {
			s.script = &Script{Steps: slices.Clone(script.Steps)}
		}
		return nil
	}
	st := s.run(token)
	st.faults = armed
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
func (s *Server) Counts(token string) Counts {
	s.mu.Lock()
	defer s.mu.Unlock()
	if st, ok := s.runs[token]; ok {
		return st.counts.Clone()
	}
	return Counts{}.Clone()
}

// Tokens returns the run tokens the server has seen or armed, unordered.
func (s *Server) Tokens() []string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return slices.Collect(maps.Keys(s.runs))
}

// Total returns the counts over all requests.
func (s *Server) Total() Counts {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.total.Clone()
}

// Requests returns a copy of one run's records in arrival order (at most the
// last 4096).
func (s *Server) Requests(token string) []Request {
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
	out := make([]Request, len(reqs))
	copy(out, reqs)
	return out
}

// run returns the state of token, creating it. s.mu must be held.
func (s *Server) run(token string) *runState {
	st, ok := s.runs[token]
	if !ok {
		st = &runState{}
		s.runs[token] = st
	}
	return st
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
	case path == "/v1/messages/count_tokens":
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
	x.kind = KindInitial
	if err != nil {
		x.writeError(OutcomeBadRequest, http.StatusBadRequest, err.Error(), nil)
		return
	}
	x.req, err = de.d.parse(body)
	if call.model != "" {
		x.req.model, x.req.stream = call.model, call.stream
	}
	if err != nil {
		x.writeError(OutcomeBadRequest, http.StatusBadRequest, fmt.Sprintf("%s: unparsable request body: %v", path, err), nil)
		return
	}
	if call.bad != "" {
		x.writeError(OutcomeBadRequest, http.StatusBadRequest, call.bad, nil)
		return
	}
	if x.req.followUp {
		x.kind = KindFollowUp
	}
	s.serveModelRequest(x)
	if !x.recorded {
		// Only a client that left mid-answer gets here (a relayed stream
		// whose writes failed); it is still recorded, once.
		x.finish(OutcomeClientGone, 0)
	}
}

// serveModelRequest applies the fault that fires, if any, then answers.
func (s *Server) serveModelRequest(x *exchange) {
	flag, label := s.flagFault(x)
	s.mu.Lock()
	st := s.run(x.token)
	st.seq++
	x.seq = st.seq
	if x.token == "" {
		s.untokSeq++
		x.seq = s.untokSeq
	}
	x.script = s.script
	if st.script != nil {
		x.script = st.script
	}
	x.round = st.roundOf(x.token, &x.req)
	player := st.cassette
	f := flag
	if f == nil {
		x.armed = pickFault(st.faults, x.kind, x.de.name, x.req.stream)
		if x.armed == nil {
			x.armed = pickFault(s.global, x.kind, x.de.name, x.req.stream)
		}
		if x.armed != nil {
			f = &x.armed.Fault
		}
	}
	s.mu.Unlock()

	if f != nil {
		x.fault = f
		x.rec.Fault = f.String()
		if f == flag {
			x.rec.Fault = label
		}
		for _, a := range actionTable() {
			act := a.get(f)
			if act == nil {
				continue
			}
			if act.apply(x) {
				return
			}
		}
	}
	switch {
	case player != nil:
		s.replay(x, player, false)
	case s.cfg.Cassette != nil:
		s.replay(x, s.cfg.Cassette, s.cfg.Miss == MissRelay)
	case s.cfg.Relay != "":
		s.relay(x)
	default:
		s.answerScripted(x)
	}
}

// pickFault counts the occurrence for every matching fault in order and
// returns the first whose Times pick it. s.mu must be held.
func pickFault(faults []*armedFault, kind, endpoint string, stream bool) *armedFault {
	for _, af := range faults {
		if !af.matches(kind, endpoint, stream) {
			continue
		}
		af.seen++
		if af.Times.Fires(af.seen) {
			return af
		}
	}
	return nil
}

// exchange is one model request in flight.
type exchange struct {
	s     *Server
	w     http.ResponseWriter
	r     *http.Request
	de    dialectEntry
	body  []byte
	token string
	kind  string
	req   request
	seq   int
	round int // the script round this request is at
	// answeredRound is the round whose calls the answer carries (-1 = none).
	answeredRound int
	script        *Script
	fault         *Fault
	// armed is the armed fault picked for this request (nil for none or a
	// flag file's); acted says its action took effect, so finish counts it
	// as fired.
	armed *armedFault
	acted bool
	cut   *Drop
	// streamErr, stall and dribble are what the fault does to a stream.
	streamErr *StreamError
	stall     *Stall
	dribble   time.Duration
	// deadline is when a drop after elapsed cuts the stream (zero = none).
	deadline time.Time
	delayed  bool
	recorded bool
	rec      Request
	// gaps, when set, are the waits before each event of a replayed stream
	// (Config.ReplayTiming).
	gaps []time.Duration
	// tape is the relayed answer being recorded (Config.Record); nil when
	// none is, or when it can no longer be whole.
	tape *tape
	// serveModel is the model a serve_model fault has a scripted answer
	// name instead of the requested one ("" = the requested one).
	serveModel string
}

// normalOutcome is the outcome of an answer sent as the script or provider gave it.
func (x *exchange) normalOutcome() string {
	if x.delayed {
		return OutcomeDelayed
	}
	return OutcomeForwarded
}

// finish records the request's outcome once: counts, records, log line and
// structured record. It is called before the last byte of the answer leaves,
// so a client that has seen its answer always finds it counted.
func (x *exchange) finish(outcome string, status int) {
	if x.recorded {
		return
	}
	x.recorded = true
	s := x.s
	var logErr error
	rec := x.rec
	rec.Time = s.clock()
	rec.Token = x.token
	rec.Path = x.r.URL.Path
	rec.Endpoint = x.de.name
	rec.Kind = wire.RequestKind(x.kind)
	rec.Outcome = wire.Outcome(outcome)
	rec.Stream = x.req.stream
	rec.Status = status
	rec.Model = x.req.model
	rec.ResultIDs = x.req.resultIDs
	if len(x.req.tools) > 0 {
		rec.Offered = offeredNames(x.req.tools)
	}
	if outcome == OutcomeDroppedStream && x.cut != nil {
		x.acted = true // every cut records this outcome first
	}
	s.mu.Lock()
	if x.acted && x.armed != nil {
		x.armed.fired++
	}
	st := s.run(x.token)
	st.counts.Add(rec.Kind, rec.Outcome)
	s.total.Add(rec.Kind, rec.Outcome)
	if len(st.requests) >= 2*maxRecords { // trim in bulk: amortised O(1)
		n := copy(st.requests, st.requests[len(st.requests)-maxRecords+1:])
		clear(st.requests[n:])
		st.requests = st.requests[:n]
	}
	st.requests = append(st.requests, rec)
	if x.answeredRound >= 0 && x.token != "" {
		if st.rounds == nil || len(st.rounds) >= maxRounds {
			st.rounds = make(map[int]int)
		}
		st.rounds[x.seq] = x.answeredRound
	}
	if s.cfg.Log != nil {
		line := make([]byte, 0, len(rec.Path)+len(rec.Kind)+len(outcome)+3)
		line = append(line, rec.Path...)
		line = append(line, ' ')
		line = append(line, rec.Kind...)
		line = append(line, ' ')
		line = append(line, outcome...)
		line = append(line, '\n')
		if _, err := s.cfg.Log.Write(line); err != nil && s.logErr == nil {
			s.logErr = err // reported once below; a failing log must not fail the answer
			logErr = err
		}
	}
	s.mu.Unlock()
	if logErr != nil && s.cfg.Logger != nil {
		s.cfg.Logger.LogAttrs(x.r.Context(), slog.LevelError, "upstream log write failed; later failures are not reported", slog.String("error", logErr.Error()))
	}
	if l := s.cfg.Logger; l != nil {
		l.LogAttrs(x.r.Context(), slog.LevelInfo, "upstream request",
			slog.String("path", rec.Path),
			slog.String("kind", string(rec.Kind)),
			slog.String("outcome", outcome),
			slog.String("token", rec.Token),
			slog.Bool("stream", rec.Stream),
			slog.Int("status", status),
			slog.String("fault", rec.Fault),
			slog.String("model", rec.Model),
		)
	}
}

// writeError records and sends an error answer in the dialect's shape; the
// record keeps the message of an error the fake answers on its own account
// (bad_request, relay_failed).
func (x *exchange) writeError(outcome string, status int, message string, headers map[string]string) {
	if outcome == OutcomeBadRequest || outcome == OutcomeRelayFailed {
		x.rec.Error = message
	}
	h := x.w.Header()
	for k, v := range headers {
		h.Set(k, v)
	}
	x.finish(outcome, status)
	writeJSON(x.w, status, x.de.d.errorBody(status, message))
}

// closeConn hijacks the connection and closes it; with rst it is reset
// (SO_LINGER 0). Where hijacking is impossible (HTTP/2) the handler aborts,
// which also cuts the stream.
func (x *exchange) closeConn(rst bool) {
	conn, _, err := http.NewResponseController(x.w).Hijack()
	if err != nil {
		panic(http.ErrAbortHandler)
	}
	if rst {
		if tc, ok := conn.(*net.TCPConn); ok {
			_ = tc.SetLinger(0) // best effort: without it the close is a FIN
		}
	}
	_ = conn.Close() // nothing left to report to: the connection is being cut on purpose
}

// answerScripted answers from the run's script.
func (s *Server) answerScripted(x *exchange) {
	a, err := s.scriptedAnswer(x)
	if err != nil {
		x.writeError(OutcomeBadRequest, http.StatusBadRequest, err.Error(), nil)
		return
	}
	if x.serveModel != "" {
		a.model = x.serveModel
		x.acted = true
	}
	x.rec.ServedModel = a.model
	bp := s.getBuf()
	defer s.putBuf(bp)
	rep := x.de.d.answer(*bp, &a, &x.req)
	x.rec.ResponseID = rep.id
	x.rec.SetCalls(a.callNames(), rep.callIDs)
	if !x.req.stream {
		*bp = rep.body[:0]
		x.finish(x.normalOutcome(), http.StatusOK)
		h := x.w.Header()
		h["Content-Type"] = jsonContentType
		h["Content-Length"] = []string{strconv.Itoa(len(rep.body))}
		x.w.WriteHeader(http.StatusOK)
		_, _ = x.w.Write(rep.body) // the client went away; nothing to do
		return
	}
	x.rec.Events, x.rec.ContentEvents = len(rep.events), rep.contentEnd
	x.writeStream(rep.events, rep.contentEnd)
}

// relayUnsupported names the first action of f that relayed streams do not
// support, or "" when there is none.
func relayUnsupported(f *Fault) string {
	switch {
	case f.StreamError != nil:
		return "stream_error"
	case f.Stall != nil:
		return "stall"
	case f.Dribble != nil:
		return "dribble"
	case f.Drop != nil && f.Drop.After == DropAfterElapsed:
		return "drop.after"
	}
	return ""
}

// writeStream sends events as SSE, flushing each, and does to the stream
// what the exchange's fault says: paces it (dribble, replay timing), holds
// it at a point (stall), ends it with the dialect's error event
// (stream_error) or cuts the connection (drop). The outcome is recorded
// before the first byte when it is known then; a stream paced by waits
// records it once its last wait is over, before its last event.
func (x *exchange) writeStream(events []sseEvent, contentEnd int) {
	// at returns the number of events sent before a point, or -1 when the
	// point lies past the answer's last event.
	at := func(after string, n int) int {
		switch after {
		case DropAfterHeaders:
			return 0
		case DropAfterToolCall:
			return contentEnd
		case DropAfterEvents:
			if n < len(events) {
				return n
			}
		}
		return -1
	}
	cut, errAt, stallAt := -1, -1, -1
	if x.cut != nil {
		if x.cut.After == DropAfterElapsed {
			x.deadline = time.Now().Add(x.cut.Elapsed.D())
		} else {
			cut = at(x.cut.After, x.cut.Events)
		}
	}
	if x.streamErr != nil {
		errAt = at(x.streamErr.After, x.streamErr.Events)
	}
	if x.stall != nil {
		stallAt = at(x.stall.After, x.stall.Events)
	}
	paced := x.dribble > 0 || !x.deadline.IsZero() || stallAt >= 0 && !x.stall.Forever
	switch {
	case cut >= 0:
		x.finish(OutcomeDroppedStream, http.StatusOK)
	case errAt >= 0:
		x.acted = true
		x.finish(OutcomeStreamError, http.StatusOK)
	case stallAt >= 0 && x.stall.Forever:
		x.acted = true
		x.finish(OutcomeStalledStream, http.StatusOK)
	case !paced:
		x.finish(x.normalOutcome(), http.StatusOK)
	}
	setSSEHeaders(x.w.Header())
	x.w.WriteHeader(http.StatusOK)
	rc := http.NewResponseController(x.w)
	if cut == 0 || errAt == 0 || stallAt == 0 || paced {
		_ = rc.Flush() // the client sees the 200 before the fault acts
	}
	bp := x.s.getBuf()
	defer x.s.putBuf(bp)
	buf := *bp
	defer func() { *bp = buf[:0] }()
	for i := 0; ; i++ {
		switch i {
		case cut:
			x.cutStream()
			return
		case errAt:
			ev := x.de.d.streamError(x.streamErr, streamErrorAt{seq: i, id: x.rec.ResponseID, model: x.req.model, created: x.s.clock().Unix()})
			buf = appendEvent(buf[:0], ev)
			if _, err := x.w.Write(buf); err == nil {
				_ = rc.Flush() // the stream ends here either way
			}
			return
		case stallAt:
			if !x.hold(x.stall) {
				return
			}
		}
		if i == len(events) {
			break
		}
		if x.dribble > 0 {
			if x.fault.dribbleAlone() {
				x.acted = true // a dribble alone fires by pacing the answer
			}
			if !x.pause(x.dribble, waitCtx) {
				return
			}
			x.delayed = true
		}
		if x.gaps != nil && !x.pace(x.gaps[i]) {
			return
		}
		if i == len(events)-1 && !x.recorded {
			x.finish(x.normalOutcome(), http.StatusOK)
		}
		buf = appendEvent(buf[:0], events[i])
		if _, err := x.w.Write(buf); err != nil {
			return
		}
		if err := rc.Flush(); err != nil {
			return
		}
	}
	if !x.recorded {
		x.finish(x.normalOutcome(), http.StatusOK)
	}
}

// hold stalls the stream at its point: for its duration, after which it
// reports true and the stream resumes, or forever, until the client leaves
// or the server shuts down (then the connection is closed).
func (x *exchange) hold(st *Stall) bool {
	x.acted = true
	if st.Forever {
		<-x.r.Context().Done() // the outcome was recorded before the first byte
		x.closeConn(false)
		return false
	}
	if !x.pause(st.For.D(), waitCtx) {
		return false
	}
	x.delayed = true
	return true
}

// pause waits d with wait before the stream goes on, and reports whether it
// goes on. It ends the stream instead when the client leaves or the server
// shuts down (recorded client_gone unless recorded already, and the
// connection closed), or when a drop after elapsed comes first (recorded
// dropped_stream, and cut as the drop says).
func (x *exchange) pause(d time.Duration, wait func(ctx context.Context, d time.Duration) bool) bool {
	if !x.deadline.IsZero() {
		if left := time.Until(x.deadline); left <= d {
			if left > 0 && !wait(x.r.Context(), left) {
				x.finish(OutcomeClientGone, 0)
				x.closeConn(false)
				return false
			}
			x.finish(OutcomeDroppedStream, http.StatusOK)
			x.cutStream()
			return false
		}
	}
	if d <= 0 {
		return true
	}
	if !wait(x.r.Context(), d) {
		x.finish(OutcomeClientGone, 0)
		// The wait also ends when the server shuts down with the client
		// still there: hang up, so it sees a cut, not a clean end.
		x.closeConn(false)
		return false
	}
	return true
}

func setSSEHeaders(h http.Header) {
	h.Set("Content-Type", "text/event-stream; charset=utf-8")
	h.Set("Cache-Control", "no-cache")
	h.Set("X-Accel-Buffering", "no")
}

// sseEvent is one server-sent event; name "" sends only the data line.
type sseEvent struct {
	name string
	data []byte
	// raw sends data as it is, then a line end, outside the event-stream
	// format: how the Gemini API sends an error in the middle of a stream.
	raw bool
}

// appendEvent appends ev as SSE: one data line per line of its data (or,
// raw, the data and a line end).
func appendEvent(dst []byte, ev sseEvent) []byte {
	if ev.raw {
		return append(append(dst, ev.data...), '\n')
	}
	if ev.name != "" {
		dst = append(dst, "event: "...)
		dst = append(dst, ev.name...)
		dst = append(dst, '\n')
	}
	data := ev.data
	for {
		line, rest, more := bytes.Cut(data, []byte{'\n'})
		dst = append(dst, "data: "...)
		dst = append(dst, line...)
		dst = append(dst, '\n')
		if !more {
			return append(dst, '\n')
		}
		data = rest
	}
}

// getBuf returns a pooled buffer; put it back with s.putBuf.
func (s *Server) getBuf() *[]byte {
	if v := s.bufs.Get(); v != nil {
		return v.(*[]byte)
	}
	b := make([]byte, 0, 4096)
	return &b
}

// putBuf returns a buffer to the pool unless it grew large.
func (s *Server) putBuf(bp *[]byte) {
	if cap(*bp) <= 64<<10 {
		s.bufs.Put(bp)
	}
}

// errBodyTooLarge reports a body over the limit.
type errBodyTooLarge struct{ limit int64 }

func (e errBodyTooLarge) Error() string {
	return fmt.Sprintf("request body exceeds the %d-byte limit", e.limit)
}

// readBody reads r's body, at most limit bytes, appending to buf.
func readBody(r *http.Request, w http.ResponseWriter, limit int64, buf []byte) ([]byte, error) {
	if r.ContentLength > limit {
		return buf, errBodyTooLarge{limit}
	}
	if n := int(r.ContentLength); n > 0 && cap(buf) < n {
		buf = make([]byte, 0, n+1)
	}
	body := http.MaxBytesReader(w, r.Body, limit)
	for {
		if len(buf) == cap(buf) {
			buf = append(buf, 0)[:len(buf)]
		}
		n, err := body.Read(buf[len(buf):cap(buf)])
		buf = buf[:len(buf)+n]
		if err == io.EOF {
			return buf, nesting.CheckJSON("request body", buf)
		}
		if err != nil {
			var mbe *http.MaxBytesError
			if errors.As(err, &mbe) {
				return buf, errBodyTooLarge{limit}
			}
			return buf, fmt.Errorf("reading request body: %w", err)
		}
	}
}

// jsonContentType is shared by all JSON answers; net/http never modifies it.
var jsonContentType = []string{"application/json"}

// writeJSON sends body with status as application/json.
func writeJSON(w http.ResponseWriter, status int, body []byte) {
	h := w.Header()
	h["Content-Type"] = jsonContentType
	h["Content-Length"] = []string{strconv.Itoa(len(body))}
	w.WriteHeader(status)
	_, _ = w.Write(body) // the client went away; nothing to do
}

// waitCtx waits d or until ctx is done; it reports whether d elapsed.
func waitCtx(ctx context.Context, d time.Duration) bool {
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-t.C:
		return true
	case <-ctx.Done():
		return false
	}
}
