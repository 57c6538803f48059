package upstream

import (
	"bytes"
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"reflect"
	"testing"
)

var fuzzSeeds = []string{
	`{"messages":[{"role":"user","content":"hi"},{"role":"tool","content":"ok"}],"tools":[{"type":"function","function":{"name":"commit_write"}}],"stream":true}`,
	`{"input":[{"type":"function_call_output","call_id":"c","output":"ok"}],"tools":[{"type":"namespace","name":"ns","tools":[{"type":"function","name":"f"}]}]}`,
	`{"messages":[{"role":"user","content":[{"type":"tool_result","tool_use_id":"t"},{"type":"text","text":"with entry a"}]}],"tools":[{"name":"x"}]}`,
	`{"r\u006fle":"tool","a":[1,2,{"b":"\"}"}]}`,
	`[]`, `{`, `"`, `{"messages":"x"}`, `{"input":{"a":1}}`, "",
}

// FuzzClassify: any bytes, any endpoint; never panics, and agrees with the parser.
func FuzzClassify(f *testing.F) {
	for _, s := range fuzzSeeds {
		for _, e := range []string{"chat", "responses", "messages"} {
			f.Add(e, []byte(s))
		}
	}
	f.Fuzz(func(t *testing.T, endpoint string, body []byte) {
		kind, err := Classify(endpoint, body)
		if err == nil && kind != KindInitial && kind != KindFollowUp {
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
		req, err := de.d.parse(body, nil)
		taped, terr := de.d.parse(body, make([]int32, len(body)))
		if (err == nil) != (terr == nil) || !reflect.DeepEqual(req, taped) {
			t.Fatalf("parse without tape = %+v, %v; with tape = %+v, %v", req, err, taped, terr)
		}
		if err != nil {
			return
		}
		s := Script{}
		calls, say := s.turn(req.rounds)
		a := answer{idTok: "rc0123456789", seq: 1, model: req.model, text: say}
		for _, c := range calls {
			if tl, ok := matchTool(req.tools, c.Call); ok {
				args, _ := renderArguments(c.Arguments, req.entry(""), "")
				a.calls = append(a.calls, toolCall{name: tl.name, namespace: tl.namespace, custom: tl.custom, args: args})
			}
		}
		for _, stream := range []bool{false, true} {
			req.stream = stream
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

func FuzzParseChat(f *testing.F)      { fuzzDialect(f, "chat") }
func FuzzParseResponses(f *testing.F) { fuzzDialect(f, "responses") }
func FuzzParseMessages(f *testing.F)  { fuzzDialect(f, "messages") }

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
	paths := []string{"/v1/chat/completions", "/v1/responses", "/v1/messages", "/v1/messages/count_tokens", "/v1/models"}
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
