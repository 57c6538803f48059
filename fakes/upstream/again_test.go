package upstream

import (
	"context"
	"fmt"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"unicode/utf8"

	"github.com/anthropics/anthropic-sdk-go/v2"
	"github.com/openai/openai-go/v3"
	"github.com/openai/openai-go/v3/responses"
	"google.golang.org/genai"

	api "github.com/replaycheck/replaycheck/internal/dialect"
	"github.com/replaycheck/replaycheck/internal/wire"
)

// modelTurn is what a test reads of one answer of the fake model: its one
// tool call (tool, id, arguments) or its text.
type modelTurn struct {
	tool, id, args, text string
}

// sdkLoop is one client of the fake, an official SDK keeping its own
// conversation: start sends the initial request, report a follow-up that
// carries the result of the last call (text, and the dialect's error flag
// where it has one).
type sdkLoop interface {
	start(t *testing.T) modelTurn
	report(t *testing.T, text string, isErr bool) modelTurn
}

// chatLoop is openai-go's chat completions, the whole conversation resent.
type chatLoop struct {
	c      *openai.Client
	params openai.ChatCompletionNewParams
	last   string
}

func (l *chatLoop) send(t *testing.T) modelTurn {
	t.Helper()
	resp, err := l.c.Chat.Completions.New(context.Background(), l.params)
	if err != nil {
		t.Fatalf("chat: %v", err)
	}
	m := resp.Choices[0].Message
	l.params.Messages = append(l.params.Messages, m.ToParam())
	if len(m.ToolCalls) == 0 {
		return modelTurn{text: m.Content}
	}
	fc := m.ToolCalls[0].AsFunction()
	l.last = fc.ID
	return modelTurn{tool: fc.Function.Name, id: fc.ID, args: fc.Function.Arguments}
}

func (l *chatLoop) start(t *testing.T) modelTurn { return l.send(t) }

func (l *chatLoop) report(t *testing.T, text string, _ bool) modelTurn {
	l.params.Messages = append(l.params.Messages, openai.ToolMessage(text, l.last))
	return l.send(t)
}

// responsesLoop is openai-go's Responses, each follow-up continuing the
// previous response (previous_response_id: only the latest result).
type responsesLoop struct {
	c      *openai.Client
	tok    string
	tools  []responses.ToolUnionParam
	prevID string
	last   string
}

func (l *responsesLoop) send(t *testing.T, p responses.ResponseNewParams) modelTurn {
	t.Helper()
	resp, err := l.c.Responses.New(context.Background(), p)
	if err != nil {
		t.Fatalf("responses: %v", err)
	}
	l.prevID = resp.ID
	for _, it := range resp.Output {
		if it.Type == "function_call" {
			fc := it.AsFunctionCall()
			l.last = fc.CallID
			return modelTurn{tool: fc.Name, id: fc.CallID, args: fc.Arguments}
		}
	}
	return modelTurn{text: resp.OutputText()}
}

func (l *responsesLoop) start(t *testing.T) modelTurn {
	return l.send(t, responsesParams(l.tok, l.tools...))
}

func (l *responsesLoop) report(t *testing.T, text string, _ bool) modelTurn {
	return l.send(t, followUpParams(l.prevID, l.last, text, l.tools))
}

// messagesLoop is anthropic-sdk-go, the whole conversation resent,
// streamed or not; a result's error flag is tool_result.is_error.
type messagesLoop struct {
	c      *anthropic.Client
	params anthropic.MessageNewParams
	stream bool
	last   string
}

func (l *messagesLoop) send(t *testing.T) modelTurn {
	t.Helper()
	msg, _ := sendMessage(t, context.Background(), l.c, l.params, l.stream)
	l.params.Messages = append(l.params.Messages, msg.ToParam())
	for _, b := range msg.Content {
		if b.Type == "tool_use" {
			tu := b.AsToolUse()
			l.last = tu.ID
			return modelTurn{tool: tu.Name, id: tu.ID, args: string(tu.Input)}
		}
	}
	return modelTurn{text: msg.Content[0].Text}
}

func (l *messagesLoop) start(t *testing.T) modelTurn { return l.send(t) }

func (l *messagesLoop) report(t *testing.T, text string, isErr bool) modelTurn {
	l.params.Messages = append(l.params.Messages, anthropic.NewUserMessage(anthropic.NewToolResultBlock(l.last, text, isErr)))
	return l.send(t)
}

