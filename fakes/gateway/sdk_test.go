package gateway

import (
	"context"
	"encoding/json"
	"errors"
	"net/http"
	"strings"
	"testing"

	"github.com/anthropics/anthropic-sdk-go/v2"
	aoption "github.com/anthropics/anthropic-sdk-go/v2/option"
	"github.com/openai/openai-go/v3"
	"github.com/openai/openai-go/v3/option"
	"github.com/openai/openai-go/v3/packages/ssestream"
	"github.com/openai/openai-go/v3/responses"
)

// The official SDKs judge the gateway's answers: each endpoint, plain and
// streamed, is read with openai-go or anthropic-sdk-go, the MCP tool entry
// set on the body as the seed's apps do.

func mcpToolsJSON() []map[string]any {
	var tools []map[string]any
	if err := json.Unmarshal([]byte(seedTools), &tools); err != nil {
		panic(err)
	}
	return tools
}

func openaiGatewayClient(r *rig) openai.Client {
	return openai.NewClient(option.WithBaseURL(r.url+"/v1"), option.WithAPIKey(seedKey), option.WithMaxRetries(0),
		option.WithJSONSet("tools", mcpToolsJSON()))
}

func TestSDKChat(t *testing.T) {
	r := newRig(t, nil, nil)
	client := openaiGatewayClient(r)
	ctx := context.Background()
	params := openai.ChatCompletionNewParams{Model: "repro-model", Messages: []openai.ChatCompletionMessageParamUnion{openai.UserMessage(seedAsk)}}

	cc, err := client.Chat.Completions.New(ctx, params)
	if err != nil {
		t.Fatalf("New: %v", err)
	}
	if got := cc.Choices[0].Message.Content; got != "done" {
		t.Errorf("content = %q, want done", got)
	}

	stream := client.Chat.Completions.NewStreaming(ctx, params)
	var acc openai.ChatCompletionAccumulator
	chunks := 0
	for stream.Next() {
		chunks++
		acc.AddChunk(stream.Current())
	}
	if err := stream.Err(); err != nil {
		t.Fatalf("stream: %v", err)
	}
	// The first model answer (a tool call) and the follow-up (done) both
	// reach the app; the accumulator sees their chunks.
	if chunks < 8 {
		t.Errorf("chunks = %d, want the tool call's and the answer's", chunks)
	}
	if got := r.ledgerLines(); got != 2 {
		t.Errorf("writes = %d, want 2", got)
	}
}

func TestSDKResponses(t *testing.T) {
	r := newRig(t, nil, nil)
	client := openaiGatewayClient(r)
	ctx := context.Background()
	params := responses.ResponseNewParams{Model: "repro-model", Input: responses.ResponseNewParamsInputUnion{OfString: openai.String(seedAsk)}}

	resp, err := client.Responses.New(ctx, params)
	if err != nil {
		t.Fatalf("New: %v", err)
	}
	if got := resp.OutputText(); got != "done" {
		t.Errorf("output text = %q, want done", got)
	}

	stream := client.Responses.NewStreaming(ctx, params)
	var types []string
	var final *responses.Response
	for stream.Next() {
		ev := stream.Current()
		types = append(types, ev.Type)
		if ev.Type == "response.completed" {
			r := ev.Response
			final = &r
		}
	}
	if err := stream.Err(); err != nil {
		t.Fatalf("stream: %v", err)
	}
	if final == nil || final.OutputText() != "done" {
		t.Fatalf("no completed response with text done; events %v", types)
	}
	if types[0] != "response.created" {
		t.Errorf("first event %s", types[0])
	}
	if got := r.ledgerLines(); got != 2 {
		t.Errorf("writes = %d, want 2", got)
	}
	if got := r.upstream.Total(); got.Initial != 2 || got.FollowUp != 2 {
		t.Errorf("upstream %+v, want 2 initial and 2 follow-ups", got)
	}
	var streamed int
	for _, req := range r.upstream.Requests("") {
		if req.Stream {
			streamed++
		}
	}
	if streamed != 2 {
		t.Errorf("streamed upstream calls = %d, want 2 (the streamed request goes upstream streamed)", streamed)
	}
}

func TestSDKMessages(t *testing.T) {
	r := newRig(t, nil, nil)
	client := anthropic.NewClient(aoption.WithBaseURL(r.url+"/"), aoption.WithAPIKey(seedKey), aoption.WithMaxRetries(0),
		aoption.WithJSONSet("tools", mcpToolsJSON()))
	ctx := context.Background()
	params := anthropic.MessageNewParams{Model: "repro-model", MaxTokens: 1024,
		Messages: []anthropic.MessageParam{anthropic.NewUserMessage(anthropic.NewTextBlock(seedAsk))}}

	msg, err := client.Messages.New(ctx, params)
	if err != nil {
		t.Fatalf("New: %v", err)
	}
	if len(msg.Content) != 1 || msg.Content[0].Text != "done" || msg.StopReason != anthropic.StopReasonEndTurn {
		t.Errorf("message %s", msg.RawJSON())
	}

	stream := client.Messages.NewStreaming(ctx, params)
	var acc anthropic.Message
	for stream.Next() {
		if err := acc.Accumulate(stream.Current()); err != nil {
			t.Fatalf("Accumulate: %v", err)
		}
	}
	if err := stream.Err(); err != nil {
		t.Fatalf("stream: %v", err)
	}
	if len(acc.Content) != 1 || acc.Content[0].Text != "done" || acc.StopReason != anthropic.StopReasonEndTurn {
		t.Errorf("accumulated message: %+v", acc)
	}
	if got := r.ledgerLines(); got != 2 {
		t.Errorf("writes = %d, want 2", got)
	}
}

