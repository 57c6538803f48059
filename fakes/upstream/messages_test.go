package upstream

import (
	"context"
	"strings"
	"testing"

	"github.com/anthropics/anthropic-sdk-go/v2"
	aoption "github.com/anthropics/anthropic-sdk-go/v2/option"
)

func anthropicClient(url string) *anthropic.Client {
	c := anthropic.NewClient(aoption.WithBaseURL(url+"/"), aoption.WithAPIKey("test"), aoption.WithMaxRetries(0))
	return &c
}

func messagesParams(tok string, toolNames ...string) anthropic.MessageNewParams {
	p := anthropic.MessageNewParams{
		Model:     "claude-test",
		MaxTokens: 1024,
		Messages:  []anthropic.MessageParam{anthropic.NewUserMessage(anthropic.NewTextBlock(prompt(tok)))},
	}
	for _, n := range toolNames {
		p.Tools = append(p.Tools, anthropic.ToolUnionParam{OfTool: &anthropic.ToolParam{
			Name:        n,
			InputSchema: anthropic.ToolInputSchemaParam{Properties: map[string]any{"entry": map[string]any{"type": "string"}}},
		}})
	}
	return p
}

// sendMessage sends params with the SDK, streamed or not, and returns the
// message; streamed, also the types of the events in order.
func sendMessage(t *testing.T, ctx context.Context, client *anthropic.Client, params anthropic.MessageNewParams, stream bool) (anthropic.Message, []string) {
	t.Helper()
	if !stream {
		m, err := client.Messages.New(ctx, params)
		if err != nil {
			t.Fatalf("New: %v", err)
		}
		return *m, nil
	}
	var msg anthropic.Message
	var types []string
	events := client.Messages.NewStreaming(ctx, params)
	for events.Next() {
		ev := events.Current()
		types = append(types, ev.Type)
		if err := msg.Accumulate(ev); err != nil {
			t.Fatalf("Accumulate: %v", err)
		}
	}
	if err := events.Err(); err != nil {
		t.Fatalf("stream: %v", err)
	}
	return msg, types
}

func TestMessagesSDK(t *testing.T) {
	tests := []struct {
		name     string
		stream   bool
		tools    []string
		wantCall string
	}{
		{"plain", false, []string{"commit_write"}, "commit_write"},
		{"stream", true, []string{"commit_write"}, "commit_write"},
		{"suffix match", false, []string{"ledger-commit_write"}, "ledger-commit_write"},
		{"suffix match stream", true, []string{"ledger-commit_write"}, "ledger-commit_write"},
		{"no matching tool", false, []string{"read_ledger"}, ""},
		{"no tools stream", true, nil, ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			s, srv, log := newFake(t, Config{})
			tok := token(t)
			client := anthropicClient(srv.URL)
			ctx := context.Background()
			params := messagesParams(tok, tt.tools...)

			msg, types := sendMessage(t, ctx, client, params, tt.stream)
			if tt.stream && types[len(types)-1] != "message_stop" {
				t.Errorf("events %v", types)
			}
			if !strings.Contains(msg.ID, tok) {
				t.Errorf("message id %q lacks token", msg.ID)
			}
			if tt.wantCall == "" {
				diff(t, "stop reason", anthropic.StopReasonEndTurn, msg.StopReason)
				diff(t, "text", "done", msg.Content[0].Text)
				return
			}
			diff(t, "stop reason", anthropic.StopReasonToolUse, msg.StopReason)
			if len(msg.Content) != 1 {
				t.Fatalf("content has %d blocks", len(msg.Content))
			}
			tu := msg.Content[0].AsToolUse()
			diff(t, "tool use", tt.wantCall+` {"entry":"alpha-`+tok+`"}`, tu.Name+" "+string(tu.Input))
			if !strings.HasPrefix(tu.ID, "toolu_") || !strings.Contains(tu.ID, tok) {
				t.Errorf("tool_use id %q", tu.ID)
			}

			params.Messages = append(params.Messages, msg.ToParam(), anthropic.NewUserMessage(anthropic.NewToolResultBlock(tu.ID, "recorded", false)))
			follow, _ := sendMessage(t, ctx, client, params, tt.stream)
			diff(t, "follow-up text", "done", follow.Content[0].Text)
			diff(t, "follow-up stop", anthropic.StopReasonEndTurn, follow.StopReason)
			diff(t, "counts", oneCleanLoop(), s.Counts(tok))
			checkCallIDs(t, s, tok, tu.ID)
			diff(t, "log", oneCleanLoopLog("/v1/messages"), log.String())
		})
	}
}