// geminiLoop is google.golang.org/genai, the whole conversation resent,
// streamed or not; a result with the error flag is a response {"error": text}.
type geminiLoop struct {
	c        *genai.Client
	contents []*genai.Content
	cfg      *genai.GenerateContentConfig
	stream   bool
	last     *genai.FunctionCall
}

func (l *geminiLoop) send(t *testing.T) modelTurn {
	t.Helper()
	resp, _, err := generate(context.Background(), l.c, l.contents, l.cfg, l.stream)
	if err != nil {
		t.Fatalf("gemini: %v", err)
	}
	l.contents = append(l.contents, resp.Candidates[0].Content)
	if calls := resp.FunctionCalls(); len(calls) > 0 {
		l.last = calls[0]
		return modelTurn{tool: calls[0].Name, id: calls[0].ID, args: fmt.Sprint(calls[0].Args)}
	}
	return modelTurn{text: resp.Text()}
}

func (l *geminiLoop) start(t *testing.T) modelTurn { return l.send(t) }

func (l *geminiLoop) report(t *testing.T, text string, isErr bool) modelTurn {
	key := "output"
	if isErr {
		key = "error"
	}
	fr := &genai.FunctionResponse{ID: l.last.ID, Name: l.last.Name, Response: map[string]any{key: text}}
	l.contents = append(l.contents, &genai.Content{Role: genai.RoleUser, Parts: []*genai.Part{{FunctionResponse: fr}}})
	return l.send(t)
}

// againLoops are the SDK clients of each dialect (streamed where the
// helpers read streams), each offering commit_write and read_ledger.
var againLoops = []struct {
	name    string
	hasFlag bool // the dialect has a result error flag
	loop    func(t *testing.T, url, tok string) sdkLoop
}{
	{"chat", false, func(_ *testing.T, url, tok string) sdkLoop {
		return &chatLoop{c: openaiClient(url), params: chatToolsParams(tok, "commit_write", "read_ledger")}
	}},
	{"responses", false, func(_ *testing.T, url, tok string) sdkLoop {
		return &responsesLoop{c: openaiClient(url), tok: tok, tools: []responses.ToolUnionParam{functionTool("commit_write"), functionTool("read_ledger")}}
	}},
	{"messages", true, func(_ *testing.T, url, tok string) sdkLoop {
		return &messagesLoop{c: anthropicClient(url), params: messagesParams(tok, "commit_write", "read_ledger")}
	}},
	{"messages stream", true, func(_ *testing.T, url, tok string) sdkLoop {
		return &messagesLoop{c: anthropicClient(url), params: messagesParams(tok, "commit_write", "read_ledger"), stream: true}
	}},
	{"gemini", true, func(t *testing.T, url, tok string) sdkLoop {
		return &geminiLoop{c: geminiClient(t, url), contents: geminiContents(tok), cfg: geminiConfig("commit_write", "read_ledger")}
	}},
	{"gemini stream", true, func(t *testing.T, url, tok string) sdkLoop {
		return &geminiLoop{c: geminiClient(t, url), contents: geminiContents(tok), cfg: geminiConfig("commit_write", "read_ledger"), stream: true}
	}},
}

// reported is a result a client reports: its text and error flag.
type reported struct {
	text  string
	isErr bool
}

// The results a client reports in the tests: what the built-in gateway
// tells the model on an MCP error, on a dropped connection (guarded), and
// on success.
var (
	failedResult  = reported{text: "MCP tool call commit_write failed: calling \"tools/call\": 503 Service Unavailable"}
	unknownResult = reported{text: "MCP tool call commit_write: outcome unknown. The connection to MCP server 'ledger' was lost after the call was sent, so it may have run; it was not retried. Check before calling it again. (connection closed)"}
	okResult      = reported{text: "wrote entry alpha (line 1)"}
	flaggedResult = reported{text: "the ledger said no", isErr: true}
)

