package dialect

import (
	"encoding/json"
	"errors"
	"net/url"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
)

func mustByName(t testing.TB, name string) Dialect {
	t.Helper()
	d, ok := ByName(name)
	if !ok {
		t.Fatalf("no dialect %q", name)
	}
	return d
}

// route returns the dialect whose model requests u addresses, as a fake
// routes them.
func route(u *url.URL) (Dialect, Call, bool) {
	for _, d := range All() {
		if c, ok := d.Route(u); ok {
			return d, c, true
		}
	}
	return Dialect{}, Call{}, false
}

// TestTable: every dialect fills every field, and names are unique.
func TestTable(t *testing.T) {
	seen := map[string]bool{}
	for _, d := range All() {
		if d.Name == "" || d.Title == "" || d.Path == "" || d.CallIDPrefix == "" || len(d.Conversation) == 0 || len(d.Tools) == 0 ||
			d.Route == nil || d.Parse == nil || d.SetPrompt == nil || d.ErrorBody == nil || d.StreamError == nil ||
			d.Terminal == nil || d.Ends == nil || d.Failed == nil || d.Recorded.ID == "" || d.Recorded.Model == "" || d.Recorded.Calls == "" ||
			d.Recorded.StreamID == "" || d.Recorded.StreamModel == "" || d.Recorded.StreamCalls == "" {
			t.Errorf("%q: a field is empty: %+v", d.Name, d)
		}
		if seen[d.Name] {
			t.Errorf("%q listed twice", d.Name)
		}
		seen[d.Name] = true
	}
	if diff := cmp.Diff([]string{"chat", "responses", "messages", "gemini"}, Names()); diff != "" {
		t.Errorf("Names (-want +got):\n%s", diff)
	}
}

// sideNames is a Sides whose part of each dialect is the name of its
// method, in lower case.
type sideNames struct{}

func (sideNames) Chat() string      { return "chat" }
func (sideNames) Responses() string { return "responses" }
func (sideNames) Messages() string  { return "messages" }
func (sideNames) Gemini() string    { return "gemini" }

// TestPair: Pair gives every dialect of All, in order, with the method of
// Sides named after it.
func TestPair(t *testing.T) {
	var got []string
	for _, p := range Pair[string](sideNames{}) {
		if p.Side != p.Name {
			t.Errorf("dialect %q is paired with the method %s", p.Name, p.Side)
		}
		got = append(got, p.Name)
	}
	if diff := cmp.Diff(Names(), got); diff != "" {
		t.Errorf("Pair's dialects (-All +Pair):\n%s", diff)
	}
}

