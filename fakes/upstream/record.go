package upstream

import (
	"io"
	"log/slog"
	"net/http"
	"os"
	"strconv"
	"time"

	"github.com/replaycheck/replaycheck/fakes/upstream/cassette"
	"github.com/replaycheck/replaycheck/internal/secret"
	"github.com/replaycheck/replaycheck/internal/wire"
)

// MaxRecordedBody bounds a plain answer kept in a cassette, in bytes
// (cassette.MaxBody): a larger one is relayed but not recorded, its record
// says so (wire.UnrecordedTooLarge), the cassette keeps its request marked
// so (a replay's miss says why) and Config.TooLargeToRecord is called.
const MaxRecordedBody = cassette.MaxBody

// tape is a relayed answer being recorded (Config.Record).
type tape struct {
	headersAt time.Time
	entry     cassette.Entry
}

// newTape starts recording resp, whose request was sent at start and whose
// headers arrived at headersAt.
func newTape(start, headersAt time.Time, resp *http.Response) *tape {
	t := &tape{headersAt: headersAt}
	a := &t.entry.Answer
	a.Status = resp.StatusCode
	a.HeadersMS = headersAt.Sub(start).Milliseconds()
	for k, v := range resp.Header {
		if len(v) > 0 && cassette.HeaderKept(k) {
			if a.Headers == nil {
				a.Headers = make(map[string]string, 4)
			}
			a.Headers[http.CanonicalHeaderKey(k)] = v[0]
		}
	}
	return t
}

// event records one event of a relayed stream, read at.
func (t *tape) event(name string, data []byte, at time.Time) {
	t.entry.Answer.Events = append(t.entry.Answer.Events, cassette.Event{
		Name: name, Data: string(data), AtMS: at.Sub(t.headersAt).Milliseconds(),
	})
}

// saveTape writes the exchange's recorded answer (or, marked Unrecorded,
// the fact it was not kept) to the cassette, keyed by its request, with the request's credentials and the values of
// replaycheck's secret-named environment variables scrubbed from it; under
// MissRelay later requests match it at once. A failed write is logged (and
// counted by the recorder's File); the answer goes on either way.
func (x *exchange) saveTape() {
	e := x.tape.entry
	x.tape = nil
	e.Request = x.cassetteRequest()
	cassette.ScrubEntry(&e, append(cassette.Secrets(x.r.Header, x.r.URL.RawQuery), secret.Environ(os.Environ())...))
	src, err := x.s.cfg.Record.Add(e)
	if err != nil {
		if l := x.s.cfg.Logger; l != nil {
			l.LogAttrs(x.r.Context(), slog.LevelError, "recording a relayed exchange failed", slog.String("error", err.Error()))
		}
		return
	}
	if e.Answer.Unrecorded == "" {
		x.rec.Recorded = src.String()
	}
	if x.s.cfg.Cassette != nil {
		x.s.cfg.Cassette.Add(e, src)
	}
}

// relayRecordedBody relays a plain answer that is being recorded: it reads
// the body whole first (up to MaxRecordedBody), records it, then answers. A
// body over the bound, or one the provider broke off, is passed on as it
// comes and not recorded; the cassette marks the request of one over the
// bound (cassette.Answer.Unrecorded).
func (s *Server) relayRecordedBody(x *exchange, resp *http.Response) {
	body, err := io.ReadAll(io.LimitReader(resp.Body, MaxRecordedBody+1))
	whole := err == nil && len(body) <= MaxRecordedBody
	switch {
	case whole:
		x.tape.entry.Answer.Body = string(body)
		x.saveTape()
	case err == nil: // over the bound: the cassette keeps the request, marked
		x.rec.Unrecorded = wire.UnrecordedTooLarge
		x.tape.entry.Answer.Unrecorded = wire.UnrecordedTooLarge
		x.saveTape()
		if s.cfg.TooLargeToRecord != nil {
			s.cfg.TooLargeToRecord(x.r.URL.Path)
		}
		if s.cfg.Logger != nil {
			s.cfg.Logger.LogAttrs(x.r.Context(), slog.LevelWarn, "answer too large to record; relayed only",
				slog.String("path", x.r.URL.Path), slog.Int("limit", MaxRecordedBody))
		}
	default: // broken off
		x.tape = nil
	}
	x.finish(x.normalOutcome(), resp.StatusCode)
	if whole && resp.Header.Get("Content-Length") == "" {
		x.w.Header().Set("Content-Length", strconv.Itoa(len(body)))
	}
	x.w.WriteHeader(resp.StatusCode)
	if _, werr := x.w.Write(body); werr != nil || whole {
		return
	}
	if err == nil {
		s.copyBody(x.w, resp.Body) // the rest of a body over the bound
	}
}