// TestAgainIfFailedSDK: each dialect's official SDK runs a tool loop whose
// results the test chooses; after each result the fake model asks again for
// the call (same tool and arguments, a new id) or goes on with the script.
func TestAgainIfFailedSDK(t *testing.T) {
	again := func(n int, extra ...Step) Script {
		return Script{Steps: append([]Step{{Call: "commit_write", Arguments: map[string]any{"entry": "{{entry}}"}, AgainIfFailed: n}}, append(extra, Step{Say: "done"})...)}
	}
	tests := []struct {
		name     string
		script   Script
		flagOnly bool // needs a dialect with an error flag
		results  []reported
		// want is each follow-up's answer: "again" (commit_write asked
		// again), a tool name (the script's next call) or "say TEXT".
		want []string
	}{
		{name: "a failure is asked again, then done", script: again(1),
			results: []reported{failedResult, okResult}, want: []string{"again", "say done"}},
		{name: "an unknown outcome is no failure", script: again(1),
			results: []reported{unknownResult}, want: []string{"say done"}},
		{name: "a success goes on", script: again(1),
			results: []reported{okResult}, want: []string{"say done"}},
		{name: "the count bounds the asks", script: again(2),
			results: []reported{failedResult, failedResult, failedResult}, want: []string{"again", "again", "say done"}},
		{name: "a step without again_if_failed never asks again", script: again(0),
			results: []reported{failedResult}, want: []string{"say done"}},
		{name: "the script goes on after a re-ask", script: again(1, Step{Say: "next"}, Step{Call: "read_ledger"}),
			results: []reported{failedResult, okResult, okResult}, want: []string{"again", "read_ledger", "say done"}},
		{name: "a pattern of the step's own", script: Script{Steps: []Step{{Call: "commit_write", AgainIfFailed: 1, FailedIf: "^no ", UnknownIf: "^never$"}}},
			results: []reported{failedResult, {text: "no ledger"}, okResult}, want: []string{"say done"}},
		{name: "the error flag is a failure", script: again(1), flagOnly: true,
			results: []reported{flaggedResult, okResult}, want: []string{"again", "say done"}},
		{name: "unknown wins over the error flag", script: again(1), flagOnly: true,
			results: []reported{{text: unknownResult.text, isErr: true}}, want: []string{"say done"}},
	}
	for _, l := range againLoops {
		for _, tt := range tests {
			if tt.flagOnly && !l.hasFlag {
				continue
			}
			t.Run(l.name+"/"+tt.name, func(t *testing.T) {
				s, srv, _ := newFake(t, Config{})
				tok := token(t)
				if err := s.Arm(tok, &tt.script, nil); err != nil {
					t.Fatal(err)
				}
				loop := l.loop(t, srv.URL, tok)
				first := loop.start(t)
				if first.id == "" || !strings.Contains(first.id, tok) {
					t.Fatalf("initial answer %+v: want a call whose id carries the token", first)
				}
				ids := map[string]bool{first.id: true}
				last := first
				var got []string
				for i, want := range tt.want {
					if i >= len(tt.results) {
						break
					}
					res := tt.results[i]
					turn := loop.report(t, res.text, res.isErr)
					switch {
					case turn.id == "":
						got = append(got, "say "+turn.text)
					case turn.tool == "commit_write" && turn.args == first.args && last.tool == "commit_write":
						got = append(got, "again")
						if ids[turn.id] || !strings.Contains(turn.id, tok) {
							t.Errorf("follow-up %d asked again with id %q: want a new id carrying the token (ids so far %v)", i+1, turn.id, ids)
						}
					default:
						got = append(got, turn.tool)
					}
					ids[turn.id] = true
					if got[i] != want {
						break
					}
					last = turn
				}
				diff(t, "answers", tt.want, got)
			})
		}
	}
}

// startAgainLoop arms a fake with a script whose commit_write step asks
// again once, and starts an anthropic-sdk-go tool loop offering
// commit_write: it returns the fake, the run token, the loop and the
// initial answer's call.
func startAgainLoop(t *testing.T) (*Server, string, *messagesLoop, modelTurn) {
	t.Helper()
	s, srv, _ := newFake(t, Config{})
	tok := token(t)
	script := Script{Steps: []Step{{Call: "commit_write", Arguments: map[string]any{"entry": "{{entry}}"}, AgainIfFailed: 1}, {Say: "done"}}}
	if err := s.Arm(tok, &script, nil); err != nil {
		t.Fatal(err)
	}
	loop := &messagesLoop{c: anthropicClient(srv.URL), params: messagesParams(tok, "commit_write")}
	return s, tok, loop, loop.start(t)
}

