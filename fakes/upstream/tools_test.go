package upstream

import (
	"context"
	"errors"
	"net/http"
	"strings"
	"testing"

	"github.com/anthropics/anthropic-sdk-go/v2"
	"github.com/openai/openai-go/v3"
	"github.com/openai/openai-go/v3/responses"
	"github.com/openai/openai-go/v3/shared"

	api "github.com/replaycheck/replaycheck/internal/dialect"
	"github.com/replaycheck/replaycheck/internal/wire"
)

// chatToolsParams is the seed's request offering the function tools names.
func chatToolsParams(tok string, names ...string) openai.ChatCompletionNewParams {
	p := chatParams(tok, "")
	for _, n := range names {
		p.Tools = append(p.Tools, openai.ChatCompletionFunctionTool(shared.FunctionDefinitionParam{
			Name:       n,
			Parameters: shared.FunctionParameters{"type": "object", "properties": map[string]any{"entry": map[string]any{"type": "string"}}},
		}))
	}
	return p
}

// namespaceTool is a Responses namespace tool ns grouping function tools names.
func namespaceTool(ns string, names ...string) responses.ToolUnionParam {
	var inner []responses.NamespaceToolToolUnionParam
	for _, n := range names {
		inner = append(inner, responses.NamespaceToolToolUnionParam{OfFunction: &responses.NamespaceToolToolFunctionParam{Name: n}})
	}
	return responses.ToolParamOfNamespace(ns+" tools", ns, inner)
}

