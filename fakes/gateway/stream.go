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
)

// sseSink is the app's open server-sent-events answer. started is set once
// the status line went out; from then on a failure can only be an event.
type sseSink struct {
	w       http.ResponseWriter
	rc      *http.ResponseController
	started bool
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
	s.start()
	if _, err := fmt.Fprintf(s.w, "data: %s\n\n", payload); err != nil {
		return fmt.Errorf("writing to the app: %w", err)
	}
	if err := s.rc.Flush(); err != nil && !errors.Is(err, http.ErrNotSupported) {
		return fmt.Errorf("flushing to the app: %w", err)
	}
	return nil
}

// streamAttempt runs the whole tool loop once for a streamed chat request:
// each model answer is relayed to the app chunk by chunk as it arrives, the
// tools run between the streams, and the final stream ends with [DONE].
func (g *Gateway) streamAttempt(ctx context.Context, rs *requestState, at *attemptState) (*modelTurn, error) {
	tools, err := g.offerTools(ctx, rs.req)
	if err != nil {
		return nil, err
	}
	conv := rs.d.conversation(rs.req)
	model := g.cfg.upstreamModel(at.group)
	for round := 0; ; round++ {
		body, err := conv.body(model, tools, true)
		if err != nil {
			return nil, &upstreamError{Status: http.StatusInternalServerError, Message: "rendering the model API call: " + err.Error(), Err: err}
		}
		turn, err := g.relayChatStream(ctx, conv.path(), body, rs.sink)
		if err != nil {
			return nil, err
		}
		if !ours(turn, tools) || round >= maxToolRounds {
			if err := rs.sink.data([]byte("[DONE]")); err != nil {
				return nil, connectionFailure("answering the app", err)
			}
			return turn, nil
		}
		conv.add(turn, g.runTools(ctx, rs, at, turn.Calls, tools))
	}
}

// chatChunk is the part of a chat completion chunk the gateway reads.
type chatChunk struct {
	Choices []struct {
		Delta struct {
			Content   *string `json:"content"`
			ToolCalls []struct {
				Index    int    `json:"index"`
				ID       string `json:"id"`
				Function struct {
					Name      string `json:"name"`
					Arguments string `json:"arguments"`
				} `json:"function"`
			} `json:"tool_calls"`
		} `json:"delta"`
	} `json:"choices"`
}

// relayChatStream sends one streamed chat call and relays each chunk to the
// app as it comes, without the upstream's [DONE]. It returns the turn the
// chunks add up to; a stream that ends before [DONE] is a connection failure.
func (g *Gateway) relayChatStream(ctx context.Context, path string, body []byte, sink *sseSink) (*modelTurn, error) {
	ctx, cancel := context.WithTimeout(ctx, g.cfg.UpstreamTimeout)
	defer cancel()
	resp, err := g.postUpstream(ctx, path, body, true)
	if err != nil {
		return nil, err
	}
	defer resp.Body.Close()
	if mt, _, _ := mime.ParseMediaType(resp.Header.Get("Content-Type")); mt != "text/event-stream" {
		return nil, badAnswer(path, fmt.Errorf("a streamed call was answered with Content-Type %q", mt))
	}
	var text strings.Builder
	calls := map[int]*toolCall{}
	sc := bufio.NewScanner(resp.Body)
	sc.Buffer(make([]byte, 0, 64<<10), maxSSELine)
	done := false
	for sc.Scan() {
		payload, ok := bytes.CutPrefix(sc.Bytes(), []byte("data:"))
		if !ok {
			continue
		}
		payload = bytes.TrimSpace(payload)
		if string(payload) == "[DONE]" {
			done = true
			break
		}
		var ch chatChunk
		if err := json.Unmarshal(payload, &ch); err != nil {
			return nil, badAnswer(path, fmt.Errorf("a stream chunk is not JSON: %w", err))
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
	if !done {
		err := sc.Err()
		if err == nil {
			err = io.ErrUnexpectedEOF
		}
		return nil, connectionFailure("Response payload is not completed", err)
	}
	turn := &modelTurn{Text: text.String()}
	idx := make([]int, 0, len(calls))
	for i := range calls {
		idx = append(idx, i)
	}
	sort.Ints(idx)
	for _, i := range idx {
		turn.Calls = append(turn.Calls, *calls[i])
	}
	turn.replay = []json.RawMessage{chatAssistantMessage(turn.Text, turn.Calls)}
	return turn, nil
}