// TestAgainRecorded: the history of a re-ask: the follow-up's result as
// the client reported it (scrubbed, bounded, its flag and reading) and the
// new call marked with the id of the call the client reported failed.
func TestAgainRecorded(t *testing.T) {
	s, tok, loop, first := startAgainLoop(t)
	long := "connection closed while sending\n\t with key sk-proj-abcdef0123456789 " + strings.Repeat("x", 300)
	second := loop.report(t, long, true)
	loop.report(t, "ok", false)

	reqs := s.Requests(tok)
	if len(reqs) != 3 {
		t.Fatalf("recorded %d requests, want 3", len(reqs))
	}
	diff(t, "initial results", []wire.ToolResult(nil), reqs[0].Results)
	args := `{"entry":"alpha-` + tok + `"}`
	diff(t, "initial's calls", []wire.ToolCall{{Tool: "commit_write", ID: first.id, Args: args, Step: 1}}, reqs[0].Calls)
	r := reqs[1].Results
	if len(r) != 1 || r[0].ID != first.id || !r[0].Error || r[0].Read != wire.ResultFailed {
		t.Fatalf("follow-up results %+v: want %s flagged, read failed", r, first.id)
	}
	if strings.Contains(r[0].Text, "sk-proj") || strings.ContainsAny(r[0].Text, "\n\t") || !strings.HasPrefix(r[0].Text, "connection closed while sending with key ") ||
		len([]rune(r[0].Text)) != wire.MaxResultText || !strings.HasSuffix(r[0].Text, "…") {
		t.Errorf("recorded text %q: want whitespace collapsed, the key scrubbed, %d runes ending in …", r[0].Text, wire.MaxResultText)
	}
	diff(t, "re-ask", []wire.ToolCall{{Tool: "commit_write", ID: second.id, AgainFor: first.id, Args: args, Step: 1, Attempt: 1}}, reqs[1].Calls)
	diff(t, "last follow-up results", append(r, wire.ToolResult{ID: second.id, Text: "ok", Read: wire.ResultOK}), reqs[2].Results)
	diff(t, "last answer's calls", []wire.ToolCall(nil), reqs[2].Calls)
}

// TestAgainUnmatchedRecorded: a re-ask that is due when the follow-up
// offers no tool that matches the step's call cannot be made: the answer
// goes on with the script and the record names the missed re-ask apart
// from the script's unmatched calls.
func TestAgainUnmatchedRecorded(t *testing.T) {
	s, tok, loop, first := startAgainLoop(t)
	loop.params.Tools = messagesParams(tok, "read_ledger").Tools
	if turn := loop.report(t, failedResult.text, true); turn.text != "done" {
		t.Errorf("follow-up answered %+v: want the script's say text", turn)
	}
	reqs := s.Requests(tok)
	if len(reqs) != 2 {
		t.Fatalf("recorded %d requests, want 2", len(reqs))
	}
	diff(t, "missed re-ask", []wire.ToolCall{{Tool: "commit_write", AgainFor: first.id, Step: 1, Attempt: 1}}, reqs[1].AgainUnmatched)
	diff(t, "unmatched", []string(nil), reqs[1].Unmatched)
	diff(t, "offered", []string{"read_ledger"}, reqs[1].Offered)
}

