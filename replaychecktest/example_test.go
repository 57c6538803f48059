package replaychecktest_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strings"

	"github.com/modelcontextprotocol/go-sdk/mcp"
	"github.com/openai/openai-go/v3"
	"github.com/openai/openai-go/v3/option"
	"github.com/openai/openai-go/v3/shared"

	"github.com/replaycheck/replaycheck/fakes/fault"
	"github.com/replaycheck/replaycheck/fakes/upstream"
	"github.com/replaycheck/replaycheck/replaychecktest"
)

// agent is the code under test, written as an application would write it
// with openai-go and the MCP Go SDK: it offers the MCP server's tools to the
// model, runs each tool call the model asks for on the server, sends the
// results back, and returns the model's final text. The SDK retries a failed
// model request (retries times): a re-send of the request, never of a tool.
func agent(ctx context.Context, modelURL, mcpURL string, retries int) (string, error) {
	mcpClient := mcp.NewClient(&mcp.Implementation{Name: "agent", Version: "1"}, nil)
	session, err := mcpClient.Connect(ctx, &mcp.StreamableClientTransport{Endpoint: mcpURL, MaxRetries: -1}, nil)
	if err != nil {
		return "", err
	}
	defer session.Close()
	list, err := session.ListTools(ctx, nil)
	if err != nil {
		return "", err
	}
	var tools []openai.ChatCompletionToolUnionParam
	for _, tool := range list.Tools {
		var params shared.FunctionParameters
		b, _ := json.Marshal(tool.InputSchema)
		_ = json.Unmarshal(b, &params)
		tools = append(tools, openai.ChatCompletionFunctionTool(shared.FunctionDefinitionParam{Name: tool.Name, Parameters: params}))
	}

	model := openai.NewClient(option.WithBaseURL(modelURL), option.WithAPIKey("test-key"), option.WithMaxRetries(retries))
	messages := []openai.ChatCompletionMessageParamUnion{openai.UserMessage("Record today's entry with commit_write, then reply done.")}
	for range 4 {
		resp, err := model.Chat.Completions.New(ctx, openai.ChatCompletionNewParams{Model: "gpt-4o", Messages: messages, Tools: tools})
		if err != nil {
			return "", err
		}
		msg := resp.Choices[0].Message
		if len(msg.ToolCalls) == 0 {
			return msg.Content, nil
		}
		messages = append(messages, msg.ToParam())
		for _, call := range msg.ToolCalls {
			var args map[string]any
			if err := json.Unmarshal([]byte(call.Function.Arguments), &args); err != nil {
				return "", err
			}
			res, err := session.CallTool(ctx, &mcp.CallToolParams{Name: call.Function.Name, Arguments: args})
			if err != nil {
				return "", err
			}
			var text strings.Builder
			for _, c := range res.Content {
				if t, ok := c.(*mcp.TextContent); ok {
					text.WriteString(t.Text)
				}
			}
			messages = append(messages, openai.ToolMessage(text.String(), call.ID))
		}
	}
	return "", errors.New("the model kept calling tools")
}

// A test of the agent: the first follow-up model request (the one carrying
// the tool's result) fails with 500. openai-go re-sends that request, so
// the tool ran once and the agent still answers: the replay rules pass. In
// a test, replaychecktest.Start(t, nil) starts the fakes and
// replaychecktest.Require(t, verdicts) fails it on a rule that did not
// pass.
func Example() {
	f, err := replaychecktest.New(&replaychecktest.Options{Name: "TestAgentFollowUp500"})
	if err != nil {
		fmt.Println(err)
		return
	}
	defer f.Close()
	err = f.ArmModel(upstream.Fault{On: "follow_up", Respond: &upstream.Respond{Status: 500}, Times: fault.Once})
	if err != nil {
		fmt.Println(err)
		return
	}

	answer, err := agent(context.Background(), f.ModelURL, f.MCPURL, 2)
	fmt.Printf("answer %q, error %v\n", answer, err)
	c := f.Counts()
	fmt.Printf("writes %d, model requests: %d initial, %d follow-up\n", c.MCP.Writes, c.Upstream.Initial, c.Upstream.FollowUp)
	for _, v := range f.Check(err, "no-replay-after-dispatch", "error-surfaces") {
		fmt.Println(v.Check, v.Status)
	}
	// Output:
	// answer "done", error <nil>
	// writes 1, model requests: 1 initial, 2 follow-up
	// no-replay-after-dispatch pass
	// error-surfaces pass
}

// An agent that retries its whole loop when a model request fails runs the
// tool again: two writes for one task, and no-replay-after-dispatch fails
// with the counts that show it.
func Example_wholeLoopRetry() {
	f, err := replaychecktest.New(&replaychecktest.Options{Name: "TestAgentWholeLoopRetry"})
	if err != nil {
		fmt.Println(err)
		return
	}
	defer f.Close()
	if err := f.ArmModel(upstream.Fault{On: "follow_up", Respond: &upstream.Respond{Status: 500}, Times: fault.Once}); err != nil {
		fmt.Println(err)
		return
	}

	ctx := context.Background()
	answer, err := agent(ctx, f.ModelURL, f.MCPURL, 0) // no SDK retries …
	if err != nil {
		answer, err = agent(ctx, f.ModelURL, f.MCPURL, 0) // … the whole task again
	}
	fmt.Printf("answer %q, error %v, writes %d\n", answer, err, f.Counts().MCP.Writes)
	var failed []replaychecktest.Verdict
	for _, v := range f.Check(err, "no-replay-after-dispatch") {
		if v.Status == replaychecktest.Fail {
			failed = append(failed, v)
		}
	}
	for _, v := range failed {
		fmt.Println(v.Check, v.Status)
	}
	// Output:
	// answer "done", error <nil>, writes 2
	// no-replay-after-dispatch fail
}