func TestMatchToolRule(t *testing.T) {
	tests := []struct {
		name    string
		offered []api.Tool
		call    string
		want    string // offered name of the match; "" = none
		wantErr string // the ambiguity message
	}{
		{"exact", []api.Tool{{Name: "commit_write"}}, "commit_write", "commit_write", ""},
		{"one underscore", []api.Tool{{Name: "ledger_commit_write"}}, "commit_write", "ledger_commit_write", ""},
		{"two underscores", []api.Tool{{Name: "ledger__commit_write"}}, "commit_write", "ledger__commit_write", ""},
		{"claude code", []api.Tool{{Name: "mcp__ledger__commit_write"}}, "commit_write", "mcp__ledger__commit_write", ""},
		{"mcp one underscore", []api.Tool{{Name: "mcp_ledger_commit_write"}}, "commit_write", "mcp_ledger_commit_write", ""},
		{"dash", []api.Tool{{Name: "ledger-commit_write"}}, "commit_write", "ledger-commit_write", ""},
		{"dot", []api.Tool{{Name: "ledger.commit_write"}}, "commit_write", "ledger.commit_write", ""},
		{"slash", []api.Tool{{Name: "ledger/commit_write"}}, "commit_write", "ledger/commit_write", ""},
		{"colon", []api.Tool{{Name: "ledger:commit_write"}}, "commit_write", "ledger:commit_write", ""},
		{"namespace", []api.Tool{{Name: "commit_write", Namespace: "ledger"}}, "commit_write", "ledger.commit_write", ""},
		{"namespace mcp", []api.Tool{{Name: "commit_write", Namespace: "mcp__ledger__"}}, "commit_write", "mcp__ledger__.commit_write", ""},
		{"namespace qualified call", []api.Tool{{Name: "commit_write", Namespace: "a"}, {Name: "commit_write", Namespace: "b"}}, "b.commit_write", "b.commit_write", ""},
		{"namespace prefixed inner", []api.Tool{{Name: "ledger_commit_write", Namespace: "x"}}, "commit_write", "x.ledger_commit_write", ""},
		{"exact wins over prefixed", []api.Tool{{Name: "mcp__ledger__commit_write"}, {Name: "commit_write"}}, "commit_write", "commit_write", ""},
		{"exact prefixed name", []api.Tool{{Name: "a__commit_write"}, {Name: "b__commit_write"}}, "b__commit_write", "b__commit_write", ""},
		{"keyed is another tool", []api.Tool{{Name: "commit_write_keyed"}}, "commit_write", "", ""},
		{"keyed prefixed", []api.Tool{{Name: "ledger_commit_write_keyed"}, {Name: "ledger_commit_write"}}, "commit_write", "ledger_commit_write", ""},
		{"keyed call", []api.Tool{{Name: "ledger_commit_write"}, {Name: "ledger_commit_write_keyed"}}, "commit_write_keyed", "ledger_commit_write_keyed", ""},
		{"one word after one underscore", []api.Tool{{Name: "commit_write"}}, "write", "", ""},
		{"one word after two underscores", []api.Tool{{Name: "ledger__write"}}, "write", "ledger__write", ""},
		{"one word after dash", []api.Tool{{Name: "ledger-write"}}, "write", "ledger-write", ""},
		{"no separator", []api.Tool{{Name: "xcommit_write"}}, "commit_write", "", ""},
		{"separator alone", []api.Tool{{Name: "_commit_write"}, {Name: "__commit_write"}, {Name: "-commit_write"}}, "commit_write", "", ""},
		{"empty call", []api.Tool{{Name: "ledger-"}}, "", "", ""},
		{"same tool twice", []api.Tool{{Name: "ledger_commit_write"}, {Name: "ledger_commit_write"}}, "commit_write", "ledger_commit_write", ""},
		{"ambiguous prefixes", []api.Tool{{Name: "a__commit_write"}, {Name: "b__commit_write"}}, "commit_write", "",
			`script call "commit_write" is ambiguous: offered tools "a__commit_write" and "b__commit_write" both match`},
		{"ambiguous mixed separators", []api.Tool{{Name: "read_ledger"}, {Name: "ledger_commit_write"}, {Name: "mcp__other__commit_write"}, {Name: "x.commit_write"}}, "commit_write", "",
			`script call "commit_write" is ambiguous: offered tools "ledger_commit_write", "mcp__other__commit_write" and "x.commit_write" all match`},
		{"ambiguous namespaces", []api.Tool{{Name: "commit_write", Namespace: "a"}, {Name: "commit_write", Namespace: "b"}}, "commit_write", "",
			`script call "commit_write" is ambiguous: offered tools "a.commit_write" and "b.commit_write" both match`},
		{"ambiguous exact", []api.Tool{{Name: "commit_write"}, {Name: "commit_write", Namespace: "ledger"}}, "commit_write", "",
			`script call "commit_write" is ambiguous: offered tools "commit_write" and "ledger.commit_write" both match`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, ok, err := matchTool(tt.offered, tt.call)
			gotErr := ""
			if err != nil {
				gotErr = err.Error()
				if ok {
					t.Errorf("ok with error %v", err)
				}
			}
			if tt.wantErr != "" && !strings.HasPrefix(gotErr, tt.wantErr) || tt.wantErr == "" && gotErr != "" {
				t.Errorf("error = %q, want one starting %q", gotErr, tt.wantErr)
			}
			gotName := ""
			if ok {
				gotName = offeredName(got)
			}
			diff(t, "match", tt.want, gotName)
		})
	}
}

