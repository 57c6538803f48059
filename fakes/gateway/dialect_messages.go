package gateway

import (
	"encoding/json"
	"strings"
)

// messagesDialect is /v1/messages (Anthropic Messages): sent upstream as a
// Responses call, as LiteLLM does for an OpenAI model (seed 000), and
// answered with an Anthropic message built from the final response object.
type messagesDialect struct{}

func (messagesDialect) conversation(req *appRequest) conversation {
	return responsesDialect{}.conversation(req)
}

// errorCode is null: the seed's /v1/messages errors carry "code": null.
func (messagesDialect) errorCode(int) any { return nil }

func (messagesDialect) detail(e *upstreamError) string { return rawDetail(e) }

func (messagesDialect) answer(req *appRequest, final *modelTurn) ([]byte, error) {
	var ro responseObject
	if err := json.Unmarshal(final.Raw, &ro); err != nil {
		return nil, err
	}
	type block struct {
		Type  string          `json:"type"`
		Text  string          `json:"text,omitempty"`
		ID    string          `json:"id,omitempty"`
		Name  string          `json:"name,omitempty"`
		Input json.RawMessage `json:"input,omitempty"`
	}
	msg := struct {
		ID           string  `json:"id"`
		Type         string  `json:"type"`
		Role         string  `json:"role"`
		Model        string  `json:"model"`
		Content      []block `json:"content"`
		StopReason   string  `json:"stop_reason"`
		StopSequence *string `json:"stop_sequence"`
		Usage        struct {
			InputTokens  int `json:"input_tokens"`
			OutputTokens int `json:"output_tokens"`
		} `json:"usage"`
	}{ID: "msg_" + strings.TrimPrefix(ro.ID, "resp_"), Type: "message", Role: "assistant", Model: req.Model, Content: []block{}, StopReason: "end_turn"}
	if ro.Usage != nil {
		msg.Usage.InputTokens, msg.Usage.OutputTokens = ro.Usage.InputTokens, ro.Usage.OutputTokens
	}
	if final.Text != "" {
		msg.Content = append(msg.Content, block{Type: "text", Text: final.Text})
	}
	for _, c := range final.Calls {
		input := json.RawMessage(c.Arguments)
		if !json.Valid(input) {
			input = mustJSON(map[string]string{"arguments": c.Arguments})
		}
		msg.Content = append(msg.Content, block{Type: "tool_use", ID: c.ID, Name: c.Name, Input: input})
		msg.StopReason = "tool_use"
	}
	return json.Marshal(msg)
}
