package gateway

import (
	"encoding/json"
	"strings"

	api "github.com/replaycheck/replaycheck/internal/dialect"
)

// messagesDialect is messages (api.Messages, Anthropic Messages): sent upstream as a
// Responses call, as LiteLLM does for an OpenAI model (seed 000), and
// answered with an Anthropic message built from the final response object.
type messagesDialect struct{}

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
