package gateway

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"strings"

	api "github.com/replaycheck/replaycheck/internal/dialect"
)

// messagesDialect is messages (api.Messages, Anthropic Messages): sent upstream as a
// Responses call, as LiteLLM does for an OpenAI model (seed 000), and
// answered with an Anthropic message built from the final response object.
type messagesDialect struct{}

// Messages is the gateway's endpoint of api.Messages.
func (endpoints) Messages() dialect { return messagesDialect{} }

// parse converts an Anthropic Messages request to Responses input: text
// content becomes input messages, system becomes instructions and
// max_tokens becomes max_output_tokens.
func (messagesDialect) parse(req *appRequest, top map[string]json.RawMessage) error {
	var msgs []struct {
		Role    string          `json:"role"`
		Content json.RawMessage `json:"content"`
	}
	if err := decodeField(top, "messages", &msgs, true); err != nil {
		return err
	}
	if len(msgs) == 0 {
		return badRequest("messages must not be empty")
	}
	for i, m := range msgs {
		if m.Role != "user" && m.Role != "assistant" {
			return badRequest("messages[%d]: role must be user or assistant, got %q", i, m.Role)
		}
		text, err := anthropicText(m.Content)
		if err != nil {
			return badRequest("messages[%d].content: %v", i, err)
		}
		item, err := json.Marshal(map[string]string{"role": m.Role, "content": text})
		if err != nil {
			return badRequest("messages[%d]: %v", i, err)
		}
		req.Input = append(req.Input, item)
	}
	if raw, ok := top["system"]; ok && !isNull(raw) {
		text, err := anthropicText(raw)
		if err != nil {
			return badRequest("system: %v", err)
		}
		req.Extra["instructions"] = mustJSON(text)
	}
	if raw, ok := top["max_tokens"]; ok && !isNull(raw) {
		var n int
		if err := json.Unmarshal(raw, &n); err != nil || n < 1 {
			return badRequest("max_tokens: want a whole number of at least 1")
		}
		req.Extra["max_output_tokens"] = raw
	}
	for _, k := range []string{"temperature", "top_p", "metadata"} {
		if raw, ok := top[k]; ok {
			req.Extra[k] = raw
		}
	}
	return nil
}

// anthropicText returns the text of an Anthropic content value: a string or
// an array of text blocks.
func anthropicText(raw json.RawMessage) (string, error) {
	var s string
	if err := json.Unmarshal(raw, &s); err == nil {
		return s, nil
	}
	var blocks []struct {
		Type string `json:"type"`
		Text string `json:"text"`
	}
	if err := json.Unmarshal(raw, &blocks); err != nil {
		return "", errors.New("want a string or an array of content blocks")
	}
	var b strings.Builder
	for i, bl := range blocks {
		if bl.Type != "text" {
			return "", fmt.Errorf("block %d: content block type %q is not supported", i, bl.Type)
		}
		b.WriteString(bl.Text)
	}
	return b.String(), nil
}

// tool takes Anthropic tools {name, description, input_schema} (no type,
// or custom) and renders each as a Responses function tool.
func (messagesDialect) tool(i int, t toolHead, _ json.RawMessage) (json.RawMessage, error) {
	switch {
	case t.Type == "function":
		return nil, badRequest("tools[%d]: %s takes Anthropic tools {name, description, input_schema}", i, api.MessagesPath)
	case (t.Type == "" || t.Type == "custom") && t.Name != "":
		schema := t.InputSchema
		if isNull(schema) {
			schema = json.RawMessage(`{"type":"object"}`)
		}
		ft, err := json.Marshal(map[string]any{"type": "function", "name": t.Name, "description": t.Description, "parameters": schema})
		if err != nil {
			return nil, badRequest("tools[%d]: %v", i, err)
		}
		return ft, nil
	}
	return nil, badRequest("tools[%d]: unsupported tool type %q", i, t.Type)
}

func (messagesDialect) conversation(req *appRequest) conversation {
	return responsesDialect{}.conversation(req)
}

// errorCode is null: the seed's Messages errors carry "code": null.
func (messagesDialect) errorCode(int) any { return nil }

func (messagesDialect) detail(e *upstreamError) string { return rawDetail(e) }

func (messagesDialect) answer(req *appRequest, final *modelTurn) ([]byte, error) {
	msg, err := anthropicMessage(req, final)
	if err != nil {
		return nil, err
	}
	return json.Marshal(msg)
}

// stream answers once the final answer is complete, with an Anthropic
// Messages stream built from the final response object (anthropicEvents).
func (messagesDialect) stream(ctx context.Context, g *Gateway, w http.ResponseWriter, rs *requestState) {
	g.serveBuffered(ctx, w, rs, g.readResponsesStream, func(final *modelTurn) ([]sseEvent, error) { return anthropicEvents(rs.req, final) })
}

