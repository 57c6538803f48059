package gateway

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"sort"
	"strconv"
	"strings"

	"github.com/tidwall/gjson"

	api "github.com/replaycheck/replaycheck/internal/dialect"
)

// chatDialect is chat (api.Chat): sent upstream as chat completions,
// answered with the upstream's final chat completion as it came.
type chatDialect struct{}

// Chat is the gateway's endpoint of api.Chat.
func (endpoints) Chat() dialect { return chatDialect{} }

// parse reads the chat conversation (messages) and forwards the other
// fields.
func (chatDialect) parse(req *appRequest, top map[string]json.RawMessage) error {
	var err error
	if req.Messages, err = decodeItems(top, "messages", true); err != nil {
		return err
	}
	if len(req.Messages) == 0 {
		return badRequest("messages must not be empty")
	}
	for i, m := range req.Messages {
		var head struct {
			Role string `json:"role"`
		}
		if err := json.Unmarshal(m, &head); err != nil || head.Role == "" {
			return badRequest("messages[%d]: want an object with a role", i)
		}
	}
	req.forwardExcept(top, "model", "messages", "tools", "guardrails", "stream", "stream_options")
	return nil
}

func (chatDialect) tool(i int, t toolHead, raw json.RawMessage) (json.RawMessage, error) {
	return functionTool(i, t, raw)
}

func (chatDialect) conversation(req *appRequest) conversation {
	return &chatConversation{
		messages:  append([]json.RawMessage(nil), req.Messages...),
		funcTools: req.FuncTools,
		extra:     req.Extra,
	}
}

func (chatDialect) answer(_ *appRequest, final *modelTurn) ([]byte, error) { return final.Raw, nil }

// stream relays each model answer to the app chunk by chunk as it comes
// (streamAttempt): the first answer's chunks reach the app before the tools
// run.
func (chatDialect) stream(ctx context.Context, g *Gateway, w http.ResponseWriter, rs *requestState) {
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

func (chatDialect) errorCode(status int) any { return strconv.Itoa(status) }

func (chatDialect) detail(e *upstreamError) string { return e.Message }

// chatConversation is a chat completions conversation.
type chatConversation struct {
	messages  []json.RawMessage
	funcTools []json.RawMessage
	extra     map[string]json.RawMessage
	// fns are the gateway's tools as chat functions, rendered by the first
	// body: an attempt offers the same tools in every round.
	fns []json.RawMessage
}

func (c *chatConversation) path() string { return belowV1(api.ChatPath) }

func (c *chatConversation) body(model string, tools []modelTool, stream bool) ([]byte, error) {
	if c.fns == nil {
		c.fns = make([]json.RawMessage, 0, len(tools))
		for _, t := range tools {
			c.fns = append(c.fns, joinObject(
				jsonField{"type", json.RawMessage(`"function"`)},
				jsonField{"function", joinObject(
					jsonField{"name", quoted(t.Name)},
					jsonField{"description", quoted(t.Description)},
					jsonField{"parameters", t.parameters()},
				)},
			))
		}
	}
	return upstreamBody(c.extra, model, "messages", c.messages, c.fns, c.funcTools, stream), nil
}

// chatFunction is the function of a chat tool call: its name and its
// arguments as JSON text (a fragment of each, in a stream chunk).
type chatFunction struct {
	Name      string `json:"name"`
	Arguments string `json:"arguments"`
}

// parse reads choices[0].message of a chat completion: its content and tool
// calls, and the message as it came, which the follow-up sends back. It
// finds them with gjson without decoding the rest of the answer, at a third
// of the cost of encoding/json (BenchmarkChatRequest); the types are
// checked as strictly.
func (c *chatConversation) parse(body []byte) (*modelTurn, error) {
	if !gjson.ValidBytes(body) {
		return nil, errors.New("the chat completion is not valid JSON")
	}
	msg := gjson.GetBytes(body, "choices.0.message")
	if !msg.IsObject() {
		return nil, errors.New("the chat completion has no choices[0].message")
	}
	content, calls := msg.Get("content"), msg.Get("tool_calls")
	if !isType(content, gjson.String) || (calls.Exists() && calls.Type != gjson.Null && !calls.IsArray()) {
		return nil, errors.New("choices[0].message: want content a string or null and tool_calls an array")
	}
	turn := &modelTurn{Raw: body, Text: content.String(), replay: []json.RawMessage{json.RawMessage(msg.Raw)}}
	for i, tc := range calls.Array() {
		id, name, args := tc.Get("id"), tc.Get("function.name"), tc.Get("function.arguments")
		if !isType(id, gjson.String) || !isType(name, gjson.String) || !isType(args, gjson.String) {
			return nil, fmt.Errorf("choices[0].message.tool_calls[%d]: want id, function.name and function.arguments strings", i)
		}
		turn.Calls = append(turn.Calls, toolCall{ID: id.String(), Name: name.String(), Arguments: args.String()})
	}
	return turn, nil
}

// isType reports whether r is of type t, null or missing.
func isType(r gjson.Result, t gjson.Type) bool {
	return !r.Exists() || r.Type == gjson.Null || r.Type == t
}

func (c *chatConversation) add(turn *modelTurn, results []toolResult) {
	c.messages = append(c.messages, turn.replay...)
	for _, r := range results {
		c.messages = append(c.messages, joinObject(
			jsonField{"role", json.RawMessage(`"tool"`)},
			jsonField{"content", quoted(r.Output)},
			jsonField{"tool_call_id", quoted(r.CallID)},
		))
	}
}

// chatAssistantMessage is the assistant message that replays a streamed
// turn's tool calls.
func chatAssistantMessage(text string, calls []toolCall) json.RawMessage {
	type call struct {
		ID       string       `json:"id"`
		Type     string       `json:"type"`
		Function chatFunction `json:"function"`
	}
	msg := struct {
		Role      string  `json:"role"`
		Content   *string `json:"content"`
		ToolCalls []call  `json:"tool_calls,omitempty"`
	}{Role: "assistant"}
	if text != "" {
		msg.Content = &text
	}
	for _, c := range calls {
		msg.ToolCalls = append(msg.ToolCalls, call{ID: c.ID, Type: "function", Function: chatFunction{c.Name, c.Arguments}})
	}
	return mustJSON(msg)
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
