package upstream

import (
	"context"
	"encoding/json"
	"strings"
	"testing"

	"github.com/openai/openai-go/v3"
	"github.com/openai/openai-go/v3/option"
	"github.com/openai/openai-go/v3/shared"
)

func openaiClient(url string) *openai.Client {
	c := openai.NewClient(option.WithBaseURL(url+"/v1"), option.WithAPIKey("test"), option.WithMaxRetries(0))
	return &c
}

func chatParams(tok string, toolName string) openai.ChatCompletionNewParams {
	p := openai.ChatCompletionNewParams{
		Model:    "gpt-test",
		Messages: []openai.ChatCompletionMessageParamUnion{openai.UserMessage(prompt(tok))},
	}
	if toolName != "" {
		p.Tools = []openai.ChatCompletionToolUnionParam{openai.ChatCompletionFunctionTool(shared.FunctionDefinitionParam{
			Name:       toolName,
			Parameters: shared.FunctionParameters{"type": "object", "properties": map[string]any{"entry": map[string]any{"type": "string"}}},
		})}
	}
	return p
}

func TestChatSDK(t *testing.T) {
	tests := []struct {
		name     string
		stream   bool
		toolName string
		wantCall string // "" = text answer
	}{
		{"plain", false, "commit_write", "commit_write"},
		{"stream", true, "commit_write", "commit_write"},
		{"suffix match", false, "ledger-commit_write", "ledger-commit_write"},
		{"suffix match stream", true, "ledger-commit_write", "ledger-commit_write"},
		{"no matching tool", false, "read_ledger", ""},
		{"no tools stream", true, "", ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			s, srv, log := newFake(t, Config{})
			tok := token(t)
			client := openaiClient(srv.URL)
			ctx := context.Background()
			params := chatParams(tok, tt.toolName)

			var msg openai.ChatCompletionMessage
			if tt.stream {
				stream := client.Chat.Completions.NewStreaming(ctx, params)
				var acc openai.ChatCompletionAccumulator
				var finished []openai.FinishedChatCompletionToolCall
				for stream.Next() {
					if !acc.AddChunk(stream.Current()) {
						t.Fatalf("accumulator refused chunk %s", stream.Current().RawJSON())
					}
					if tc, ok := acc.JustFinishedToolCall(); ok {
						finished = append(finished, tc)
					}
				}
				if err := stream.Err(); err != nil {
					t.Fatalf("stream: %v", err)
				}
				if tt.wantCall != "" && len(finished) != 1 {
					t.Errorf("JustFinishedToolCall fired %d times, want 1", len(finished))
				}
				if !strings.Contains(acc.ID, tok) {
					t.Errorf("completion id %q lacks token %s", acc.ID, tok)
				}
				msg = acc.Choices[0].Message
			} else {
				resp, err := client.Chat.Completions.New(ctx, params)
				if err != nil {
					t.Fatalf("New: %v", err)
				}
				if !strings.Contains(resp.ID, tok) {
					t.Errorf("completion id %q lacks token %s", resp.ID, tok)
				}
				msg = resp.Choices[0].Message
			}
			if tt.wantCall == "" {
				diff(t, "text", "done", msg.Content)
				diff(t, "tool calls", 0, len(msg.ToolCalls))
				return
			}
			if len(msg.ToolCalls) != 1 {
				t.Fatalf("got %d tool calls, want 1: %+v", len(msg.ToolCalls), msg)
			}
			call := msg.ToolCalls[0]
			diff(t, "tool name", tt.wantCall, call.Function.Name)
			var args map[string]string
			if err := json.Unmarshal([]byte(call.Function.Arguments), &args); err != nil {
				t.Fatalf("arguments %q: %v", call.Function.Arguments, err)
			}
			diff(t, "arguments", map[string]string{"entry": "alpha-" + tok}, args)
			if !strings.Contains(call.ID, tok) {
				t.Errorf("tool call id %q lacks token", call.ID)
			}

			// The follow-up carries the tool result (and repeats the prompt).
			params.Messages = append(params.Messages, msg.ToParam(), openai.ToolMessage("recorded", call.ID))
			var text string
			if tt.stream {
				stream := client.Chat.Completions.NewStreaming(ctx, params)
				var acc openai.ChatCompletionAccumulator
				for stream.Next() {
					acc.AddChunk(stream.Current())
				}
				if err := stream.Err(); err != nil {
					t.Fatalf("follow-up stream: %v", err)
				}
				text = acc.Choices[0].Message.Content
				diff(t, "finish reason", "stop", acc.Choices[0].FinishReason)
			} else {
				resp, err := client.Chat.Completions.New(ctx, params)
				if err != nil {
					t.Fatalf("follow-up: %v", err)
				}
				text = resp.Choices[0].Message.Content
			}
			diff(t, "follow-up text", "done", text)
			diff(t, "counts", oneCleanLoop(), s.Counts(tok))
			checkCallIDs(t, s, tok, call.ID)
			diff(t, "log", oneCleanLoopLog("/v1/chat/completions"), log.String())
		})
	}
}

// A follow-up that repeats no prompt text is attributed by the ids it carries.
func TestChatFollowUpAttributedByID(t *testing.T) {
	s, srv, _ := newFake(t, Config{})
	tok := token(t)
	client := openaiClient(srv.URL)
	params := chatParams(tok, "commit_write")
	resp, err := client.Chat.Completions.New(context.Background(), params)
	if err != nil {
		t.Fatal(err)
	}
	call := resp.Choices[0].Message.ToolCalls[0]
	params.Messages = []openai.ChatCompletionMessageParamUnion{resp.Choices[0].Message.ToParam(), openai.ToolMessage("ok", call.ID)}
	if _, err := client.Chat.Completions.New(context.Background(), params); err != nil {
		t.Fatal(err)
	}
	diff(t, "counts", oneCleanLoop(), s.Counts(tok))
}

