package upstream

import (
	"bytes"
	"encoding/json"
	"errors"
	"io"
	"net/http"
	"net/http/httptest"
	"slices"
	"strings"
	"testing"
	"unicode/utf8"

	api "github.com/replaycheck/replaycheck/internal/dialect"
	"github.com/replaycheck/replaycheck/internal/wire"
)

var fuzzSeeds = []string{
	`{"messages":[{"role":"user","content":"hi"},{"role":"tool","content":"ok"}],"tools":[{"type":"function","function":{"name":"commit_write"}}],"stream":true}`,
	`{"input":[{"type":"function_call_output","call_id":"c","output":"ok"}],"tools":[{"type":"namespace","name":"ns","tools":[{"type":"function","name":"f"}]}]}`,
	`{"messages":[{"role":"user","content":[{"type":"tool_result","tool_use_id":"t"},{"type":"text","text":"with entry a"}]}],"tools":[{"name":"x"}]}`,
	`{"r\u006fle":"tool","a":[1,2,{"b":"\"}"}]}`,
	`[]`, `{`, `"`, `{"messages":"x"}`, `{"input":{"a":1}}`, "",
	`{"tools":[{"type":"function","function":{"name":"a__commit_write"}},{"type":"function","function":{"name":"b__commit_write"}}],"messages":[]}`,
	`{"tools":[{"name":"ledger_commit_write"},{"name":"mcp__ledger__commit_write_keyed"},{"name":"commit_write"},{"name":"x:read_ledger"}]}`,
	`{"contents":[{"role":"user","parts":[{"text":"with entry a"}]},{"role":"model","parts":[{"functionCall":{"id":"fc_1","name":"commit_write","args":{"entry":"a"}}}]},{"role":"user","parts":[{"functionResponse":{"id":"fc_1","name":"commit_write","response":{"output":"ok"}}}]}],"tools":[{"functionDeclarations":[{"name":"commit_write"},{"name":"ledger__commit_write"}]},{"googleSearch":{}}],"systemInstruction":{"parts":[{"text":"s"}]}}`,
	`{"contents":[{"parts":[{"function_response":{"name":"f"}},{"text":1}]},{"role":"model"},7],"tools":[{"function_declarations":[{"name":""},{}]},[]]}`,
	`{"tools":[{"type":"namespace","name":"mcp__ledger__","tools":[{"type":"function","name":"commit_write"}]},{"type":"namespace","name":"b","tools":[{"type":"function","name":"commit_write"}]},{"type":"function","name":"ledger/commit_write"}]}`,
}

// FuzzClassify: any bytes, any endpoint; never panics, and agrees with the parser.
func FuzzClassify(f *testing.F) {
	for _, s := range fuzzSeeds {
		for _, e := range []string{"chat", "responses", "messages", "gemini"} {
			f.Add(e, []byte(s))
		}
	}
	f.Fuzz(func(t *testing.T, endpoint string, body []byte) {
		kind, err := classify(endpoint, body)
		if err == nil && kind != wire.KindInitial && kind != wire.KindFollowUp {
			t.Fatalf("kind %q", kind)
		}
		if err == nil && !json.Valid(body) {
			t.Fatalf("invalid JSON classified as %s", kind)
		}
	})
}

// fuzzDialect parses any bytes and, when they parse, renders both answers
// and checks they are valid JSON.
func fuzzDialect(f *testing.F, name string) {
	de, _ := dialectByName(name)
	for _, s := range fuzzSeeds {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, body []byte) {
		req, err := de.d.parse(body)
		checkParse(t, body, req, err)
		if err != nil {
			return
		}
		for _, call := range matchCalls(req.Tools) {
			checkMatch(t, req.Tools, call)
		}
		s := Script{}
		calls, _, say := s.turn(req.Rounds)
		a := answer{idTok: "rc0123456789", seq: 1, model: req.Model, text: say}
		for _, c := range calls {
			if tl, ok, _ := matchTool(req.Tools, c.Call); ok {
				args, _ := renderArguments(c.Arguments, requestEntry(&req, ""), "")
				a.calls = append(a.calls, toolCall{name: tl.Name, namespace: tl.Namespace, custom: tl.Custom, args: args})
			}
		}
		for _, stream := range []bool{false, true} {
			req.Stream = stream
			rep := de.d.answer(nil, &a, &req)
			if !stream && !json.Valid(rep.body) {
				t.Fatalf("invalid answer %s", rep.body)
			}
			for _, ev := range rep.events {
				if string(ev.data) != "[DONE]" && !json.Valid(ev.data) {
					t.Fatalf("invalid event %s", ev.data)
				}
			}
		}
	})
}

// checkParse checks a parse against encoding/json: it refuses as not JSON
// or not an object exactly what encoding/json does not read as an object,
// and reads the same model and stream (for valid
// UTF-8; encoding/json replaces bad bytes, the fake keeps them).
func checkParse(t *testing.T, body []byte, req api.Request, err error) {
	t.Helper()
	var top map[string]json.RawMessage
	isObject := json.Unmarshal(body, &top) == nil && top != nil
	if notObject := errors.Is(err, api.ErrNotJSON) || errors.Is(err, api.ErrNotObject); notObject == isObject {
		t.Fatalf("parse error %v, but encoding/json reads an object: %v", err, isObject)
	}
	if err != nil || !utf8.Valid(body) {
		return
	}
	var want struct {
		Model  any `json:"model"`
		Stream any `json:"stream"`
	}
	if err := json.Unmarshal(body, &want); err != nil {
		t.Fatal(err)
	}
	model, _ := want.Model.(string)
	if req.Model != model || req.Stream != (want.Stream == true) {
		t.Fatalf("parse read model %q, stream %v; encoding/json reads %q, %v", req.Model, req.Stream, model, want.Stream)
	}
}