// Each name under which real clients offer the ledger's commit_write gets
// the script's call, in each SDK, under the name offered.
func TestOfferedToolNamesSDK(t *testing.T) {
	names := []string{
		"commit_write", "ledger_commit_write", "ledger__commit_write", "mcp__ledger__commit_write",
		"mcp_ledger_commit_write", "ledger-commit_write", "ledger.commit_write", "ledger/commit_write", "ledger:commit_write",
	}
	ctx := context.Background()
	for _, name := range names {
		t.Run("chat/"+name, func(t *testing.T) {
			s, srv, _ := newFake(t, Config{})
			tok := token(t)
			resp, err := openaiClient(srv.URL).Chat.Completions.New(ctx, chatToolsParams(tok, "read_ledger", name, "commit_write_keyed"))
			if err != nil {
				t.Fatal(err)
			}
			var got []string
			for _, c := range resp.Choices[0].Message.ToolCalls {
				got = append(got, c.Function.Name)
			}
			diff(t, "tool calls", []string{name}, got)
			diff(t, "record tool calls", []string{name}, s.Requests(tok)[0].Tools())
		})
		t.Run("messages/"+name, func(t *testing.T) {
			_, srv, _ := newFake(t, Config{})
			tok := token(t)
			msg, err := anthropicClient(srv.URL).Messages.New(ctx, messagesParams(tok, name, "read_ledger"))
			if err != nil {
				t.Fatal(err)
			}
			var got []string
			for _, b := range msg.Content {
				if b.Type == "tool_use" {
					got = append(got, b.Name)
				}
			}
			diff(t, "tool calls", []string{name}, got)
		})
	}
	for _, ns := range []string{"ledger", "mcp__ledger__"} {
		t.Run("responses namespace/"+ns, func(t *testing.T) {
			s, srv, _ := newFake(t, Config{})
			tok := token(t)
			resp, err := openaiClient(srv.URL).Responses.New(ctx, responsesParams(tok, functionTool("other"), namespaceTool(ns, "read_ledger", "commit_write")))
			if err != nil {
				t.Fatal(err)
			}
			if len(resp.Output) != 1 {
				t.Fatalf("output has %d items: %s", len(resp.Output), resp.RawJSON())
			}
			fc := resp.Output[0].AsFunctionCall()
			diff(t, "function call", responsesCall{Name: "commit_write", Namespace: ns, Args: `{"entry":"alpha-` + tok + `"}`},
				responsesCall{Name: fc.Name, Namespace: fc.Namespace, Args: fc.Arguments})
			diff(t, "offered", []string{"other", ns + ".read_ledger", ns + ".commit_write"}, s.Requests(tok)[0].Offered)
		})
	}
}

// A call two offered tools match equally is answered 400 in the dialect's
// error shape, naming both, and recorded as bad_request with the message;
// streamed requests get the 400 before any event.
func TestAmbiguousCallSDK(t *testing.T) {
	const want = `script call "commit_write" is ambiguous: offered tools "a__commit_write" and "b__commit_write" both match`
	tests := []struct {
		name   string
		stream bool
		call   func(ctx context.Context, url, tok string, stream bool) error
	}{
		{"chat", false, ambiguousChat},
		{"chat stream", true, ambiguousChat},
		{"responses", false, ambiguousResponses},
		{"messages", false, ambiguousMessages},
		{"messages stream", true, ambiguousMessages},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			s, srv, log := newFake(t, Config{})
			tok := token(t)
			err := tt.call(context.Background(), srv.URL, tok, tt.stream)
			var oe *openai.Error
			var ae *anthropic.Error
			switch {
			case errors.As(err, &oe):
				diff(t, "status", http.StatusBadRequest, oe.StatusCode)
				diff(t, "type", "invalid_request_error", oe.Type)
				if !strings.HasPrefix(oe.Message, want) {
					t.Errorf("message %q, want one starting %q", oe.Message, want)
				}
			case errors.As(err, &ae):
				diff(t, "status", http.StatusBadRequest, ae.StatusCode)
				if !strings.Contains(ae.Error(), "invalid_request_error") || !strings.Contains(ae.RawJSON(), strings.ReplaceAll(want, `"`, `\"`)) {
					t.Errorf("anthropic error %v lacks its type or message %q", ae, want)
				}
			default:
				t.Fatalf("err = %v (%T), want a 400 API error", err, err)
			}
			reqs := s.Requests(tok)
			if len(reqs) != 1 {
				t.Fatalf("%d records, want 1", len(reqs))
			}
			r := reqs[0]
			diff(t, "outcome", wire.OutcomeBadRequest, r.Outcome)
			diff(t, "status", http.StatusBadRequest, r.Status)
			if !strings.HasPrefix(r.Error, want) {
				t.Errorf("record error %q, want one starting %q", r.Error, want)
			}
			diff(t, "offered", []string{"a__commit_write", "b__commit_write"}, r.Offered)
			if !strings.HasSuffix(log.String(), " initial bad_request\n") {
				t.Errorf("log %q", log.String())
			}
		})
	}
}

