package gateway

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"strconv"

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

// stream relays each model answer to the app chunk by chunk as it comes.
func (chatDialect) stream(ctx context.Context, g *Gateway, w http.ResponseWriter, rs *requestState) {
	g.serveLive(ctx, w, rs)
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