// TestParse: how each dialect classifies a request: the tool results it
// carries (their rounds and ids), the stream flag, the tools and user text.
func TestParse(t *testing.T) {
	tests := []struct {
		name    string
		dialect string
		body    string
		want    Request
		wantErr string
	}{
		{name: "chat initial", dialect: "chat",
			body: `{"model":"m","stream":true,"stream_options":{"include_usage":true},"messages":[{"role":"user","content":"with entry a"}],"tools":[{"type":"function","function":{"name":"commit_write"}},{"type":"custom","custom":{"name":"free"}}]}`,
			want: Request{Model: "m", Stream: true, IncludeUsage: true, UserText: []string{"with entry a"}, Tools: []Tool{{Name: "commit_write"}, {Name: "free", Custom: true}}}},
		{name: "chat follow-up, two rounds", dialect: "chat",
			body: `{"messages":[{"role":"user","content":[{"type":"text","text":"hi"}]},{"role":"tool","tool_call_id":"call_1"},{"role":"tool","tool_call_id":"call_2"},{"role":"assistant"},{"role":"function","content":"ok"}]}`,
			want: Request{FollowUp: true, Rounds: 2, ResultIDs: []string{"call_1", "call_2"}, UserText: []string{"hi"},
				Results: []ToolResult{{CallID: "call_1", Round: 1}, {CallID: "call_2", Round: 1}, {Round: 2, Text: "ok"}}}},
		{name: "chat legacy functions", dialect: "chat", body: `{"functions":[{"name":"f"}],"stream":"yes"}`,
			want: Request{Legacy: true, Tools: []Tool{{Name: "f"}}}},
		{name: "chat messages not an array", dialect: "chat", body: `{"messages":"x"}`, wantErr: "messages: want an array"},
		{name: "responses string input", dialect: "responses", body: `{"input":"hello","stream":true}`,
			want: Request{Stream: true, UserText: []string{"hello"}}},
		{name: "responses follow-up", dialect: "responses",
			body: `{"input":[{"role":"user","content":"hi"},{"type":"function_call","call_id":"c1"},{"type":"function_call_output","call_id":"c1","output":"ok"},{"type":"custom_tool_call_output","call_id":"c2"},{"type":"mcp_call","output":null},{"type":"mcp_call","output":"x"}],"tools":[{"type":"namespace","name":"ns","tools":[{"type":"function","name":"f"},{"type":"custom","name":"g"}]},{"type":"web_search"}]}`,
			want: Request{FollowUp: true, Rounds: 2, ResultIDs: []string{"c1", "c2"}, UserText: []string{"hi"},
				Results: []ToolResult{{CallID: "c1", Round: 1, Text: "ok"}, {CallID: "c2", Round: 1}, {Round: 2, Text: "x"}}, Tools: []Tool{{Name: "f", Namespace: "ns"}, {Name: "g", Namespace: "ns", Custom: true}}}},
		{name: "messages follow-up", dialect: "messages",
			body: `{"stream":true,"messages":[{"role":"user","content":"hi"},{"role":"assistant","content":[{"type":"tool_use","id":"toolu_1"}]},{"role":"user","content":[{"type":"tool_result","tool_use_id":"toolu_1"},{"type":"tool_result","tool_use_id":"toolu_2"},{"type":"text","text":"more"}]}],"tools":[{"name":"c"},{"type":"bash_20250124","name":"bash"},{"type":"web_search_20250305","name":"web_search"}]}`,
			want: Request{Stream: true, FollowUp: true, Rounds: 1, ResultIDs: []string{"toolu_1", "toolu_2"}, UserText: []string{"hi", "more"},
				Results: []ToolResult{{CallID: "toolu_1", Round: 1}, {CallID: "toolu_2", Round: 1}}, Tools: []Tool{{Name: "c"}, {Name: "bash"}}}},
		{name: "gemini follow-up, snake_case", dialect: "gemini",
			body: `{"contents":[{"role":"user","parts":[{"text":"hi"}]},{"role":"model","parts":[{"functionCall":{"id":"fc_1"}},{"text":"said"}]},{"role":"user","parts":[{"function_response":{"id":"fc_1"}},{"functionResponse":{"name":"x"}}]}],"tools":[{"function_declarations":[{"name":"f"}]},{"googleSearch":{}}]}`,
			want: Request{FollowUp: true, Rounds: 1, ResultIDs: []string{"fc_1"}, UserText: []string{"hi"},
				Results: []ToolResult{{CallID: "fc_1", Round: 1}, {Round: 1}}, Tools: []Tool{{Name: "f"}}}},
		{name: "chat result text and parts", dialect: "chat",
			body: `{"messages":[{"role":"tool","tool_call_id":"call_1","content":"MCP tool call commit_write failed: 503"},{"role":"tool","tool_call_id":"call_2","content":[{"type":"text","text":"a"},{"type":"text","text":"b"}]}]}`,
			want: Request{FollowUp: true, Rounds: 1, ResultIDs: []string{"call_1", "call_2"},
				Results: []ToolResult{{CallID: "call_1", Round: 1, Text: "MCP tool call commit_write failed: 503"}, {CallID: "call_2", Round: 1, Text: "a\nb"}}}},
		{name: "responses results: output parts, mcp_call error", dialect: "responses",
			body: `{"input":[{"type":"function_call_output","call_id":"c1","output":[{"type":"input_text","text":"closed"}]},{"type":"mcp_call","id":"m1","output":"","error":"server gone"},{"type":"mcp_call","output":"fine","error":null}]}`,
			want: Request{FollowUp: true, Rounds: 1, ResultIDs: []string{"c1"},
				Results: []ToolResult{{CallID: "c1", Round: 1, Text: "closed"}, {Round: 1, Error: true, Text: "server gone"}, {Round: 1, Text: "fine"}}}},
		{name: "messages is_error and content blocks", dialect: "messages",
			body: `{"messages":[{"role":"user","content":[{"type":"tool_result","tool_use_id":"toolu_1","is_error":true,"content":"connection closed"},{"type":"tool_result","tool_use_id":"toolu_2","is_error":false,"content":[{"type":"text","text":"wrote"}]}]},{"role":"user","content":[{"type":"tool_result","tool_use_id":"toolu_3","is_error":"true"}]}]}`,
			want: Request{FollowUp: true, Rounds: 2, ResultIDs: []string{"toolu_1", "toolu_2", "toolu_3"},
				Results: []ToolResult{{CallID: "toolu_1", Round: 1, Error: true, Text: "connection closed"}, {CallID: "toolu_2", Round: 1, Text: "wrote"}, {CallID: "toolu_3", Round: 2}}}},
		{name: "gemini response error, output, object", dialect: "gemini",
			body: `{"contents":[{"role":"user","parts":[{"functionResponse":{"id":"fc_1","response":{"error":"not connected"}}},{"functionResponse":{"id":"fc_2","response":{"error":{"code":5}}}},{"functionResponse":{"id":"fc_3","response":{"output":"ok"}}},{"functionResponse":{"id":"fc_4","response":{"n":1}}},{"functionResponse":{"id":"fc_5","response":{"error":null,"result":"r"}}}]}]}`,
			want: Request{FollowUp: true, Rounds: 1, ResultIDs: []string{"fc_1", "fc_2", "fc_3", "fc_4", "fc_5"},
				Results: []ToolResult{{CallID: "fc_1", Round: 1, Error: true, Text: "not connected"}, {CallID: "fc_2", Round: 1, Error: true, Text: `{"code":5}`},
					{CallID: "fc_3", Round: 1, Text: "ok"}, {CallID: "fc_4", Round: 1, Text: `{"n":1}`}, {CallID: "fc_5", Round: 1, Text: "r"}}}},
		{name: "not JSON", dialect: "gemini", body: `{"contents":[`, wantErr: ErrNotJSON.Error()},
		{name: "not an object", dialect: "messages", body: `[]`, wantErr: ErrNotObject.Error()},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := mustByName(t, tt.dialect).Parse([]byte(tt.body))
			if tt.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), tt.wantErr) {
					t.Fatalf("err = %v, want %q", err, tt.wantErr)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if diff := cmp.Diff(tt.want, got); diff != "" {
				t.Errorf("Parse (-want +got):\n%s", diff)
			}
		})
	}
}