// anthropicBlock is one content block of an Anthropic message.
type anthropicBlock struct {
	Type  string          `json:"type"`
	Text  *string         `json:"text,omitempty"`
	ID    string          `json:"id,omitempty"`
	Name  string          `json:"name,omitempty"`
	Input json.RawMessage `json:"input,omitempty"`
}

type anthropicUsage struct {
	InputTokens  int `json:"input_tokens"`
	OutputTokens int `json:"output_tokens"`
}

// anthropicMsg is an Anthropic message.
type anthropicMsg struct {
	ID           string           `json:"id"`
	Type         string           `json:"type"`
	Role         string           `json:"role"`
	Model        string           `json:"model"`
	Content      []anthropicBlock `json:"content"`
	StopReason   *string          `json:"stop_reason"`
	StopSequence *string          `json:"stop_sequence"`
	Usage        anthropicUsage   `json:"usage"`
}

// anthropicMessage builds the Anthropic message for the final response
// object: its text, then a tool_use block per function call the gateway did
// not run (the app's own tools).
func anthropicMessage(req *appRequest, final *modelTurn) (*anthropicMsg, error) {
	var ro responseObject
	if err := json.Unmarshal(final.Raw, &ro); err != nil {
		return nil, err
	}
	stop := "end_turn"
	// The message names the model that answered, as the upstream said; the
	// app's model group only when the upstream named none.
	model := servedModel(final.Raw)
	if model == "" {
		model = req.Model
	}
	msg := &anthropicMsg{ID: "msg_" + strings.TrimPrefix(ro.ID, "resp_"), Type: "message", Role: "assistant", Model: model,
		Content: []anthropicBlock{}, StopReason: &stop}
	if ro.Usage != nil {
		msg.Usage = anthropicUsage{InputTokens: ro.Usage.InputTokens, OutputTokens: ro.Usage.OutputTokens}
	}
	if final.Text != "" {
		text := final.Text
		msg.Content = append(msg.Content, anthropicBlock{Type: "text", Text: &text})
	}
	for _, c := range final.Calls {
		input := json.RawMessage(c.Arguments)
		if !json.Valid(input) {
			input = mustJSON(map[string]string{"arguments": c.Arguments})
		}
		msg.Content = append(msg.Content, anthropicBlock{Type: "tool_use", ID: c.ID, Name: c.Name, Input: input})
		stop = "tool_use"
	}
	return msg, nil
}

// anthropicEvents renders the final message as an Anthropic Messages
// stream (api.Messages' events): its start, each block (start, one delta,
// stop), the delta carrying the stop reason and its stop.
func anthropicEvents(req *appRequest, final *modelTurn) ([]sseEvent, error) {
	msg, err := anthropicMessage(req, final)
	if err != nil {
		return nil, err
	}
	var events []sseEvent
	add := func(name string, v any) {
		events = append(events, sseEvent{name: name, data: mustJSON(v)})
	}
	start := *msg
	start.Content = []anthropicBlock{}
	start.StopReason = nil
	start.Usage.OutputTokens = 0
	add(api.MessageStart, map[string]any{"type": api.MessageStart, "message": start})
	for i, b := range msg.Content {
		switch b.Type {
		case "text":
			empty := ""
			add(api.ContentBlockStart, map[string]any{"type": api.ContentBlockStart, "index": i, "content_block": anthropicBlock{Type: "text", Text: &empty}})
			add(api.ContentBlockDelta, map[string]any{"type": api.ContentBlockDelta, "index": i, "delta": map[string]string{"type": "text_delta", "text": *b.Text}})
		case "tool_use":
			add(api.ContentBlockStart, map[string]any{"type": api.ContentBlockStart, "index": i, "content_block": anthropicBlock{Type: "tool_use", ID: b.ID, Name: b.Name, Input: json.RawMessage(`{}`)}})
			add(api.ContentBlockDelta, map[string]any{"type": api.ContentBlockDelta, "index": i, "delta": map[string]string{"type": "input_json_delta", "partial_json": string(b.Input)}})
		}
		add(api.ContentBlockStop, map[string]any{"type": api.ContentBlockStop, "index": i})
	}
	add(api.MessageDelta, map[string]any{"type": api.MessageDelta, "delta": map[string]any{"stop_reason": msg.StopReason, "stop_sequence": nil},
		"usage": map[string]int{"output_tokens": msg.Usage.OutputTokens}})
	add(api.MessageStop, map[string]string{"type": api.MessageStop})
	return events, nil
}
