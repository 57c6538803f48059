package upstream

import (
	"context"
	"encoding/json"
	"strings"
	"testing"

	"github.com/openai/openai-go/v3/packages/param"
	"github.com/openai/openai-go/v3/responses"
)

func responsesParams(tok string, tools ...responses.ToolUnionParam) responses.ResponseNewParams {
	return responses.ResponseNewParams{
		Model: "gpt-test",
		Input: responses.ResponseNewParamsInputUnion{OfString: param.NewOpt(prompt(tok))},
		Tools: tools,
	}
}

func functionTool(name string) responses.ToolUnionParam {
	return responses.ToolParamOfFunction(name, map[string]any{"type": "object", "properties": map[string]any{"entry": map[string]any{"type": "string"}}}, false)
}

// responsesCall is what a test reads of a function call item.
type responsesCall struct {
	Name, Namespace, Args string
}

// followUpParams is a follow-up that continues response prevID with the
// output of the function call callID, offering tools.
func followUpParams(prevID, callID, output string, tools []responses.ToolUnionParam) responses.ResponseNewParams {
	return responses.ResponseNewParams{
		Model:              "gpt-test",
		PreviousResponseID: param.NewOpt(prevID),
		Input: responses.ResponseNewParamsInputUnion{OfInputItemList: responses.ResponseInputParam{
			{OfFunctionCallOutput: &responses.ResponseInputItemFunctionCallOutputParam{
				CallID: param.NewOpt(callID),
				Output: responses.ResponseInputItemFunctionCallOutputOutputUnionParam{OfString: param.NewOpt(output)},
			}},
		}},
		Tools: tools,
	}
}

func TestResponsesSDK(t *testing.T) {
	namespaced := responses.ToolParamOfNamespace("ledger tools", "ledger", []responses.NamespaceToolToolUnionParam{
		{OfFunction: &responses.NamespaceToolToolFunctionParam{Name: "commit_write"}},
	})
	tests := []struct {
		name     string
		stream   bool
		tools    []responses.ToolUnionParam
		wantCall *responsesCall
	}{
		{"plain", false, []responses.ToolUnionParam{functionTool("commit_write")}, &responsesCall{Name: "commit_write"}},
		{"stream", true, []responses.ToolUnionParam{functionTool("commit_write")}, &responsesCall{Name: "commit_write"}},
		{"suffix match", false, []responses.ToolUnionParam{functionTool("ledger-commit_write")}, &responsesCall{Name: "ledger-commit_write"}},
		{"namespace", false, []responses.ToolUnionParam{namespaced}, &responsesCall{Name: "commit_write", Namespace: "ledger"}},
		{"namespace stream", true, []responses.ToolUnionParam{namespaced}, &responsesCall{Name: "commit_write", Namespace: "ledger"}},
		{"no matching tool", false, []responses.ToolUnionParam{functionTool("other")}, nil},
		{"no tools stream", true, nil, nil},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			s, srv, log := newFake(t, Config{})
			tok := token(t)
			client := openaiClient(srv.URL)
			ctx := context.Background()
			params := responsesParams(tok, tt.tools...)

			var resp *responses.Response
			if tt.stream {
				stream := client.Responses.NewStreaming(ctx, params)
				var argsDone []string
				var types []string
				for stream.Next() {
					ev := stream.Current()
					types = append(types, ev.Type)
					switch ev.Type {
					case "response.function_call_arguments.done":
						argsDone = append(argsDone, ev.Arguments)
					case "response.completed":
						r := ev.Response
						resp = &r
					}
				}
				if err := stream.Err(); err != nil {
					t.Fatalf("stream: %v", err)
				}
				if resp == nil {
					t.Fatalf("no response.completed in %v", types)
				}
				if tt.wantCall != nil && len(argsDone) != 1 {
					t.Errorf("function_call_arguments.done seen %d times, want 1 (%v)", len(argsDone), types)
				}
				if types[0] != "response.created" || types[len(types)-1] != "response.completed" {
					t.Errorf("event sequence %v", types)
				}
			} else {
				var err error
				resp, err = client.Responses.New(ctx, params)
				if err != nil {
					t.Fatalf("New: %v", err)
				}
			}
			if !strings.Contains(resp.ID, tok) {
				t.Errorf("response id %q lacks token", resp.ID)
			}
			if tt.wantCall == nil {
				diff(t, "text", "done", resp.OutputText())
				return
			}
			if len(resp.Output) != 1 {
				t.Fatalf("output has %d items: %s", len(resp.Output), resp.RawJSON())
			}
			fc := resp.Output[0].AsFunctionCall()
			want := *tt.wantCall
			want.Args = `{"entry":"alpha-` + tok + `"}`
			diff(t, "function call", want, responsesCall{Name: fc.Name, Namespace: fc.Namespace, Args: fc.Arguments})
			if !strings.Contains(fc.CallID, tok) || !strings.Contains(fc.ID, tok) {
				t.Errorf("ids %q %q lack token", fc.ID, fc.CallID)
			}

			// Follow-up with previous_response_id: only the output item carries the token.
			params = followUpParams(resp.ID, fc.CallID, "recorded", tt.tools)
			var text string
			if tt.stream {
				stream := client.Responses.NewStreaming(ctx, params)
				for stream.Next() {
					if ev := stream.Current(); ev.Type == "response.completed" {
						text = ev.Response.OutputText()
					}
				}
				if err := stream.Err(); err != nil {
					t.Fatalf("follow-up stream: %v", err)
				}
			} else {
				follow, err := client.Responses.New(ctx, params)
				if err != nil {
					t.Fatalf("follow-up: %v", err)
				}
				text = follow.OutputText()
			}
			diff(t, "follow-up text", "done", text)
			diff(t, "counts", oneCleanLoop(), s.Counts(tok))
			checkCallIDs(t, s, tok, fc.CallID)
			diff(t, "log", oneCleanLoopLog("/v1/responses"), log.String())
		})
	}
}