// TestTerminal: the event that ends each dialect's stream.
func TestTerminal(t *testing.T) {
	tests := []struct {
		name    string
		dialect string
		ev      Event
		want    bool
	}{
		{"chat content chunk", "chat", Event{Data: []byte(`{"choices":[{"delta":{"content":"x"},"finish_reason":null}]}`)}, false},
		{"chat finish chunk", "chat", Event{Data: []byte(`{"choices":[{"delta":{},"finish_reason":"stop"}]}`)}, true},
		{"chat done", "chat", Event{Data: []byte(Done)}, true},
		{"responses delta", "responses", Event{Name: OutputTextDelta, Data: []byte(`{}`)}, false},
		{"responses completed", "responses", Event{Name: ResponseCompleted}, true},
		{"responses incomplete", "responses", Event{Name: ResponseIncomplete}, true},
		{"responses failed", "responses", Event{Name: ResponseFailed}, true},
		{"responses unnamed completed", "responses", Event{Data: []byte(`{"type":"response.completed"}`)}, true},
		{"messages block stop", "messages", Event{Name: ContentBlockStop}, false},
		{"messages delta", "messages", Event{Name: MessageDelta}, true},
		{"messages stop", "messages", Event{Name: MessageStop}, true},
		{"gemini chunk", "gemini", Event{Data: []byte(`{"candidates":[{"content":{"parts":[{"text":"x"}]}}]}`)}, false},
		{"gemini finish", "gemini", Event{Data: []byte(`{"candidates":[{"finishReason":"STOP"}]}`)}, true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := mustByName(t, tt.dialect).Terminal(tt.ev); got != tt.want {
				t.Errorf("Terminal = %v, want %v", got, tt.want)
			}
		})
	}
}

