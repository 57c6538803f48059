package main

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"strings"

	"github.com/modelcontextprotocol/go-sdk/mcp"
	"github.com/openai/openai-go/v3"
	"github.com/openai/openai-go/v3/option"
	"github.com/openai/openai-go/v3/shared"
)

// errTooManyTurns is returned when the model still asks for tools after the
// turn cap.
var errTooManyTurns = errors.New("the model kept calling tools")

// run runs one agent conversation for cfg: the tool loop once, or up to
// 1+cfg.NaiveRetry times while it fails. It prints the model's final text to
// stdout, progress and retries to stderr, and never the API key. It returns
// the last attempt's error; every wait ends with ctx or cfg.Timeout.
func run(ctx context.Context, cfg config, stdout, stderr io.Writer) error {
	if err := cfg.validate(); err != nil {
		return err
	}
	if cfg.MaxTurns == 0 {
		cfg.MaxTurns = defaultMaxTurns
	}
	if cfg.Timeout > 0 {
		var cancel context.CancelFunc
		ctx, cancel = context.WithTimeout(ctx, cfg.Timeout)
		defer cancel()
	}
	if cfg.Token != "" {
		fmt.Fprintf(stderr, "agent: run token %s\n", cfg.Token)
	}
	// The SDK's own retries stay at their defaults (2 retries with backoff that
	// honours retry-after-ms / Retry-After): they repeat one failed model call.
	model := openai.NewClient(option.WithBaseURL(cfg.BaseURL), option.WithAPIKey(cfg.APIKey))

	attempts := 1 + cfg.NaiveRetry
	var err error
	for attempt := 1; attempt <= attempts; attempt++ {
		var answer string
		answer, err = toolLoop(ctx, cfg, &model, stderr)
		if err == nil {
			fmt.Fprintln(stdout, answer)
			return nil
		}
		if ctx.Err() != nil || attempt == attempts {
			break
		}
		// The naive retry: the whole loop again, tools included.
		fmt.Fprintf(stderr, "agent: attempt %d of %d failed: %v; retrying the whole tool loop\n", attempt, attempts, err)
	}
	if attempts > 1 {
		return fmt.Errorf("all %d attempts failed, the last: %w", attempts, err)
	}
	return err
}

// toolLoop is one attempt: connect to the MCP server, list its tools, and
// alternate model calls and tool calls until the model answers text.
func toolLoop(ctx context.Context, cfg config, model *openai.Client, stderr io.Writer) (string, error) {
	client := mcp.NewClient(&mcp.Implementation{Name: "replaycheck-example-agent", Version: "1"}, nil)
	session, err := client.Connect(ctx, &mcp.StreamableClientTransport{Endpoint: cfg.MCPURL}, nil)
	if err != nil {
		return "", fmt.Errorf("connecting to MCP server %s: %w", cfg.MCPURL, err)
	}
	defer session.Close()

	tools, err := chatTools(ctx, session)
	if err != nil {
		return "", fmt.Errorf("listing tools of MCP server %s: %w", cfg.MCPURL, err)
	}
	params := openai.ChatCompletionNewParams{
		Model:    shared.ChatModel(cfg.Model),
		Messages: []openai.ChatCompletionMessageParamUnion{openai.UserMessage(cfg.Prompt)},
		Tools:    tools,
	}
	for turn := 1; turn <= cfg.MaxTurns; turn++ {
		msg, err := complete(ctx, model, params, cfg.Stream)
		if err != nil {
			return "", fmt.Errorf("model call %d (%s) to %s: %w", turn, callKind(turn), cfg.BaseURL, err)
		}
		if len(msg.ToolCalls) == 0 {
			return msg.Content, nil
		}
		params.Messages = append(params.Messages, msg.ToParam())
		for _, call := range msg.ToolCalls {
			result, err := callTool(ctx, session, call)
			if err != nil {
				return "", fmt.Errorf("calling tool %s on MCP server %s: %w", call.Function.Name, cfg.MCPURL, err)
			}
			fmt.Fprintf(stderr, "agent: tool %s: %s\n", call.Function.Name, oneLine(result))
			params.Messages = append(params.Messages, openai.ToolMessage(result, call.ID))
		}
	}
	return "", fmt.Errorf("after %d model calls: %w", cfg.MaxTurns, errTooManyTurns)
}

// callKind names a model call for error messages.
func callKind(turn int) string {
	if turn == 1 {
		return "initial"
	}
	return "follow-up"
}