// TestSDKErrors checks that the SDKs read the gateway's error answers.
func TestSDKErrors(t *testing.T) {
	r := newRig(t, nil, nil)
	r.touch("fault_on")
	ctx := context.Background()
	oc := openaiGatewayClient(r)
	_, err := oc.Chat.Completions.New(ctx, openai.ChatCompletionNewParams{Model: "repro-model",
		Messages: []openai.ChatCompletionMessageParamUnion{openai.UserMessage(seedAsk)}})
	var oe *openai.Error
	if !errors.As(err, &oe) || oe.StatusCode != http.StatusInternalServerError || oe.Code != "500" {
		t.Errorf("openai error = %v", err)
	}
	client := anthropic.NewClient(aoption.WithBaseURL(r.url+"/"), aoption.WithAPIKey(seedKey), aoption.WithMaxRetries(0),
		aoption.WithJSONSet("tools", mcpToolsJSON()))
	_, err = client.Messages.New(ctx, anthropic.MessageNewParams{Model: "repro-model", MaxTokens: 1024,
		Messages: []anthropic.MessageParam{anthropic.NewUserMessage(anthropic.NewTextBlock(seedAsk))}})
	var ae *anthropic.Error
	if !errors.As(err, &ae) || ae.StatusCode != http.StatusInternalServerError {
		t.Errorf("anthropic error = %v", err)
	}
	if got := r.ledgerLines(); got != 2 {
		t.Errorf("writes = %d, want 2 (one per request, guarded)", got)
	}
}

// TestBufferedStreamFailures: a streamed Responses or Messages request
// delivers nothing before its final answer, so a failed or dropped follow-up
// is answered with a plain error, and only naive re-runs the tool.
func TestBufferedStreamFailures(t *testing.T) {
	tests := []struct {
		name       string
		mode       string
		path       string
		flag       string
		wantWrites int
		wantMsg    string
	}{
		{"responses follow-up 500 guarded", ModeGuarded, pathResponses, "fault_on", 1, "injected follow-up failure"},
		{"responses follow-up 500 naive", ModeNaive, pathResponses, "fault_on", 3, "injected follow-up failure"},
		{"messages dropped follow-up guarded", ModeGuarded, pathMessages, "drop_stream", 1, "APIConnectionError: APIConnectionError: OpenAIException - Response payload is not completed"},
		{"messages dropped follow-up naive", ModeNaive, pathMessages, "drop_stream", 3, "APIConnectionError: APIConnectionError: OpenAIException - Response payload is not completed"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			r := newRig(t, mustBugs(t, tt.mode), nil)
			r.touch(tt.flag)
			status, body := r.post(tt.path, seedBody(tt.path, seedAsk, false, true))
			if status != http.StatusInternalServerError {
				t.Fatalf("status = %d, want 500: %s", status, body)
			}
			if msg, _ := errorOf(t, body); !strings.Contains(msg, tt.wantMsg) {
				t.Errorf("message %q lacks %q", msg, tt.wantMsg)
			}
			if got := r.ledgerLines(); got != tt.wantWrites {
				t.Errorf("writes = %d, want %d", got, tt.wantWrites)
			}
		})
	}
}

// TestSDKChatStreamErrorEvent: when the follow-up stream drops after the
// tool ran, openai-go reads the chunks already delivered and then the
// gateway's SSE error event as a stream error; the tool ran once.
func TestSDKChatStreamErrorEvent(t *testing.T) {
	r := newRig(t, nil, nil)
	r.touch("drop_stream")
	client := openaiGatewayClient(r)
	stream := client.Chat.Completions.NewStreaming(context.Background(), openai.ChatCompletionNewParams{Model: "repro-model",
		Messages: []openai.ChatCompletionMessageParamUnion{openai.UserMessage(seedAsk)}})
	chunks := 0
	for stream.Next() {
		chunks++
	}
	var se *ssestream.StreamError
	if err := stream.Err(); !errors.As(err, &se) || !strings.Contains(se.Message, "Response payload is not completed") {
		t.Errorf("stream error = %v, want the gateway's error event", err)
	}
	if chunks != 7 {
		t.Errorf("chunks before the error = %d, want the first answer's 7", chunks)
	}
	r.wantLedgerLines(1)
}