func ambiguousChat(ctx context.Context, url, tok string, stream bool) error {
	p := chatToolsParams(tok, "a__commit_write", "b__commit_write")
	if !stream {
		_, err := openaiClient(url).Chat.Completions.New(ctx, p)
		return err
	}
	st := openaiClient(url).Chat.Completions.NewStreaming(ctx, p)
	for st.Next() {
		return errors.New("got an event")
	}
	return st.Err()
}

func ambiguousResponses(ctx context.Context, url, tok string, _ bool) error {
	_, err := openaiClient(url).Responses.New(ctx, responsesParams(tok, functionTool("a__commit_write"), functionTool("b__commit_write")))
	return err
}

func ambiguousMessages(ctx context.Context, url, tok string, stream bool) error {
	p := messagesParams(tok, "a__commit_write", "b__commit_write")
	if !stream {
		_, err := anthropicClient(url).Messages.New(ctx, p)
		return err
	}
	st := anthropicClient(url).Messages.NewStreaming(ctx, p)
	for st.Next() {
		return errors.New("got an event")
	}
	return st.Err()
}

// The record says which tools a request offered and which of the script's
// calls matched none of them; the answer leaves those calls out.
func TestOfferedAndUnmatchedRecorded(t *testing.T) {
	two := &Script{Steps: []Step{
		{Call: "commit_write", Arguments: map[string]any{"entry": "{{entry}}"}},
		{Call: "read_ledger"},
		{Say: "done"},
	}}
	tests := []struct {
		name          string
		script        *Script
		tools         []string
		wantCalls     []string
		wantText      string
		wantOffered   []string
		wantUnmatched []string
	}{
		{"matched", nil, []string{"ledger_commit_write"}, []string{"ledger_commit_write"}, "", []string{"ledger_commit_write"}, nil},
		{"unmatched", nil, []string{"read_ledger", "commit"}, nil, "done", []string{"read_ledger", "commit"}, []string{"commit_write"}},
		{"no tools", nil, nil, nil, "done", nil, []string{"commit_write"}},
		{"one of two", two, []string{"mcp__ledger__read_ledger"}, []string{"mcp__ledger__read_ledger"}, "", []string{"mcp__ledger__read_ledger"}, []string{"commit_write"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			s, srv, _ := newFake(t, Config{})
			tok := token(t)
			if err := s.Arm(tok, tt.script, nil); err != nil {
				t.Fatal(err)
			}
			resp, err := openaiClient(srv.URL).Chat.Completions.New(context.Background(), chatToolsParams(tok, tt.tools...))
			if err != nil {
				t.Fatal(err)
			}
			var calls []string
			for _, c := range resp.Choices[0].Message.ToolCalls {
				calls = append(calls, c.Function.Name)
			}
			diff(t, "tool calls", tt.wantCalls, calls)
			diff(t, "text", tt.wantText, resp.Choices[0].Message.Content)
			r := s.Requests(tok)[0]
			diff(t, "offered", tt.wantOffered, r.Offered)
			diff(t, "unmatched", tt.wantUnmatched, r.Unmatched)
			diff(t, "error", "", r.Error)
		})
	}
}

// A request refused as unreadable keeps the reason in its record.
func TestBadRequestRecordsError(t *testing.T) {
	s, srv, _ := newFake(t, Config{})
	status, _, _ := post(t, srv.URL+"/v1/chat/completions", `{"messages":[`)
	diff(t, "status", http.StatusBadRequest, status)
	r := s.Requests("")[0]
	diff(t, "outcome", wire.OutcomeBadRequest, r.Outcome)
	if !strings.Contains(r.Error, "unparsable request body") {
		t.Errorf("record error %q", r.Error)
	}
}