// Custom tools get a custom_tool_call item with free-form input.
func TestResponsesCustomTool(t *testing.T) {
	_, srv, _ := newFake(t, Config{})
	tok := token(t)
	status, out, _ := post(t, srv.URL+"/v1/responses", `{"model":"m","input":"`+prompt(tok)+`","tools":[{"type":"custom","name":"commit_write"}]}`)
	diff(t, "status", 200, status)
	var resp responses.Response
	if err := json.Unmarshal([]byte(out), &resp); err != nil {
		t.Fatal(err)
	}
	c := resp.Output[0].AsCustomToolCall()
	diff(t, "custom call", `custom_tool_call commit_write {"entry":"alpha-`+tok+`"}`, string(c.Type)+" "+c.Name+" "+c.Input)
}

// With previous_response_id a follow-up carries only the latest results; the
// round comes from the call ids, so a two-round script still ends.
func TestResponsesPreviousResponseRounds(t *testing.T) {
	s, srv, _ := newFake(t, Config{})
	tok := token(t)
	script, err := ParseScript([]byte(`[{call: commit_write, arguments: {entry: a}}, {say: mid}, {call: read_ledger}, {say: finished}]`))
	if err != nil {
		t.Fatal(err)
	}
	if err := s.Arm(tok, &script, nil); err != nil {
		t.Fatal(err)
	}
	client := openaiClient(srv.URL)
	tools := []responses.ToolUnionParam{functionTool("commit_write"), functionTool("read_ledger")}
	resp, err := client.Responses.New(context.Background(), responsesParams(tok, tools...))
	if err != nil {
		t.Fatal(err)
	}
	var got []string
	for range 3 {
		if len(resp.Output) == 0 || resp.Output[0].Type != "function_call" {
			got = append(got, "say "+resp.OutputText())
			break
		}
		fc := resp.Output[0].AsFunctionCall()
		got = append(got, fc.Name)
		resp, err = client.Responses.New(context.Background(), followUpParams(resp.ID, fc.CallID, "ok", tools))
		if err != nil {
			t.Fatal(err)
		}
	}
	diff(t, "turns", []string{"commit_write", "read_ledger", "say finished"}, got)
}

func TestIDSeq(t *testing.T) {
	tok := "rc0123456789"
	tests := []struct {
		id   string
		want int
		ok   bool
	}{
		{"call_rc0123456789_12_0", 12, true},
		{"toolu_rc0123456789_3_1", 3, true},
		{"chatcmpl-rc0123456789-7", 7, true},
		{"call_other_12_0", 0, false},
		{"call_rc0123456789_x", 0, false},
		{"call_rc0123456789", 0, false},
	}
	for _, tt := range tests {
		n, ok := idSeq(tt.id, tok)
		diff(t, tt.id, [2]any{tt.want, tt.ok}, [2]any{n, ok})
	}
}
