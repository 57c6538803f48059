package gateway

import (
	"encoding/json"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
)

// TestQuoted: a string the fast path copies as it is comes out as
// json.Marshal writes it, and so does every string that needs escaping.
func TestQuoted(t *testing.T) {
	for _, s := range []string{"", "ledger-commit_write", "say \"hi\"", `back\slash`, "tab\there", "line\nbreak", "<b>&amp;</b>", "héllo", "\u2028", "\xff"} {
		want, err := json.Marshal(s)
		if err != nil {
			t.Fatal(err)
		}
		if got := quoted(s); string(got) != string(want) {
			t.Errorf("quoted(%q) = %s, want %s", s, got, want)
		}
	}
}

// TestUpstreamBody: the joined body is the JSON object json.Marshal would
// have made of the same fields.
func TestUpstreamBody(t *testing.T) {
	extra := map[string]json.RawMessage{"temperature": json.RawMessage(`0.5`), "we\"ird": json.RawMessage(` {"a": [1, 2]} `)}
	items := []json.RawMessage{json.RawMessage(`{"role":"user","content":"hi <there>"}`)}
	fns := []json.RawMessage{json.RawMessage(`{"type":"function","function":{"name":"ledger-commit_write"}}`)}
	app := []json.RawMessage{json.RawMessage(`{"type":"function","function":{"name":"app_fn"}}`)}
	tests := []struct {
		name string
		body []byte
		want string
	}{
		{name: "all", body: upstreamBody(extra, "m\u00e9", "messages", items, fns, app, true),
			want: `{"temperature":0.5,"we\"ird":{"a":[1,2]},"model":"mé","messages":[{"role":"user","content":"hi <there>"}],"tools":[{"type":"function","function":{"name":"ledger-commit_write"}},{"type":"function","function":{"name":"app_fn"}}],"stream":true}`},
		{name: "no tools, no items", body: upstreamBody(nil, "m", "input", nil, nil, nil, false), want: `{"model":"m","input":null}`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var got, want any
			if err := json.Unmarshal(tt.body, &got); err != nil {
				t.Fatalf("body is not JSON: %v\n%s", err, tt.body)
			}
			if err := json.Unmarshal([]byte(tt.want), &want); err != nil {
				t.Fatal(err)
			}
			if diff := cmp.Diff(want, got); diff != "" {
				t.Errorf("body (-want +got):\n%s", diff)
			}
		})
	}
}

// TestChatParse: the answer's message, text and tool calls are read, and an
// answer of the wrong shape is refused, as strictly as decoding it into
// typed fields did.
func TestChatParse(t *testing.T) {
	tests := []struct {
		name    string
		body    string
		want    *modelTurn
		wantErr string
	}{
		{name: "tool call",
			body: `{"choices":[{"message":{"role":"assistant","content":null,"tool_calls":[{"id":"call_1","type":"function","function":{"name":"ledger-commit_write","arguments":"{\"entry\":\"alpha\"}"}}]},"finish_reason":"tool_calls"}]}`,
			want: &modelTurn{Calls: []toolCall{{ID: "call_1", Name: "ledger-commit_write", Arguments: `{"entry":"alpha"}`}},
				replay: []json.RawMessage{json.RawMessage(`{"role":"assistant","content":null,"tool_calls":[{"id":"call_1","type":"function","function":{"name":"ledger-commit_write","arguments":"{\"entry\":\"alpha\"}"}}]}`)}}},
		{name: "text", body: `{"choices":[{"message":{"role":"assistant","content":"done \u00e9"}}]}`,
			want: &modelTurn{Text: "done é", replay: []json.RawMessage{json.RawMessage(`{"role":"assistant","content":"done \u00e9"}`)}}},
		{name: "not JSON", body: `{"choices":[`, wantErr: "not valid JSON"},
		{name: "trailing value", body: `{"choices":[]} {}`, wantErr: "not valid JSON"},
		{name: "no choices", body: `{"choices":[]}`, wantErr: "no choices[0].message"},
		{name: "message not an object", body: `{"choices":[{"message":"hi"}]}`, wantErr: "no choices[0].message"},
		{name: "content a number", body: `{"choices":[{"message":{"content":1}}]}`, wantErr: "want content a string or null"},
		{name: "tool_calls an object", body: `{"choices":[{"message":{"tool_calls":{}}}]}`, wantErr: "tool_calls an array"},
		{name: "arguments an object", body: `{"choices":[{"message":{"tool_calls":[{"id":"c","function":{"name":"f","arguments":{}}}]}}]}`, wantErr: "tool_calls[0]: want id, function.name and function.arguments strings"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := (&chatConversation{}).parse([]byte(tt.body))
			if tt.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), tt.wantErr) {
					t.Fatalf("err = %v, want it to contain %q", err, tt.wantErr)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			tt.want.Raw = json.RawMessage(tt.body)
			if diff := cmp.Diff(tt.want, got, cmp.AllowUnexported(modelTurn{})); diff != "" {
				t.Errorf("turn (-want +got):\n%s", diff)
			}
		})
	}
}

// TestServed: the gateway serves the dialects whose endpoints method
// returns an endpoint, in internal/dialect's order, at their paths, and
// the lists the built-in target and the help text read say so.
func TestServed(t *testing.T) {
	if diff := cmp.Diff([]string{"chat", "responses", "messages"}, Served()); diff != "" {
		t.Errorf("Served (-want +got):\n%s", diff)
	}
	if got, want := ServedPaths(), pathChat+", "+pathResponses+" and "+pathMessages; got != want {
		t.Errorf("ServedPaths = %q, want %q", got, want)
	}
	table := dialectTable()
	if len(table) != 3 || table[pathChat] != (chatDialect{}) || table[pathResponses] != (responsesDialect{}) || table[pathMessages] != (messagesDialect{}) {
		t.Errorf("dialectTable = %#v", table)
	}
}
