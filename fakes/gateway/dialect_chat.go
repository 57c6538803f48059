package gateway

import (
	"encoding/json"
	"errors"
	"strconv"
)

// chatDialect is /v1/chat/completions: sent upstream as chat completions,
// answered with the upstream's final chat completion as it came.
type chatDialect struct{}

func (chatDialect) conversation(req *appRequest) conversation {
	return &chatConversation{
		messages:  append([]json.RawMessage(nil), req.Messages...),
		funcTools: req.FuncTools,
		extra:     req.Extra,
	}
}

func (chatDialect) answer(_ *appRequest, final *modelTurn) ([]byte, error) { return final.Raw, nil }

func (chatDialect) errorCode(status int) any { return strconv.Itoa(status) }

func (chatDialect) detail(e *upstreamError) string { return e.Message }

// chatConversation is a chat completions conversation.
type chatConversation struct {
	messages  []json.RawMessage
	funcTools []json.RawMessage
	extra     map[string]json.RawMessage
}

func (c *chatConversation) path() string { return "/chat/completions" }

func (c *chatConversation) body(model string, tools []modelTool, stream bool) ([]byte, error) {
	fns := make([]any, 0, len(tools))
	for _, t := range tools {
		fns = append(fns, map[string]any{"type": "function", "function": map[string]any{
			"name": t.Name, "description": t.Description, "parameters": t.parameters(),
		}})
	}
	return upstreamBody(c.extra, model, "messages", c.messages, fns, c.funcTools, stream)
}

// chatCompletion is the part of a chat completion the gateway reads.
type chatCompletion struct {
	Choices []struct {
		Message      json.RawMessage `json:"message"`
		FinishReason string          `json:"finish_reason"`
	} `json:"choices"`
}

type chatMessage struct {
	Content   *string `json:"content"`
	ToolCalls []struct {
		ID       string       `json:"id"`
		Function chatFunction `json:"function"`
	} `json:"tool_calls"`
}

// chatFunction is the function of a chat tool call: its name and its
// arguments as JSON text (a fragment of each, in a stream chunk).
type chatFunction struct {
	Name      string `json:"name"`
	Arguments string `json:"arguments"`
}

func (c *chatConversation) parse(body []byte) (*modelTurn, error) {
	var cc chatCompletion
	if err := json.Unmarshal(body, &cc); err != nil {
		return nil, err
	}
	if len(cc.Choices) == 0 || len(cc.Choices[0].Message) == 0 {
		return nil, errors.New("the chat completion has no choices[0].message")
	}
	var msg chatMessage
	if err := json.Unmarshal(cc.Choices[0].Message, &msg); err != nil {
		return nil, err
	}
	turn := &modelTurn{Raw: body, replay: []json.RawMessage{cc.Choices[0].Message}}
	if msg.Content != nil {
		turn.Text = *msg.Content
	}
	for _, tc := range msg.ToolCalls {
		turn.Calls = append(turn.Calls, toolCall{ID: tc.ID, Name: tc.Function.Name, Arguments: tc.Function.Arguments})
	}
	return turn, nil
}

func (c *chatConversation) add(turn *modelTurn, results []toolResult) {
	c.messages = append(c.messages, turn.replay...)
	for _, r := range results {
		c.messages = append(c.messages, mustJSON(map[string]string{"role": "tool", "tool_call_id": r.CallID, "content": r.Output}))
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
