package upstream

import (
	"bytes"
	"context"
	"fmt"
	"net/http"
	"time"

	"github.com/replaycheck/replaycheck/internal/wire"
)

// Stream points: where a stream kind acts.
const (
	// DropAfterHeaders acts right after the stream's headers.
	DropAfterHeaders = "headers"
	// DropAfterToolCall acts after the event that completes the answer's
	// content (its tool calls) and before the terminal event.
	DropAfterToolCall = "tool_call"
	// DropAfterEvents acts after Events events.
	DropAfterEvents = "events"
	// DropAfterElapsed closes the stream once Elapsed has passed since its
	// headers, if it is still going (a drop only).
	DropAfterElapsed = "elapsed"
)

// validatePoint checks a stream point: after headers, tool_call or events
// (with events at least 1).
func validatePoint(after string, events int) error {
	switch after {
	case DropAfterHeaders, DropAfterToolCall:
		if events != 0 {
			return fmt.Errorf("events: only with after: events")
		}
	case DropAfterEvents:
		if events < 1 {
			return fmt.Errorf("events: want at least 1 with after: events")
		}
	default:
		return fmt.Errorf("after: %q is not headers, tool_call or events", after)
	}
	return nil
}

// streamOnly refuses stream: false for a kind that applies only to
// streamed requests.
func streamOnly(f *Fault, what string) error {
	if f.Stream != nil && !*f.Stream {
		return fmt.Errorf("stream: %s applies only to streamed requests; remove stream: false", what)
	}
	return nil
}

// stream is a streamed answer being written (writeStream), as its kinds
// see it.
type stream struct {
	x      *exchange
	events []sseEvent
	// contentEnd is how many events complete the answer's content.
	contentEnd int
	// sent is how many events have gone out.
	sent int
	rc   *http.ResponseController
	buf  []byte
	// deadline is when a drop after elapsed cuts the stream, if a wait
	// reaches it (zero = never).
	deadline time.Time
}

// point returns the number of events sent before a point, or -1 when the
// point lies past the answer's last event.
func (s *stream) point(after string, n int) int {
	switch after {
	case DropAfterHeaders:
		return 0
	case DropAfterToolCall:
		return s.contentEnd
	case DropAfterEvents:
		if n < len(s.events) {
			return n
		}
	}
	return -1
}

// streamPlan is what a stream kind does to one stream.
type streamPlan struct {
	// at is how many events go out before the kind acts (0: right after
	// the headers); -1 when it acts at no point of this stream.
	at int
	// outcome, when set, is recorded before the first byte: the kind is
	// sure to act, and the fault fires.
	outcome wire.Outcome
	// paced says the stream waits on the kind's account: its outcome is
	// recorded once its last wait is over, before its last event.
	paced bool
}

// writeStream sends events as SSE, flushing each, and has the fault's
// stream kinds act on it: each plans before the headers, acts when the
// stream reaches its point (atPoint), and before each event (atEvent). The outcome is
// recorded before the first byte when it is known then; a stream paced by
// waits records it once its last wait is over, before its last event.
func (x *exchange) writeStream(events []sseEvent, contentEnd int) {
	s := &stream{x: x, events: events, contentEnd: contentEnd}
	// acts are the kinds that act at a point of this stream.
	type planned struct {
		k  atPoint
		at int
	}
	var acts [maxKinds]planned
	var outcome wire.Outcome
	n, paced, flush := 0, false, false
	for _, k := range x.kinds {
		sk, ok := k.(atStream)
		if !ok {
			continue
		}
		p := sk.plan(s)
		if pk, ok := k.(atPoint); ok && p.at >= 0 {
			acts[n] = planned{pk, p.at}
			n++
		}
		if outcome == "" && p.outcome != "" {
			outcome = p.outcome
		}
		paced = paced || p.paced
		flush = flush || p.at == 0
	}
	switch {
	case outcome != "":
		x.acted = true
		x.finish(outcome, http.StatusOK)
	case !paced:
		x.finish(x.normalOutcome(), http.StatusOK)
	}
	setSSEHeaders(x.w.Header())
	x.w.WriteHeader(http.StatusOK)
	s.rc = http.NewResponseController(x.w)
	if flush || paced {
		_ = s.rc.Flush() // the client sees the 200 before the fault acts
	}
	bp := x.s.getBuf()
	defer x.s.putBuf(bp)
	s.buf = *bp
	defer func() { *bp = s.buf[:0] }()
	replayWait := waitCtx
	if x.s.replayWait != nil {
		replayWait = x.s.replayWait
	}
	for i := 0; ; i++ {
		s.sent = i
		for _, p := range acts[:n] {
			if p.at != i {
				continue
			}
			x.reachedPoint()
			if !p.k.act(s) {
				return
			}
		}
		if i == len(events) {
			break
		}
		for _, k := range x.kinds {
			if ek, ok := k.(atEvent); ok && !ek.beforeEvent(s) {
				return
			}
		}
		if x.gaps != nil && !s.pause(x.gaps[i], replayWait) {
			return
		}
		if i == len(events)-1 && !x.recorded {
			x.finish(x.normalOutcome(), http.StatusOK)
		}
		if !s.send(events[i]) {
			return
		}
	}
	if !x.recorded {
		x.finish(x.normalOutcome(), http.StatusOK)
	}
}

// send writes ev and flushes it; it reports whether both succeeded.
func (s *stream) send(ev sseEvent) bool {
	s.buf = appendEvent(s.buf[:0], ev)
	if _, err := s.x.w.Write(s.buf); err != nil {
		return false
	}
	return s.rc.Flush() == nil
}

// pause waits d with wait before the stream goes on, as exchange.pause
// does, and reports whether it goes on; a drop after elapsed whose
// deadline comes first ends it instead (recorded dropped_stream, and cut as
// the drop says).
func (s *stream) pause(d time.Duration, wait func(ctx context.Context, d time.Duration) bool) bool {
	x := s.x
	if !s.deadline.IsZero() {
		if left := time.Until(s.deadline); left <= d {
			if left > 0 && !wait(x.r.Context(), left) {
				x.finish(wire.OutcomeClientGone, 0)
				x.closeConn(false)
				return false
			}
			x.finish(wire.OutcomeDroppedStream, http.StatusOK)
			x.cutStream()
			return false
		}
	}
	return x.pause(d, wait)
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
