package upstream

import (
	"encoding/json"
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