// TestEndsAndFailed: how the app client reads a decoded chunk of each
// dialect: the last chunk of a whole answer, and an in-stream error.
func TestEndsAndFailed(t *testing.T) {
	tests := []struct {
		name       string
		event      string
		chunk      string
		wantEnds   string // the dialect that says the chunk ends, "" none
		wantFailed string // the dialect that says it is an error, "" none
	}{
		{name: "responses completed", chunk: `{"type":"response.completed"}`, wantEnds: "responses"},
		{name: "messages stop", chunk: `{"type":"message_stop"}`, wantEnds: "messages"},
		{name: "gemini finish", chunk: `{"candidates":[{"finishReason":"STOP"}]}`, wantEnds: "gemini"},
		{name: "gemini no finish", chunk: `{"candidates":[{"finishReason":""}]}`},
		{name: "chat chunk", chunk: `{"choices":[]}`},
		{name: "chat error", chunk: `{"error":{"message":"x"}}`, wantFailed: "chat"},
		{name: "typed error is not chat's", chunk: `{"type":"x","error":{}}`},
		{name: "responses failed", chunk: `{"type":"response.failed"}`, wantFailed: "responses"},
		{name: "messages error event", event: "error", chunk: `{"type":"x"}`, wantFailed: "messages"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var chunk map[string]any
			if err := json.Unmarshal([]byte(tt.chunk), &chunk); err != nil {
				t.Fatal(err)
			}
			var ends, failed []string
			for _, d := range All() {
				if d.Ends(chunk) {
					ends = append(ends, d.Name)
				}
				if d.Failed(tt.event, chunk) {
					failed = append(failed, d.Name)
				}
			}
			if got := strings.Join(ends, ","); got != tt.wantEnds {
				t.Errorf("Ends by %q, want %q", got, tt.wantEnds)
			}
			if got := strings.Join(failed, ","); got != tt.wantFailed {
				t.Errorf("Failed by %q, want %q", got, tt.wantFailed)
			}
		})
	}
}

// TestErrorBody: each dialect's error shape.
func TestErrorBody(t *testing.T) {
	tests := []struct {
		dialect string
		status  int
		want    string
	}{
		{"chat", 429, `{"error":{"message":"m","type":"rate_limit_error","param":null,"code":"rate_limit_exceeded"}}`},
		{"chat", 500, `{"error":{"message":"m","type":"server_error","param":null,"code":null}}`},
		{"responses", 401, `{"error":{"message":"m","type":"invalid_request_error","param":null,"code":"invalid_api_key"}}`},
		{"messages", 529, `{"type":"error","error":{"type":"overloaded_error","message":"m"}}`},
		{"messages", 413, `{"type":"error","error":{"type":"request_too_large","message":"m"}}`},
		{"gemini", 503, `{"error":{"code":503,"message":"m","status":"UNAVAILABLE"}}`},
		{"gemini", 418, `{"error":{"code":418,"message":"m","status":"FAILED_PRECONDITION"}}`},
		{"gemini", 599, `{"error":{"code":599,"message":"m","status":"UNKNOWN"}}`},
	}
	for _, tt := range tests {
		t.Run(tt.dialect, func(t *testing.T) {
			if diff := cmp.Diff(tt.want, string(mustByName(t, tt.dialect).ErrorBody(tt.status, "m"))); diff != "" {
				t.Errorf("ErrorBody(%d) (-want +got):\n%s", tt.status, diff)
			}
		})
	}
}

