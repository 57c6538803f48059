package gateway

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"mime"
	"net/http"
	"sort"
	"strings"
	"sync/atomic"
	"time"

	api "github.com/replaycheck/replaycheck/internal/dialect"
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

// streamAttempt runs the whole tool loop once for a streamed chat request:
// each model answer is relayed to the app chunk by chunk as it arrives, the
// tools run between the streams, and the final stream ends with api.Done.
func (g *Gateway) streamAttempt(ctx context.Context, rs *requestState, at *attemptState) (*modelTurn, error) {
	turn, err := g.toolLoop(ctx, rs, at, true, func(ctx context.Context, conv conversation, body []byte) (*modelTurn, error) {
		return g.relayChatStream(ctx, conv.path(), body, rs.sink)
	})
	if err != nil {
		return nil, err
	}
	if err := rs.sink.data([]byte(api.Done)); err != nil {
		return nil, connectionFailure("answering the app", err)
	}
	return turn, nil
}

// chatChunk is the part of a chat completion chunk the gateway reads.
type chatChunk struct {
	// Error is set on an error chunk, {"error":{"message","type",…}}, which
	// ends a failed stream.
	Error *struct {
		Message string `json:"message"`
		Type    string `json:"type"`
	} `json:"error"`
	Choices []struct {
		Delta struct {
			Content   *string `json:"content"`
			ToolCalls []struct {
				Index    int          `json:"index"`
				ID       string       `json:"id"`
				Function chatFunction `json:"function"`
			} `json:"tool_calls"`
		} `json:"delta"`
	} `json:"choices"`
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

// relayChatStream sends one streamed chat call and relays each chunk to the
// app as it comes, without the upstream's api.Done. It returns the turn the
// chunks add up to; a stream that ends before api.Done is a *cutStream, one
// longer than maxUpstreamBody a 502.
func (g *Gateway) relayChatStream(ctx context.Context, path string, body []byte, sink *sseSink) (*modelTurn, error) {
	sc, closeStream, err := g.openStream(ctx, path, body)
	if err != nil {
		return nil, err
	}
	defer closeStream()
	var text strings.Builder
	calls := map[int]*toolCall{}
	done := false
	size := 0
	for sc.Scan() {
		size += len(sc.Bytes())
		if size > maxUpstreamBody {
			return nil, &upstreamError{Status: http.StatusBadGateway, Message: fmt.Sprintf("the stream of POST %s exceeds %d bytes", path, maxUpstreamBody)}
		}
		payload, ok := bytes.CutPrefix(sc.Bytes(), []byte("data:"))
		if !ok {
			continue
		}
		payload = bytes.TrimSpace(payload)
		if string(payload) == api.Done {
			done = true
			break
		}
		var ch chatChunk
		if err := json.Unmarshal(payload, &ch); err != nil {
			return nil, badAnswer(path, fmt.Errorf("a stream chunk is not JSON: %w", err))
		}
		if ch.Error != nil {
			// The upstream failed the stream after its 200 (a chat error
			// chunk): a failure of the call, not a chunk for the app.
			msg := ch.Error.Message
			if msg == "" {
				msg = "the model API stream failed"
			}
			return nil, &upstreamError{Status: http.StatusInternalServerError, Message: msg, Type: ch.Error.Type, Body: payload}
		}
		if err := sink.data(payload); err != nil {
			return nil, connectionFailure("answering the app", err)
		}
		for _, choice := range ch.Choices {
			if choice.Delta.Content != nil {
				text.WriteString(*choice.Delta.Content)
			}
			for _, tc := range choice.Delta.ToolCalls {
				c := calls[tc.Index]
				if c == nil {
					c = &toolCall{}
					calls[tc.Index] = c
				}
				if tc.ID != "" {
					c.ID = tc.ID
				}
				c.Name += tc.Function.Name
				c.Arguments += tc.Function.Arguments
			}
		}
	}
	idx := make([]int, 0, len(calls))
	for i := range calls {
		idx = append(idx, i)
	}
	sort.Ints(idx)
	if !done {
		err := sc.Err()
		if err == nil {
			err = io.ErrUnexpectedEOF
		}
		cut := &cutStream{err: connectionFailure("Response payload is not completed", err)}
		for _, i := range idx {
			if c := calls[i]; c.ID != "" && c.Name != "" && json.Valid([]byte(c.Arguments)) {
				cut.calls = append(cut.calls, *c)
			}
		}
		return nil, cut
	}
	turn := &modelTurn{Text: text.String()}
	for _, i := range idx {
		turn.Calls = append(turn.Calls, *calls[i])
	}
	turn.replay = []json.RawMessage{chatAssistantMessage(turn.Text, turn.Calls)}
	return turn, nil
}

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

// readResponsesStream sends one streamed Responses call and reads its events
// up to the terminal one; the turn is the response object that event carries.
// A stream that ends before it is a *cutStream.
func (g *Gateway) readResponsesStream(ctx context.Context, conv conversation, body []byte) (*modelTurn, error) {
	path := conv.path()
	sc, closeStream, err := g.openStream(ctx, path, body)
	if err != nil {
		return nil, err
	}
	defer closeStream()
	var events []sseEvent
	var cur sseEvent
	var calls []toolCall // function calls done so far, for a cutStream
	// finish ends the current event; it returns the turn or error a
	// terminal event yields, and done when one did.
	finish := func() (turn *modelTurn, done bool, err error) {
		ev := cur
		cur = sseEvent{}
		if ev.data == nil {
			return nil, false, nil
		}
		events = append(events, ev)
		var head struct {
			Type     string          `json:"type"`
			Response json.RawMessage `json:"response"`
			Item     json.RawMessage `json:"item"`
			Error    *struct {
				Message string `json:"message"`
			} `json:"error"`
		}
		if err := json.Unmarshal(ev.data, &head); err != nil {
			return nil, true, badAnswer(path, fmt.Errorf("a stream event is not JSON: %w", err))
		}
		switch head.Type {
		case api.OutputItemDone:
			var it responseItem
			if json.Unmarshal(head.Item, &it) == nil && it.Type == "function_call" {
				calls = append(calls, toolCall{ID: it.CallID, Name: it.Name, Arguments: it.Arguments})
			}
		case api.ResponseCompleted, api.ResponseIncomplete:
			turn, err := conv.parse(head.Response)
			if err != nil {
				return nil, true, badAnswer(path, err)
			}
			turn.events = events
			return turn, true, nil
		case api.ResponseFailed, api.ResponsesErrorEvent:
			msg := "the model API stream failed"
			var failed struct {
				Error *struct {
					Message string `json:"message"`
				} `json:"error"`
			}
			if json.Unmarshal(head.Response, &failed) == nil && failed.Error != nil {
				msg = failed.Error.Message
			} else if head.Error != nil {
				msg = head.Error.Message
			}
			return nil, true, &upstreamError{Status: http.StatusInternalServerError, Message: msg, Body: ev.data}
		}
		return nil, false, nil
	}
	size := 0
	for sc.Scan() {
		line := sc.Bytes()
		if len(line) == 0 {
			if turn, done, err := finish(); done {
				return turn, err
			}
			continue
		}
		size += len(line)
		if size > maxUpstreamBody {
			return nil, &upstreamError{Status: http.StatusBadGateway, Message: fmt.Sprintf("the stream of POST %s exceeds %d bytes", path, maxUpstreamBody)}
		}
		if name, ok := bytes.CutPrefix(line, []byte("event:")); ok {
			cur.name = string(bytes.TrimSpace(name))
		} else if data, ok := bytes.CutPrefix(line, []byte("data:")); ok {
			data = bytes.TrimPrefix(data, []byte(" "))
			if cur.data != nil {
				cur.data = append(cur.data, '\n')
			}
			cur.data = append(cur.data, data...)
		}
	}
	err = sc.Err()
	if err == nil {
		if turn, done, ferr := finish(); done {
			return turn, ferr
		}
		err = io.ErrUnexpectedEOF
	}
	return nil, &cutStream{err: connectionFailure("Response payload is not completed", err), calls: calls}
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

// serveLive serves a streamed request whose endpoint relays each model
// answer to the app as it comes (chat; streamAttempt).
func (g *Gateway) serveLive(ctx context.Context, w http.ResponseWriter, rs *requestState) {
	rs.sink = newSSESink(w)
	if g.cfg.Bugs.Has(HideServedModel) {
		rs.sink.group = rs.req.Model
	}
	_, err := g.route(ctx, rs, func(ctx context.Context, at *attemptState) (*modelTurn, error) {
		return g.streamAttempt(ctx, rs, at)
	})
	if err != nil {
		g.answerError(w, rs, err)
	}
}