// TestReadResult: how the fake model reads a result with the default
// patterns, and with a step's own.
func TestReadResult(t *testing.T) {
	def := &Step{Call: "commit_write", AgainIfFailed: 1}
	own := &Step{Call: "commit_write", AgainIfFailed: 1, FailedIf: "BOOM", UnknownIf: "maybe"}
	tests := []struct {
		name string
		step *Step
		res  api.ToolResult
		want string
	}{
		{"gateway error", def, api.ToolResult{Text: failedResult.text}, wire.ResultFailed},
		{"gateway isError", def, api.ToolResult{Text: "MCP tool error: entry not found"}, wire.ResultFailed},
		{"gateway unknown outcome", def, api.ToolResult{Text: unknownResult.text}, wire.ResultUnknown},
		{"gateway timeout, unknown", def, api.ToolResult{Text: "MCP tool call commit_write timed out after 2s and was cancelled; its outcome is unknown, so check before calling it again."}, wire.ResultUnknown},
		{"plain timeout", def, api.ToolResult{Text: "tool call timed out"}, wire.ResultFailed},
		{"not connected", def, api.ToolResult{Text: "Not connected"}, wire.ResultFailed},
		{"stdio server died", def, api.ToolResult{Text: "MCP server process exited; transport closed"}, wire.ResultFailed},
		{"might have run", def, api.ToolResult{Text: "the server disconnected; the write might have happened"}, wire.ResultUnknown},
		{"success", def, api.ToolResult{Text: "wrote entry alpha (line 1)"}, wire.ResultOK},
		{"empty", def, api.ToolResult{}, wire.ResultOK},
		{"flag alone", def, api.ToolResult{Error: true}, wire.ResultFailed},
		{"flag with unknown", def, api.ToolResult{Error: true, Text: "outcome uncertain"}, wire.ResultUnknown},
		{"own failure pattern", own, api.ToolResult{Text: "BOOM"}, wire.ResultFailed},
		{"own pattern replaces the default", own, api.ToolResult{Text: "connection closed"}, wire.ResultOK},
		{"own unknown pattern", own, api.ToolResult{Text: "BOOM, maybe"}, wire.ResultUnknown},
		{"own pattern, default unknown gone", own, api.ToolResult{Text: "BOOM; outcome unknown"}, wire.ResultFailed},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			diff(t, "reading", tt.want, readResult(tt.res, tt.step))
		})
	}
}

// TestAgainValidate: the step settings Validate refuses, each named by its
// step and setting.
func TestAgainValidate(t *testing.T) {
	tests := []struct {
		name    string
		step    Step
		wantErr string
	}{
		{"ok", Step{Call: "c", AgainIfFailed: 3, FailedIf: "(?i)x", UnknownIf: "y"}, ""},
		{"negative", Step{Call: "c", AgainIfFailed: -1}, "steps[0].again_if_failed: want a count from 0 to 10, got -1"},
		{"too many", Step{Call: "c", AgainIfFailed: 11}, "steps[0].again_if_failed: want a count from 0 to 10, got 11"},
		{"on a say", Step{Say: "done", AgainIfFailed: 1}, "steps[0].again_if_failed: only a call is asked for again"},
		{"pattern without count", Step{Call: "c", FailedIf: "x"}, "steps[0].failed_if: needs again_if_failed (a count of 1 or more)"},
		{"bad pattern", Step{Call: "c", AgainIfFailed: 1, UnknownIf: "("}, "steps[0].unknown_if: want an RE2 pattern: error parsing regexp: missing closing ): `(`"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			err := Script{Steps: []Step{tt.step}}.Validate()
			got := ""
			if err != nil {
				got = err.Error()
			}
			diff(t, "error", tt.wantErr, got)
		})
	}
}

// FuzzAgainRecord: any result text is read without a panic, and recorded
// as the history keeps it: at most wire.MaxResultText runes of valid UTF-8,
// no newline or tab, nothing shaped like a provider key.
func FuzzAgainRecord(f *testing.F) {
	for _, s := range []string{failedResult.text, unknownResult.text, "", "key sk-proj-abcdef0123456789 closed", "\xff\xfe", strings.Repeat("é", 300)} {
		f.Add(s, false)
	}
	f.Fuzz(func(t *testing.T, text string, isErr bool) {
		res := api.ToolResult{CallID: "call_1", Text: text, Error: isErr}
		read := readResult(res, &Step{Call: "c", AgainIfFailed: 1})
		if read != wire.ResultFailed && read != wire.ResultUnknown && read != wire.ResultOK {
			t.Fatalf("reading %q", read)
		}
		r := httptest.NewRequest(http.MethodPost, "/v1/messages", nil)
		got := recordResults([]api.ToolResult{res}, nil, r)[0].Text
		if utf8.RuneCountInString(got) > wire.MaxResultText || strings.ContainsAny(got, "\n\t") {
			t.Fatalf("recorded %q: over %d runes, or with a newline or tab", got, wire.MaxResultText)
		}
		if utf8.ValidString(text) && !utf8.ValidString(got) {
			t.Fatalf("recorded %q from valid UTF-8: invalid", got)
		}
		if strings.Contains(got, "sk-proj-abcdef0123456789") {
			t.Fatalf("recorded a key: %q", got)
		}
	})
}