// TestStreamError: each dialect's in-stream error, with its default type.
func TestStreamError(t *testing.T) {
	msg := func(typ string) string { return "msg " + typ }
	tests := []struct {
		name    string
		dialect string
		e       StreamError
		want    Event
	}{
		{"chat", "chat", StreamError{}, Event{Data: []byte(`{"error":{"message":"msg server_error","type":"server_error","param":null,"code":null}}`)}},
		{"messages", "messages", StreamError{}, Event{Name: "error", Data: []byte(`{"type":"error","error":{"type":"overloaded_error","message":"msg overloaded_error"}}`)}},
		{"responses error event", "responses", StreamError{Event: ResponsesErrorEvent, Type: "t", Seq: 3},
			Event{Name: "error", Data: []byte(`{"type":"error","sequence_number":3,"code":"t","message":"msg t","param":null}`)}},
		{"gemini", "gemini", StreamError{Type: "resource_exhausted"},
			Event{Raw: true, Data: []byte("{\n  \"error\": {\n    \"code\": 429,\n    \"message\": \"msg resource_exhausted\",\n    \"status\": \"RESOURCE_EXHAUSTED\"\n  }\n}")}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			tt.e.Message = msg
			got := mustByName(t, tt.dialect).StreamError(tt.e)
			if diff := cmp.Diff(tt.want.Name, got.Name); diff != "" {
				t.Errorf("name (-want +got):\n%s", diff)
			}
			if diff := cmp.Diff(string(tt.want.Data), string(got.Data)); diff != "" {
				t.Errorf("data (-want +got):\n%s", diff)
			}
			if got.Raw != tt.want.Raw {
				t.Errorf("raw = %v", got.Raw)
			}
		})
	}
	// response.failed names the answer it ends, or a stand-in id.
	ev := Responses().StreamError(StreamError{Message: msg, Seq: 7, Model: "m", Created: 5})
	var v struct {
		Type     string `json:"type"`
		Seq      int    `json:"sequence_number"`
		Response struct {
			ID, Status, Model string
			Error             struct{ Code, Message string }
		} `json:"response"`
	}
	if err := json.Unmarshal(ev.Data, &v); err != nil || ev.Name != ResponseFailed {
		t.Fatalf("response.failed %s: %v %s", ev.Name, err, ev.Data)
	}
	if v.Type != ResponseFailed || v.Seq != 7 || v.Response.ID != "resp_failed" || v.Response.Status != "failed" || v.Response.Model != "m" || v.Response.Error.Code != "server_error" || v.Response.Error.Message != "msg server_error" {
		t.Errorf("response.failed = %+v", v)
	}
}

// TestRoute: which paths each dialect claims, and what Gemini's path says.
func TestRoute(t *testing.T) {
	tests := []struct {
		url      string
		want     string // dialect name, "" none
		wantCall Call
	}{
		{url: ChatPath, want: "chat"},
		{url: ResponsesPath, want: "responses"},
		{url: MessagesPath, want: "messages"},
		{url: MessagesCountTokensPath},
		{url: "/v1beta/models/gemini-2.5:generateContent", want: "gemini", wantCall: Call{Model: "gemini-2.5"}},
		{url: "/v1/models/g:streamGenerateContent?alt=sse", want: "gemini", wantCall: Call{Model: "g", Stream: true}},
		{url: "/v1beta/models/g:streamGenerateContent", want: "gemini",
			wantCall: Call{Model: "g", Stream: true, Bad: "/v1beta/models/g:streamGenerateContent: this fake streams only server-sent events; add ?alt=sse, as the Google SDKs do"}},
		{url: "/v1beta/models/g:countTokens"},
		{url: "/v1beta/models/a/b:generateContent"},
		{url: "/v1beta/models/:generateContent"},
	}
	for _, tt := range tests {
		t.Run(tt.url, func(t *testing.T) {
			u, err := url.Parse(tt.url)
			if err != nil {
				t.Fatal(err)
			}
			d, c, ok := route(u)
			if ok != (tt.want != "") || d.Name != tt.want {
				t.Fatalf("For = %q, %v; want %q", d.Name, ok, tt.want)
			}
			if diff := cmp.Diff(tt.wantCall, c); diff != "" {
				t.Errorf("call (-want +got):\n%s", diff)
			}
		})
	}
}

// TestURLPath: the path an app request of each dialect goes to, and back.
func TestURLPath(t *testing.T) {
	tests := []struct {
		dialect string
		model   string
		stream  bool
		want    string
	}{
		{"chat", "m", true, "/v1/chat/completions"},
		{"responses", "m", false, "/v1/responses"},
		{"messages", "m", true, "/v1/messages"},
		{"gemini", "gemini-2.5-flash", false, "/v1beta/models/gemini-2.5-flash:generateContent"},
		{"gemini", "a/b", true, "/v1beta/models/a%2Fb:streamGenerateContent?alt=sse"},
	}
	for _, tt := range tests {
		t.Run(tt.want, func(t *testing.T) {
			d := mustByName(t, tt.dialect)
			got := d.URLPath(tt.model, tt.stream)
			if got != tt.want {
				t.Fatalf("URLPath = %q, want %q", got, tt.want)
			}
			if tt.model == "a/b" {
				return
			}
			u, _ := url.Parse(got)
			if back, c, ok := route(u); !ok || back.Name != d.Name || c.Bad != "" || (d.InPath && (c.Model != tt.model || c.Stream != tt.stream)) {
				t.Errorf("For(%q) = %q %+v %v", got, back.Name, c, ok)
			}
		})
	}
}

