package upstream

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"strconv"
	"time"

	api "github.com/replaycheck/replaycheck/internal/dialect"
	"github.com/replaycheck/replaycheck/internal/wire"

	"github.com/replaycheck/replaycheck/internal/nesting"
)

// serveModelRequest picks the fault that fires, if any, has its kinds act
// before the answer, then answers.
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
	if player == nil && s.cfg.Cassette == nil && s.cfg.Relay == "" {
		x.again, x.reads = st.again(&x.req, x.script)
	}
	f := flag
	if f == nil {
		x.armed = s.faults.Pick(x.token, x.matches)
		s.changedLocked() // a fault may have matched
		if x.armed != nil {
			f = &x.armed.Fault.Fault
		}
	}
	s.mu.Unlock()

	if f != nil {
		x.fault = f
		x.kinds, x.pacers = f.kinds(x.kindBuf[:0])
		x.rec.Fault = f.String()
		if f == flag {
			x.rec.Fault = label
		}
		for _, k := range x.kinds {
			if b, ok := k.(beforeAnswer); ok && b.before(x) {
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

// matches reports whether a applies to x's request.
func (x *exchange) matches(a *armable) bool {
	return a.matches(x.kind, x.de.name, x.req.Stream, a.streams)
}

// exchange is one model request in flight.
type exchange struct {
	s     *Server
	w     http.ResponseWriter
	r     *http.Request
	de    dialectEntry
	body  []byte
	token string
	kind  wire.RequestKind
	req   api.Request
	seq   int
	round int // the script round this request is at
	// answeredRound is the round whose calls the answer carries (-1 = none).
	answeredRound int
	script        *Script
	// again are the calls the model asks for again (a scripted follow-up
	// that reported a call failed), reads the fake model's readings of its
	// results (see runState.again); mints, what each call of the scripted
	// answer was made for, in its order.
	again []againCall
	reads []string
	mints []mintedCall
	// fault is the fault that fires on this request (nil for none), kinds
	// its kinds in the order they act (Fault.kinds), backed by kindBuf, the
	// first pacers of them pacers.
	fault   *Fault
	kinds   []kind
	kindBuf [maxKinds]kind
	pacers  int
	// armed is the armed fault picked for this request (nil for none or a
	// flag file's); acted says its action took effect, so finish counts it
	// as fired.
	armed    *armed
	acted    bool
	delayed  bool
	recorded bool
	rec      wire.UpstreamRequest
	// gaps, when set, are the waits before each event of a replayed stream
	// (Config.ReplayTiming).
	gaps []time.Duration
	// tape is the relayed answer being recorded (Config.Record); nil when
	// none is, or when it can no longer be whole.
	tape *tape
}

// pacersAlone reports whether the fault's kinds are all pacers (delay,
// dribble): such a fault fires by holding its answer back.
func (x *exchange) pacersAlone() bool { return x.pacers == len(x.kinds) }

// normalOutcome is the outcome of an answer sent as the script or provider gave it.
func (x *exchange) normalOutcome() wire.Outcome {
	if x.delayed {
		return wire.OutcomeDelayed
	}
	return wire.OutcomeForwarded
}

// finish records the request's outcome once: counts, records, log line and
// structured record. It is called before the last byte of the answer leaves,
// so a client that has seen its answer always finds it counted.
func (x *exchange) finish(outcome wire.Outcome, status int) {
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
	rec.Kind = x.kind
	rec.Outcome = outcome
	rec.Stream = x.req.Stream
	rec.Status = status
	rec.Model = x.req.Model
	rec.ResultIDs = x.req.ResultIDs
	rec.Results = recordResults(x.req.Results, x.reads, x.r)
	if len(x.req.Tools) > 0 {
		rec.Offered = offeredNames(x.req.Tools)
	}
	if outcome == wire.OutcomeDroppedStream && x.drop() != nil {
		x.acted = true // every cut records this outcome first
	}
	s.mu.Lock()
	if x.acted && x.armed != nil {
		x.armed.Fire(x.token)
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
	s.changedLocked() // a fault fired, a record was added
	if x.answeredRound >= 0 && x.token != "" {
		if st.rounds == nil || len(st.rounds) >= maxRounds {
			st.rounds = make(map[int]int)
		}
		st.rounds[x.seq] = x.answeredRound
		st.mint(rec.Calls, x.mints)
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
			slog.String("outcome", string(outcome)),
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
func (x *exchange) writeError(outcome wire.Outcome, status int, message string, headers map[string]string) {
	if outcome == wire.OutcomeBadRequest || outcome == wire.OutcomeRelayFailed || outcome == wire.OutcomeCassetteMiss {
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
		if tc, ok := conn.(interface{ SetLinger(int) error }); ok {
			_ = tc.SetLinger(0) // best effort: without it the close is a FIN
		}
	}
	_ = conn.Close() // nothing left to report to: the connection is being cut on purpose
}

// answerScripted answers from the run's script.
func (s *Server) answerScripted(x *exchange) {
	a, err := s.scriptedAnswer(x)
	if err != nil {
		x.writeError(wire.OutcomeBadRequest, http.StatusBadRequest, err.Error(), nil)
		return
	}
	for _, k := range x.kinds {
		if sk, ok := k.(atScripted); ok {
			sk.scripted(x, &a)
		}
	}
	x.rec.ServedModel = a.model
	bp := s.getBuf()
	defer s.putBuf(bp)
	rep := x.de.d.answer(*bp, &a, &x.req)
	x.rec.ResponseID = rep.id
	x.rec.SetCalls(a.callNames(), rep.callIDs)
	for i := range x.rec.Calls {
		if i < len(a.calls) {
			c := &x.rec.Calls[i]
			c.AgainFor = a.calls[i].againFor
			if !a.calls[i].custom {
				c.Args, _ = wire.CallArgs([]byte(a.calls[i].args))
			}
		}
		if i < len(x.mints) {
			x.rec.Calls[i].Step, x.rec.Calls[i].Attempt = x.mints[i].step+1, x.mints[i].attempt
		}
	}
	if !x.req.Stream {
		*bp = rep.body[:0]
		x.w.Header()["Content-Type"] = jsonContentType
		x.writeBody(http.StatusOK, rep.body)
		return
	}
	x.rec.Events, x.rec.ContentEvents = len(rep.events), rep.contentEnd
	x.writeStream(rep.events, rep.contentEnd)
}

// writeBody sends a non-streamed answer, status and body, with the headers
// set so far and the body's Content-Length, and records its outcome; a kind
// of the fault that sends bodies (atBody) sends it instead.
func (x *exchange) writeBody(status int, body []byte) {
	x.w.Header()["Content-Length"] = []string{strconv.Itoa(len(body))}
	for _, k := range x.kinds {
		if bk, ok := k.(atBody); ok {
			bk.writeBody(x, status, body)
			return
		}
	}
	x.finish(x.normalOutcome(), status)
	x.w.WriteHeader(status)
	_, _ = x.w.Write(body) // the client went away; nothing to do
}

// pause waits d with wait before the answer goes on, and reports whether it
// goes on. It ends the exchange instead when the client leaves or the server
// shuts down (recorded client_gone unless recorded already, and the
// connection closed).
func (x *exchange) pause(d time.Duration, wait func(ctx context.Context, d time.Duration) bool) bool {
	if d <= 0 {
		return true
	}
	if !wait(x.r.Context(), d) {
		x.finish(wire.OutcomeClientGone, 0)
		// The wait also ends when the server shuts down with the client
		// still there: hang up, so it sees a cut, not a clean end.
		x.closeConn(false)
		return false
	}
	return true
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

// errBodyTooLarge reports a body over the limit: size is its
// Content-Length, or -1 when it came without one.
type errBodyTooLarge struct{ size, limit int64 }

func (e errBodyTooLarge) Error() string {
	if e.size < 0 {
		return fmt.Sprintf("request body exceeds the %d-byte limit of replaycheck's model API fake", e.limit)
	}
	return fmt.Sprintf("request body of %d bytes exceeds the %d-byte limit of replaycheck's model API fake", e.size, e.limit)
}

// bodyStatus is the status of an answer to a body readBody refused: 413
// for one over the limit, else 400.
func bodyStatus(err error) int {
	if errors.As(err, new(errBodyTooLarge)) {
		return http.StatusRequestEntityTooLarge
	}
	return http.StatusBadRequest
}

// BodyTooLarge is a model request refused (413) because its body was over
// Config.MaxBody.
type BodyTooLarge struct {
	// Path is the request's path; Size its Content-Length, -1 when it came
	// without one (then more than Limit bytes arrived).
	Path  string
	Size  int64
	Limit int64
}

// readBody reads r's body, at most limit bytes, appending to buf.
func readBody(r *http.Request, w http.ResponseWriter, limit int64, buf []byte) ([]byte, error) {
	if r.ContentLength > limit {
		return buf, errBodyTooLarge{r.ContentLength, limit}
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
				return buf, errBodyTooLarge{-1, limit}
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
