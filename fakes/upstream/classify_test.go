package upstream

import (
	"encoding/json"
	"fmt"
	"strings"
	"testing"

	"github.com/replaycheck/replaycheck/internal/wire"
)

// classify returns the kind of a model request body for a dialect (chat,
// responses, messages or gemini): wire.KindFollowUp when it carries a tool
// result — a chat message of role tool or function, a Responses
// *_call_output input item (or an mcp_call with its output), a Messages
// user block of type tool_result, a Gemini functionResponse part — else
// wire.KindInitial. A body that is not a JSON object is an
// error. It never panics. Tests use it to judge the dialects' parsers.
func classify(endpoint string, body []byte) (wire.RequestKind, error) {
	de, ok := dialectByName(endpoint)
	if !ok {
		return "", fmt.Errorf("classify: unknown endpoint %q; want chat, responses, messages or gemini", endpoint)
	}
	req, err := de.d.parse(body)
	if err != nil {
		return "", fmt.Errorf("classify %s request: %w", endpoint, err)
	}
	if req.FollowUp {
		return wire.KindFollowUp, nil
	}
	return wire.KindInitial, nil
}

func TestClassify(t *testing.T) {
	tests := []struct {
		name     string
		endpoint string
		body     string
		want     wire.RequestKind
		wantErr  bool
	}{
		{"chat initial", "chat", `{"messages":[{"role":"user","content":"hi"}]}`, wire.KindInitial, false},
		{"chat tool", "chat", `{"messages":[{"role":"user","content":"hi"},{"role":"tool","content":"ok","tool_call_id":"c"}]}`, wire.KindFollowUp, false},
		{"chat legacy function", "chat", `{"messages":[{"role":"function","name":"f","content":"ok"}]}`, wire.KindFollowUp, false},
		{"chat escaped key", "chat", `{"messages":[{"r\u006fle":"tool"}]}`, wire.KindFollowUp, false},
		{"chat tool in text only", "chat", `{"messages":[{"role":"user","content":"role tool"}]}`, wire.KindInitial, false},
		{"responses string", "responses", `{"input":"hi"}`, wire.KindInitial, false},
		{"responses function_call_output", "responses", `{"input":[{"type":"function_call_output","call_id":"c","output":"ok"}]}`, wire.KindFollowUp, false},
		{"responses custom output", "responses", `{"input":[{"type":"custom_tool_call_output","call_id":"c","output":"ok"}]}`, wire.KindFollowUp, false},
		{"responses mcp_call with output", "responses", `{"input":[{"type":"mcp_call","output":"ok"}]}`, wire.KindFollowUp, false},
		{"responses mcp_call without output", "responses", `{"input":[{"type":"mcp_call","output":null}]}`, wire.KindInitial, false},
		{"responses function_call only", "responses", `{"input":[{"type":"function_call","call_id":"c"}]}`, wire.KindInitial, false},
		{"messages initial", "messages", `{"messages":[{"role":"user","content":"hi"}]}`, wire.KindInitial, false},
		{"messages tool_result", "messages", `{"messages":[{"role":"user","content":[{"type":"tool_result","tool_use_id":"t","content":"ok"}]}]}`, wire.KindFollowUp, false},
		{"messages tool_result from assistant", "messages", `{"messages":[{"role":"assistant","content":[{"type":"tool_result"}]}]}`, wire.KindInitial, false},
		{"gemini initial", "gemini", `{"contents":[{"role":"user","parts":[{"text":"hi"}]}]}`, wire.KindInitial, false},
		{"gemini functionCall only", "gemini", `{"contents":[{"role":"user","parts":[{"text":"hi"}]},{"role":"model","parts":[{"functionCall":{"name":"f","args":{}}}]}]}`, wire.KindInitial, false},
		{"gemini functionResponse", "gemini", `{"contents":[{"role":"model","parts":[{"functionCall":{"name":"f"}}]},{"role":"user","parts":[{"functionResponse":{"name":"f","response":{"output":"ok"}}}]}]}`, wire.KindFollowUp, false},
		{"gemini snake_case", "gemini", `{"contents":[{"role":"function","parts":[{"function_response":{"name":"f","response":{}}}]}]}`, wire.KindFollowUp, false},
		{"gemini functionResponse null", "gemini", `{"contents":[{"parts":[{"functionResponse":null}]}]}`, wire.KindInitial, false},
		{"gemini contents not array", "gemini", `{"contents":{"parts":[]}}`, "", true},
		{"not JSON", "chat", `{`, "", true},
		{"not object", "messages", `"x"`, "", true},
		{"unknown endpoint", "embeddings", `{}`, "", true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := classify(tt.endpoint, []byte(tt.body))
			if (err != nil) != tt.wantErr {
				t.Fatalf("err = %v, wantErr %v", err, tt.wantErr)
			}
			diff(t, "kind", tt.want, got)
		})
	}
}

// Rounds count runs of tool results, per dialect.
func TestRounds(t *testing.T) {
	tests := []struct {
		name     string
		endpoint string
		body     string
		want     int
	}{
		{"chat two parallel results are one round", "chat", `{"messages":[{"role":"user"},{"role":"assistant"},{"role":"tool"},{"role":"tool"}]}`, 1},
		{"chat two rounds", "chat", `{"messages":[{"role":"user"},{"role":"assistant"},{"role":"tool"},{"role":"assistant"},{"role":"tool"}]}`, 2},
		{"responses two rounds", "responses", `{"input":[{"type":"function_call"},{"type":"function_call_output"},{"type":"function_call"},{"type":"function_call_output"}]}`, 2},
		{"gemini two parallel results are one round", "gemini", `{"contents":[{"role":"user","parts":[{"text":"x"}]},{"role":"model","parts":[{"functionCall":{}},{"functionCall":{}}]},{"role":"user","parts":[{"functionResponse":{}},{"functionResponse":{}}]}]}`, 1},
		{"gemini results in consecutive contents are one round", "gemini", `{"contents":[{"role":"user","parts":[{"functionResponse":{}}]},{"role":"user","parts":[{"functionResponse":{}}]}]}`, 1},
		{"gemini two rounds", "gemini", `{"contents":[{"role":"user","parts":[{"functionResponse":{}}]},{"role":"model","parts":[{"functionCall":{}}]},{"role":"user","parts":[{"functionResponse":{}}]}]}`, 2},
		{"messages two rounds", "messages", `{"messages":[{"role":"user","content":[{"type":"tool_result"}]},{"role":"assistant","content":"x"},{"role":"user","content":[{"type":"tool_result"},{"type":"tool_result"}]}]}`, 2},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			de, _ := dialectByName(tt.endpoint)
			req, err := de.d.parse([]byte(tt.body))
			if err != nil {
				t.Fatal(err)
			}
			diff(t, "rounds", tt.want, req.Rounds)
		})
	}
}

func TestAppendJSONString(t *testing.T) {
	for _, s := range []string{"plain", "quote\" back\\ nl\n tab\t", "\x00\x1f ctl", "uni é ✓ \u2028", "bad \xff utf8", strings.Repeat("x", 100)} {
		b := appendJSONString(nil, s)
		var got string
		if err := json.Unmarshal(b, &got); err != nil {
			t.Fatalf("%q gave invalid JSON %s: %v", s, b, err)
		}
		want := strings.ToValidUTF8(s, "\ufffd")
		diff(t, "round trip of "+s, want, got)
	}
}