// The streamed tool-call answer is exactly seven data chunks with "id" first,
// then [DONE]; with include_usage the usage chunk comes before [DONE].
func TestChatStreamShape(t *testing.T) {
	tests := []struct {
		name       string
		usage      bool
		wantChunks int
	}{
		{"no usage", false, 7},
		{"include usage", true, 8},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, srv, _ := newFake(t, Config{})
			tok := token(t)
			body := `{"model":"m","stream":true,"messages":[{"role":"user","content":"` + prompt(tok) + `"}],"tools":[{"type":"function","function":{"name":"commit_write","parameters":{}}}]`
			if tt.usage {
				body += `,"stream_options":{"include_usage":true}`
			}
			status, out, h := post(t, srv.URL+"/v1/chat/completions", body+"}")
			diff(t, "status", 200, status)
			if ct := h.Get("Content-Type"); !strings.HasPrefix(ct, "text/event-stream") {
				t.Errorf("Content-Type = %q", ct)
			}
			diff(t, `data: {"id" chunks`, tt.wantChunks, strings.Count(out, "\ndata: {\"id\"")+boolInt(strings.HasPrefix(out, "data: {\"id\"")))
			if !strings.HasSuffix(out, "data: [DONE]\n\n") {
				t.Errorf("stream does not end with [DONE]: %q", out[max(0, len(out)-40):])
			}
			if tt.usage && !strings.Contains(out, `"choices":[],"usage":{`) {
				t.Errorf("no usage chunk in %s", out)
			}
			if strings.Count(out, `"finish_reason":"tool_calls"`) != 1 {
				t.Errorf("want one finish_reason tool_calls chunk")
			}
		})
	}
}

func boolInt(b bool) int {
	if b {
		return 1
	}
	return 0
}

// Parallel calls: a group of consecutive call steps is one answer; the next
// follow-up gets the next group; then the say text.
func TestChatScriptTurns(t *testing.T) {
	s, srv, _ := newFake(t, Config{})
	tok := token(t)
	script, err := ParseScript([]byte(`[{call: commit_write, arguments: {entry: a}}, {call: commit_write, arguments: {entry: b}}, {say: between}, {call: read_ledger}, {say: finished}]`))
	if err != nil {
		t.Fatal(err)
	}
	if err := s.Arm(tok, &script, nil); err != nil {
		t.Fatal(err)
	}
	client := openaiClient(srv.URL)
	params := chatParams(tok, "commit_write")
	params.Tools = append(params.Tools, openai.ChatCompletionFunctionTool(shared.FunctionDefinitionParam{Name: "read_ledger"}))
	var got [][]string
	for range 3 {
		resp, err := client.Chat.Completions.New(context.Background(), params)
		if err != nil {
			t.Fatal(err)
		}
		m := resp.Choices[0].Message
		var turn []string
		for _, c := range m.ToolCalls {
			turn = append(turn, c.Function.Name+" "+c.Function.Arguments)
		}
		if len(m.ToolCalls) == 0 {
			turn = append(turn, "say "+m.Content)
		}
		got = append(got, turn)
		params.Messages = append(params.Messages, m.ToParam())
		for _, c := range m.ToolCalls {
			params.Messages = append(params.Messages, openai.ToolMessage("ok", c.ID))
		}
	}
	diff(t, "turns", [][]string{
		{`commit_write {"entry":"a"}`, `commit_write {"entry":"b"}`},
		{`read_ledger {}`},
		{"say finished"},
	}, got)
}

// Legacy "functions" are answered with message.function_call.
func TestChatLegacyFunctions(t *testing.T) {
	_, srv, _ := newFake(t, Config{})
	tok := token(t)
	status, out, _ := post(t, srv.URL+"/v1/chat/completions", `{"model":"m","messages":[{"role":"user","content":"`+prompt(tok)+`"}],"functions":[{"name":"commit_write"}]}`)
	diff(t, "status", 200, status)
	var resp openai.ChatCompletion
	if err := json.Unmarshal([]byte(out), &resp); err != nil {
		t.Fatal(err)
	}
	diff(t, "finish_reason", "function_call", resp.Choices[0].FinishReason)
	diff(t, "function_call", `commit_write {"entry":"alpha-`+tok+`"}`, resp.Choices[0].Message.FunctionCall.Name+" "+resp.Choices[0].Message.FunctionCall.Arguments)
}

// Custom tools are called with a custom tool call carrying free-form input.
func TestChatCustomTool(t *testing.T) {
	_, srv, _ := newFake(t, Config{})
	tok := token(t)
	status, out, _ := post(t, srv.URL+"/v1/chat/completions", `{"model":"m","messages":[{"role":"user","content":"`+prompt(tok)+`"}],"tools":[{"type":"custom","custom":{"name":"commit_write"}}]}`)
	diff(t, "status", 200, status)
	var resp openai.ChatCompletion
	if err := json.Unmarshal([]byte(out), &resp); err != nil {
		t.Fatal(err)
	}
	c := resp.Choices[0].Message.ToolCalls[0]
	diff(t, "custom call", `custom commit_write {"entry":"alpha-`+tok+`"}`, c.Type+" "+c.Custom.Name+" "+c.Custom.Input)
}