// validJSON shares encoding/json's nesting limit, and a body nested deeper
// than gjson's recursion should see (a million levels) is refused, not a
// stack overflow.
func TestValidJSONDepth(t *testing.T) {
	for _, depth := range []int{maxJSONDepth, maxJSONDepth + 1, 1 << 20} {
		b := []byte(strings.Repeat("[", depth) + strings.Repeat("]", depth))
		if got, want := validJSON(b), json.Valid(b); got != want {
			t.Errorf("depth %d: validJSON = %v, json.Valid = %v", depth, got, want)
		}
	}
}

var fuzzSeeds = []string{
	`{"messages":[{"role":"user","content":[{"type":"tool_result","tool_use_id":"toolu_1","is_error":true,"content":[{"type":"text","text":"closed"}]}]}]}`,
	`{"contents":[{"role":"user","parts":[{"functionResponse":{"id":"fc_1","response":{"error":{"code":1}}}}]}]}`,
	`{"input":[{"type":"mcp_call","output":"","error":"gone"},{"type":"function_call_output","call_id":"c","output":[{"type":"input_text","text":"x"}]}]}`,
	`{"messages":[{"role":"user","content":"hi"},{"role":"tool","content":"ok"}],"tools":[{"type":"function","function":{"name":"commit_write"}}],"stream":true}`,
	`{"input":[{"type":"function_call_output","call_id":"c","output":"ok"}],"tools":[{"type":"namespace","name":"ns","tools":[{"type":"function","name":"f"}]}]}`,
	`{"messages":[{"role":"user","content":[{"type":"tool_result","tool_use_id":"t"},{"type":"text","text":"with entry a"}]}],"tools":[{"name":"x"}]}`,
	`{"contents":[{"parts":[{"function_response":{"name":"f"}},{"text":1}]},{"role":"model"},7],"tools":[{"function_declarations":[{"name":""},{}]},[]]}`,
	`{"r\u006fle":"tool","a":[1,2,{"b":"\"}"}]}`, `[]`, `{`, `"`, `{"messages":"x"}`, `{"input":{"a":1}}`, "",
}

// FuzzValidJSON: validJSON agrees with encoding/json's json.Valid.
func FuzzValidJSON(f *testing.F) {
	for _, s := range fuzzSeeds {
		f.Add([]byte(s))
	}
	for _, s := range []string{`1`, `-0.5e+3`, `01`, `1.`, `"\u00zz"`, `"\ud800"`, "\"a\x01\"", `[1,]`, `{"a":1,}`, ` true `, `nul`, `{"a" 1}`, `[[[]]]`, `"\/"`, `-`, `1e`, `[1 2]`} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, b []byte) {
		if got, want := validJSON(b), json.Valid(b); got != want {
			t.Fatalf("validJSON(%q) = %v, json.Valid = %v", b, got, want)
		}
	})
}

// FuzzParseAll: every dialect's Parse takes any bytes without a panic,
// refuses as not an object exactly what encoding/json does not read as one,
// and counts rounds only for a follow-up.
func FuzzParseAll(f *testing.F) {
	for _, s := range fuzzSeeds {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, body []byte) {
		var top map[string]json.RawMessage
		isObject := json.Unmarshal(body, &top) == nil && top != nil
		for _, d := range All() {
			req, err := d.Parse(body)
			if notObject := errors.Is(err, ErrNotJSON) || errors.Is(err, ErrNotObject); notObject == isObject {
				t.Fatalf("%s: parse error %v, but encoding/json reads an object: %v", d.Name, err, isObject)
			}
			if req.FollowUp != (req.Rounds > 0) || len(req.ResultIDs) > 0 && !req.FollowUp {
				t.Fatalf("%s: follow-up %v with %d rounds and ids %q", d.Name, req.FollowUp, req.Rounds, req.ResultIDs)
			}
			if len(req.Results) < len(req.ResultIDs) || len(req.Results) > 0 != req.FollowUp {
				t.Fatalf("%s: %d results for %d ids, follow-up %v", d.Name, len(req.Results), len(req.ResultIDs), req.FollowUp)
			}
			last := 1
			for _, r := range req.Results {
				if r.Round < last || r.Round > req.Rounds || len(r.Text) > MaxResultText {
					t.Fatalf("%s: result %+v out of order or too long (%d rounds)", d.Name, r, req.Rounds)
				}
				last = r.Round
			}
		}
	})
}
