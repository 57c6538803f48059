package gateway

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"strconv"
	"strings"

	api "github.com/replaycheck/replaycheck/internal/dialect"
)

// responsesDialect is responses (api.Responses): sent upstream as a Responses call,
// answered with the upstream's final response object as it came.
type responsesDialect struct{}

// Responses is the gateway's endpoint of api.Responses.
func (endpoints) Responses() dialect { return responsesDialect{} }

// parse reads the Responses input (a string is one user message) and
// forwards the other fields.
func (responsesDialect) parse(req *appRequest, top map[string]json.RawMessage) error {
	raw, ok := top["input"]
	if !ok || isNull(raw) {
		return badRequest("input is required")
	}
	var text string
	if err := json.Unmarshal(raw, &text); err == nil {
		item, err := json.Marshal(map[string]string{"role": "user", "content": text})
		if err != nil {
			return badRequest("input: %v", err)
		}
		req.Input = []json.RawMessage{item}
	} else if req.Input, err = arrayItems(raw); err != nil {
		return badRequest("input: want a string or an array of items")
	}
	if len(req.Input) == 0 {
		return badRequest("input must not be empty")
	}
	for i, item := range req.Input {
		var obj map[string]json.RawMessage
		if err := json.Unmarshal(item, &obj); err != nil || obj == nil {
			return badRequest("input[%d]: want an object", i)
		}
	}
	req.forwardExcept(top, "model", "input", "tools", "guardrails", "stream")
	return nil
}

func (responsesDialect) tool(i int, t toolHead, raw json.RawMessage) (json.RawMessage, error) {
	return functionTool(i, t, raw)
}

func (responsesDialect) conversation(req *appRequest) conversation {
	return &responsesConversation{
		input:     append([]json.RawMessage(nil), req.Input...),
		funcTools: req.FuncTools,
		extra:     req.Extra,
	}
}

func (responsesDialect) answer(_ *appRequest, final *modelTurn) ([]byte, error) {
	return final.Raw, nil
}

// stream answers once the final answer is complete, with the upstream's own
// events of the final Responses stream.
func (responsesDialect) stream(ctx context.Context, g *Gateway, w http.ResponseWriter, rs *requestState) {
	g.serveBuffered(ctx, w, rs, g.readResponsesStream, func(final *modelTurn) ([]sseEvent, error) { return final.events, nil })
}

func (responsesDialect) errorCode(status int) any { return strconv.Itoa(status) }

// detail shows the upstream's error body as it came, as LiteLLM does for
// Responses calls (seed 000).
func (responsesDialect) detail(e *upstreamError) string { return rawDetail(e) }

func rawDetail(e *upstreamError) string {
	if e.Status != 0 && len(e.Body) > 0 {
		return string(e.Body)
	}
	return e.Message
}

// responsesConversation is a Responses API conversation kept as input items.
type responsesConversation struct {
	input     []json.RawMessage
	funcTools []json.RawMessage
	extra     map[string]json.RawMessage
}

func (c *responsesConversation) path() string { return belowV1(api.ResponsesPath) }

func (c *responsesConversation) body(model string, tools []modelTool, stream bool) ([]byte, error) {
	fns := make([]json.RawMessage, 0, len(tools))
	for _, t := range tools {
		fns = append(fns, joinObject(
			jsonField{"type", json.RawMessage(`"function"`)},
			jsonField{"name", quoted(t.Name)},
			jsonField{"description", quoted(t.Description)},
			jsonField{"parameters", t.parameters()},
		))
	}
	return upstreamBody(c.extra, model, "input", c.input, fns, c.funcTools, stream), nil
}

// responseObject is the part of a response object the gateway reads.
type responseObject struct {
	ID     string            `json:"id"`
	Output []json.RawMessage `json:"output"`
	Usage  *struct {
		InputTokens  int `json:"input_tokens"`
		OutputTokens int `json:"output_tokens"`
	} `json:"usage"`
}

type responseItem struct {
	Type      string `json:"type"`
	CallID    string `json:"call_id"`
	Name      string `json:"name"`
	Arguments string `json:"arguments"`
	Content   []struct {
		Type string `json:"type"`
		Text string `json:"text"`
	} `json:"content"`
}

func (c *responsesConversation) parse(body []byte) (*modelTurn, error) {
	var ro responseObject
	if err := json.Unmarshal(body, &ro); err != nil {
		return nil, err
	}
	if ro.Output == nil {
		return nil, errors.New("the response object has no output")
	}
	turn := &modelTurn{Raw: body, replay: ro.Output}
	var text strings.Builder
	for _, raw := range ro.Output {
		var it responseItem
		if err := json.Unmarshal(raw, &it); err != nil {
			return nil, err
		}
		switch it.Type {
		case "function_call":
			turn.Calls = append(turn.Calls, toolCall{ID: it.CallID, Name: it.Name, Arguments: it.Arguments})
		case "message":
			for _, part := range it.Content {
				if part.Type == "output_text" {
					text.WriteString(part.Text)
				}
			}
		}
	}
	turn.Text = text.String()
	return turn, nil
}

func (c *responsesConversation) add(turn *modelTurn, results []toolResult) {
	c.input = append(c.input, turn.replay...)
	for _, r := range results {
		c.input = append(c.input, mustJSON(map[string]string{"type": api.FunctionCallOutput, "call_id": r.CallID, "output": r.Output}))
	}
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