// matchCalls are script calls to try against tools: the ledger's tool
// names, and each offered name, qualified name and tail after a separator.
func matchCalls(tools []api.Tool) []string {
	calls := []string{"commit_write", "write", "commit_write_keyed", "read_ledger", ""}
	for _, t := range tools {
		calls = append(calls, t.Name, offeredName(t))
		for i := 0; i < len(t.Name); i++ {
			if strings.IndexByte("-./:_", t.Name[i]) >= 0 {
				calls = append(calls, t.Name[i+1:])
			}
		}
	}
	return calls
}

// checkMatch checks matchTool's contract for one call: an exact match
// always wins; a match always ends in the call (after a separator) or is
// the call qualified by its namespace; an ambiguity names two or more
// distinct tools that each match.
func checkMatch(t *testing.T, tools []api.Tool, call string) {
	t.Helper()
	got, ok, err := matchTool(tools, call)
	exact := func(tl api.Tool) bool { return tl.Name == call || tl.Namespace != "" && offeredName(tl) == call }
	var exacts []string
	for _, tl := range tools {
		if exact(tl) && !slices.Contains(exacts, offeredName(tl)) {
			exacts = append(exacts, offeredName(tl))
		}
	}
	switch {
	case err != nil:
		var ae *ambiguousCallError
		if ok || !errors.As(err, &ae) {
			t.Fatalf("matchTool(%q): ok %v, error %v (%T)", call, ok, err, err)
		}
		if len(ae.tools) < 2 || len(slices.Compact(slices.Sorted(slices.Values(ae.tools)))) != len(ae.tools) {
			t.Fatalf("matchTool(%q): ambiguity names %q", call, ae.tools)
		}
		if len(exacts) == 1 {
			t.Fatalf("matchTool(%q): exact match %q did not win over %q", call, exacts[0], ae.tools)
		}
		for _, n := range ae.tools {
			if !strings.HasSuffix(n, call) {
				t.Fatalf("matchTool(%q): ambiguity names %q, which does not end in the call", call, n)
			}
		}
	case ok:
		if len(exacts) > 0 && !exact(got) {
			t.Fatalf("matchTool(%q) = %q; the exact match %q must win", call, offeredName(got), exacts)
		}
		if !strings.HasSuffix(got.Name, call) && offeredName(got) != call {
			t.Fatalf("matchTool(%q) = %q, which does not end in the call", call, offeredName(got))
		}
		if prefix := strings.TrimSuffix(got.Name, call); !exact(got) && (prefix == "" || strings.IndexByte("-./:_", prefix[len(prefix)-1]) < 0) {
			t.Fatalf("matchTool(%q) = %q: no separator before the call", call, offeredName(got))
		}
		if call == "" {
			t.Fatalf("matchTool(\"\") = %q", offeredName(got))
		}
	default:
		if len(exacts) > 0 && call != "" {
			t.Fatalf("matchTool(%q): no match, but %q is exact", call, exacts)
		}
	}
}

func FuzzParseChat(f *testing.F)      { fuzzDialect(f, "chat") }
func FuzzParseResponses(f *testing.F) { fuzzDialect(f, "responses") }
func FuzzParseMessages(f *testing.F)  { fuzzDialect(f, "messages") }
func FuzzParseGemini(f *testing.F)    { fuzzDialect(f, "gemini") }

// FuzzServeHTTP: any body on any model path gets an answer, never a panic.
func FuzzServeHTTP(f *testing.F) {
	for _, s := range fuzzSeeds {
		f.Add(uint8(0), []byte(s))
		f.Add(uint8(1), []byte(s))
		f.Add(uint8(2), []byte(s))
	}
	s, err := New(Config{Log: io.Discard})
	if err != nil {
		f.Fatal(err)
	}
	paths := []string{"/v1/chat/completions", "/v1/responses", "/v1/messages", "/v1/messages/count_tokens", "/v1/models",
		"/v1beta/models/m:generateContent", "/v1beta/models/m:streamGenerateContent?alt=sse", "/v1beta/models/m:countTokens", "/v1beta/models"}
	f.Fuzz(func(t *testing.T, p uint8, body []byte) {
		req := httptest.NewRequest(http.MethodPost, paths[int(p)%len(paths)], bytes.NewReader(body))
		w := httptest.NewRecorder()
		s.ServeHTTP(w, req)
		if w.Code != 200 && w.Code != 400 && w.Code != 405 {
			t.Fatalf("status %d for %q", w.Code, body)
		}
	})
}

// FuzzAppendJSONString: the escaper's output decodes to the input (invalid
// UTF-8 replaced byte by byte, as encoding/json does).
func FuzzAppendJSONString(f *testing.F) {
	for _, s := range []string{"", "plain text here", "q\"b\\n\n\t\x00\x7f é ✓ \u2028 \xff"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		b := appendJSONString(nil, s)
		var got string
		if err := json.Unmarshal(b, &got); err != nil {
			t.Fatalf("%q gave invalid JSON %s: %v", s, b, err)
		}
		if want := string([]rune(s)); got != want {
			t.Fatalf("round trip of %q gave %q", s, got)
		}
	})
}
