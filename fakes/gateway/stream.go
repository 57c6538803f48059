package gateway

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"io"
	"mime"
	"net/http"
	"sync/atomic"
	"time"
)

// sseSink is the app's open server-sent-events answer. started is set once
// the status line went out; from then on a failure can only be an event.
type sseSink struct {
	w       http.ResponseWriter
	rc      *http.ResponseController
	started bool
	// group, when set, replaces every model id the events name
	// (HideServedModel).
	group string
}

func newSSESink(w http.ResponseWriter) *sseSink {
	return &sseSink{w: w, rc: http.NewResponseController(w)}
}

func (s *sseSink) start() {
	if s.started {
		return
	}
	h := s.w.Header()
	h.Set("Content-Type", "text/event-stream")
	h.Set("Cache-Control", "no-cache")
	s.w.WriteHeader(http.StatusOK)
	s.started = true
}

// data writes one `data:` event and flushes it.
func (s *sseSink) data(payload []byte) error {
	return s.event(sseEvent{data: payload})
}

// openStream sends one streamed model API call, bounded by UpstreamTimeout,
// and returns a line scanner over its event stream, which ends with an
// error when the stream sends nothing for StreamIdleTimeout. The caller
// calls closeStream when done: it closes the answer and ends the call's
// context.
func (g *Gateway) openStream(ctx context.Context, path string, body []byte) (sc *bufio.Scanner, closeStream func(), err error) {
	ctx, cancel := context.WithTimeout(ctx, g.cfg.UpstreamTimeout)
	resp, err := g.postUpstream(ctx, path, body, true)
	if err != nil {
		cancel()
		return nil, nil, err
	}
	idle := newIdleReader(resp.Body, g.cfg.StreamIdleTimeout, cancel)
	closeStream = func() {
		idle.stop()
		resp.Body.Close()
		cancel()
	}
	if mt, _, _ := mime.ParseMediaType(resp.Header.Get("Content-Type")); mt != "text/event-stream" {
		closeStream()
		return nil, nil, badAnswer(path, fmt.Errorf("a streamed call was answered with Content-Type %q", mt))
	}
	sc = bufio.NewScanner(idle)
	sc.Buffer(make([]byte, 0, 64<<10), maxSSELine)
	return sc, closeStream, nil
}

// idleReader reads a streamed answer and gives up on it, by cancelling its
// call, when no byte came for idle; its read error then says so.
type idleReader struct {
	r     io.Reader
	idle  time.Duration
	timer *time.Timer
	fired atomic.Bool
}

func newIdleReader(r io.Reader, idle time.Duration, cancel context.CancelFunc) *idleReader {
	ir := &idleReader{r: r, idle: idle}
	ir.timer = time.AfterFunc(idle, func() {
		ir.fired.Store(true)
		cancel()
	})
	return ir
}

func (ir *idleReader) Read(p []byte) (int, error) {
	n, err := ir.r.Read(p)
	if n > 0 && !ir.fired.Load() {
		ir.timer.Reset(ir.idle)
	}
	if err != nil && ir.fired.Load() {
		err = fmt.Errorf("the model API stream sent nothing for %s (stream idle timeout): %w", ir.idle, err)
	}
	return n, err
}

// stop ends the idle timer.
func (ir *idleReader) stop() { ir.timer.Stop() }

// cutStream is a streamed model answer that ended before its terminal event:
// a connection failure of the call. calls are the tool calls it had completed
// before the cut (a chat call whose arguments are whole JSON, a Responses
// function_call item that was done), in order; only RunToolsFromCutStream
// runs them.
type cutStream struct {
	err   *upstreamError
	calls []toolCall
}

func (e *cutStream) Error() string { return e.err.Error() }

func (e *cutStream) Unwrap() error { return e.err }

// sseEvent is one server-sent event: an optional name and its data.
type sseEvent struct {
	name string
	data []byte
}

// event writes one named event and flushes it.
func (s *sseSink) event(ev sseEvent) error {
	s.start()
	if s.group != "" {
		ev.data = renameModel(ev.data, s.group)
	}
	var err error
	if ev.name != "" {
		_, err = fmt.Fprintf(s.w, "event: %s\ndata: %s\n\n", ev.name, ev.data)
	} else {
		_, err = fmt.Fprintf(s.w, "data: %s\n\n", ev.data)
	}
	if err != nil {
		return fmt.Errorf("writing to the app: %w", err)
	}
	if err := s.rc.Flush(); err != nil && !errors.Is(err, http.ErrNotSupported) {
		return fmt.Errorf("flushing to the app: %w", err)
	}
	return nil
}

// bufferedStreamAttempt runs the tool loop once for a streamed request of a
// buffered endpoint (serveBuffered). Each upstream answer is read as a
// stream up to its terminal event by read, and nothing reaches the app until
// the final answer is complete: so a failure is answered like a
// non-streamed one, and the stream splice of chat (StreamSplice) cannot
// happen on these endpoints.
func (g *Gateway) bufferedStreamAttempt(ctx context.Context, rs *requestState, at *attemptState,
	read func(ctx context.Context, conv conversation, body []byte) (*modelTurn, error)) (*modelTurn, error) {
	return g.toolLoop(ctx, rs, at, true, read)
}

// serveBuffered serves a streamed request whose endpoint answers only once
// the final answer is complete (Responses, Messages): each upstream answer
// is read by read up to its terminal event (bufferedStreamAttempt), a
// failure is answered like a non-streamed one, and the final turn is
// rendered by events, the endpoint's own event stream.
func (g *Gateway) serveBuffered(ctx context.Context, w http.ResponseWriter, rs *requestState,
	read func(ctx context.Context, conv conversation, body []byte) (*modelTurn, error),
	events func(final *modelTurn) ([]sseEvent, error)) {
	final, err := g.route(ctx, rs, func(ctx context.Context, at *attemptState) (*modelTurn, error) {
		return g.bufferedStreamAttempt(ctx, rs, at, read)
	})
	if err != nil {
		g.answerError(w, rs, err)
		return
	}
	evs, err := events(final)
	if err != nil {
		writeJSONError(w, http.StatusBadGateway, "rendering the answer: "+err.Error(), "server_error", rs.d.errorCode(http.StatusBadGateway))
		return
	}
	sink := newSSESink(w)
	if g.cfg.Bugs.Has(HideServedModel) {
		sink.group = rs.req.Model
	}
	for _, ev := range evs {
		if err := sink.event(ev); err != nil {
			g.cfg.Logger.Info("app went away during the answer", "request", rs.id, "err", err)
			return
		}
	}
}