// chatTools lists the MCP server's tools as chat function tools: name,
// description and input schema.
func chatTools(ctx context.Context, session *mcp.ClientSession) ([]openai.ChatCompletionToolUnionParam, error) {
	var tools []openai.ChatCompletionToolUnionParam
	for tool, err := range session.Tools(ctx, nil) {
		if err != nil {
			return nil, err
		}
		schema, err := parameters(tool.InputSchema)
		if err != nil {
			return nil, fmt.Errorf("input schema of tool %s: %w", tool.Name, err)
		}
		def := shared.FunctionDefinitionParam{Name: tool.Name, Parameters: schema}
		if tool.Description != "" {
			def.Description = openai.String(tool.Description)
		}
		tools = append(tools, openai.ChatCompletionFunctionTool(def))
	}
	return tools, nil
}

// parameters converts an MCP input schema (any JSON value) to the SDK's
// function parameters; a missing schema is an empty object schema.
func parameters(schema any) (shared.FunctionParameters, error) {
	params := shared.FunctionParameters{"type": "object", "properties": map[string]any{}}
	if schema == nil {
		return params, nil
	}
	b, err := json.Marshal(schema)
	if err != nil {
		return nil, err
	}
	if err := json.Unmarshal(b, &params); err != nil {
		return nil, err
	}
	return params, nil
}

// complete makes one model call, plain or streamed, and returns the answer's
// message. A streamed answer is assembled with the SDK's accumulator; a stream
// that ends early is an error.
func complete(ctx context.Context, model *openai.Client, params openai.ChatCompletionNewParams, stream bool) (openai.ChatCompletionMessage, error) {
	if !stream {
		resp, err := model.Chat.Completions.New(ctx, params)
		if err != nil {
			return openai.ChatCompletionMessage{}, err
		}
		if len(resp.Choices) == 0 {
			return openai.ChatCompletionMessage{}, errors.New("the answer has no choices")
		}
		return resp.Choices[0].Message, nil
	}
	s := model.Chat.Completions.NewStreaming(ctx, params)
	defer s.Close()
	var acc openai.ChatCompletionAccumulator
	for s.Next() {
		if !acc.AddChunk(s.Current()) {
			return openai.ChatCompletionMessage{}, errors.New("the stream sent a chunk the accumulator refused")
		}
	}
	if err := s.Err(); err != nil {
		return openai.ChatCompletionMessage{}, err
	}
	if len(acc.Choices) == 0 {
		return openai.ChatCompletionMessage{}, errors.New("the stream ended without a choice")
	}
	if acc.Choices[0].FinishReason == "" {
		return openai.ChatCompletionMessage{}, errors.New("the stream ended without a finish reason")
	}
	return acc.Choices[0].Message, nil
}

// callTool runs one chat tool call through MCP and returns the text sent back
// to the model. A tool result with isError is returned to the model, marked as
// an error; only a failed call (no result) is an error here, after one
// re-issue of a call whose arguments carry an idempotency_key.
func callTool(ctx context.Context, session *mcp.ClientSession, call openai.ChatCompletionMessageToolCallUnion) (string, error) {
	var args map[string]any
	if call.Function.Arguments != "" {
		if err := json.Unmarshal([]byte(call.Function.Arguments), &args); err != nil {
			return "", fmt.Errorf("arguments %q are not a JSON object: %w", call.Function.Arguments, err)
		}
	}
	params := &mcp.CallToolParams{Name: call.Function.Name, Arguments: args}
	res, err := session.CallTool(ctx, params)
	if _, keyed := args["idempotency_key"]; err != nil && keyed && ctx.Err() == nil {
		// The request was lost (refused, reset, its stream broken) and may
		// or may not have run. With an idempotency key the server runs it
		// at most once, so it is re-issued once, as MCP 2026-07-28 asks of
		// a client; a call without a key is not, and the run reports it.
		res, err = session.CallTool(ctx, params)
	}
	if err != nil {
		return "", err
	}
	var parts []string
	for _, c := range res.Content {
		if t, ok := c.(*mcp.TextContent); ok {
			parts = append(parts, t.Text)
			continue
		}
		b, err := json.Marshal(c)
		if err != nil {
			return "", fmt.Errorf("encoding a result block: %w", err)
		}
		parts = append(parts, string(b))
	}
	text := strings.Join(parts, "\n")
	if res.IsError {
		return "error: " + text, nil
	}
	return text, nil
}

// oneLine shortens s to one line for progress output.
func oneLine(s string) string {
	s, _, _ = strings.Cut(s, "\n")
	if len(s) > 120 {
		s = s[:120] + "…"
	}
	return s
}
