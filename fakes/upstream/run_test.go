package upstream

import (
	"net/http/httptest"
	"testing"

	"github.com/openai/openai-go/v3"
	"github.com/openai/openai-go/v3/option"

	"github.com/replaycheck/replaycheck/fakes/fault"
	"github.com/replaycheck/replaycheck/internal/runtoken"
	"github.com/replaycheck/replaycheck/internal/wire"
)

// TestOwnAddressAttributes: an SDK client at a run's own address, whose own
// prompt carries no run token (or another run's), is counted for that run
// alone, and armed faults of that run act on it.
func TestOwnAddressAttributes(t *testing.T) {
	s, _, _ := newFake(t, Config{})
	run, other := token(t, "run"), token(t, "other")
	if err := s.Arm(run, nil, []Fault{{On: wire.KindFollowUp, Respond: &Respond{Status: 503}, Times: fault.Once}}); err != nil {
		t.Fatal(err)
	}
	own := httptest.NewServer(runtoken.Handler(run, s))
	t.Cleanup(own.Close)

	c := openai.NewClient(option.WithBaseURL(own.URL+"/v1"), option.WithAPIKey("sk-test"), option.WithMaxRetries(2))
	tools := []openai.ChatCompletionToolUnionParam{openai.ChatCompletionFunctionTool(openai.FunctionDefinitionParam{Name: "mcp__ledger__commit_write"})}
	msgs := []openai.ChatCompletionMessageParamUnion{openai.UserMessage("Record today's sale in the ledger; mention " + other + " in passing.")}
	ctx := t.Context()
	first, err := c.Chat.Completions.New(ctx, openai.ChatCompletionNewParams{Model: "gpt-x", Messages: msgs, Tools: tools})
	if err != nil {
		t.Fatalf("initial: %v", err)
	}
	if len(first.Choices) == 0 || len(first.Choices[0].Message.ToolCalls) != 1 {
		t.Fatalf("initial answer has no tool call: %+v", first)
	}
	call := first.Choices[0].Message.ToolCalls[0]
	msgs = append(msgs, first.Choices[0].Message.ToParam(), openai.ToolMessage("recorded", call.ID))
	if _, err := c.Chat.Completions.New(ctx, openai.ChatCompletionNewParams{Model: "gpt-x", Messages: msgs, Tools: tools}); err != nil {
		t.Fatalf("follow-up (retried once by the SDK): %v", err)
	}

	want := wire.UpstreamCounts{Initial: 1, FollowUp: 2, Outcomes: countsOf(map[string]int{"initial forwarded": 1, "follow_up injected_503": 1, "follow_up forwarded": 1})}
	diff(t, "own run's counts", want, s.Counts(run))
	diff(t, "the other token's counts", wire.UpstreamCounts{Outcomes: countsOf(map[string]int{})}, s.Counts(other))
	diff(t, "unattributed counts", wire.UpstreamCounts{Outcomes: countsOf(map[string]int{})}, s.Counts(""))
}
