package gateway

import (
	"bytes"
	"encoding/json"
	"fmt"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
)

func TestParseAppRequest(t *testing.T) {
	tests := []struct {
		name    string
		path    string
		body    string
		check   func(t *testing.T, req *appRequest)
		wantErr string
	}{
		{name: "seed chat", path: pathChat, body: seedBody(pathChat, seedAsk, true, true), check: func(t *testing.T, req *appRequest) {
			if req.Model != "repro-model" || !req.Stream || !req.BlockMCP || !req.UseMCP || len(req.Messages) != 1 || len(req.FuncTools) != 0 {
				t.Errorf("got %+v", req)
			}
		}},
		{name: "responses string input", path: pathResponses, body: seedBody(pathResponses, seedAsk, false, false), check: func(t *testing.T, req *appRequest) {
			if len(req.Input) != 1 || !strings.Contains(string(req.Input[0]), `"role":"user"`) {
				t.Errorf("input = %s", req.Input)
			}
		}},
		{name: "messages to responses", path: pathMessages, body: `{"model":"m","max_tokens":9,"system":[{"type":"text","text":"be brief"}],"messages":[{"role":"user","content":[{"type":"text","text":"hi"}]}],"tools":[{"name":"lookup","input_schema":{"type":"object"}}]}`, check: func(t *testing.T, req *appRequest) {
			if string(req.Extra["max_output_tokens"]) != "9" || string(req.Extra["instructions"]) != `"be brief"` || len(req.FuncTools) != 1 {
				t.Errorf("got %+v", req)
			}
		}},
		{name: "chat passes extra fields", path: pathChat, body: `{"model":"m","temperature":0.5,"messages":[{"role":"user","content":"x"}]}`, check: func(t *testing.T, req *appRequest) {
			if string(req.Extra["temperature"]) != "0.5" || req.UseMCP {
				t.Errorf("got %+v", req)
			}
		}},
		{name: "run token", path: pathChat, body: `{"model":"m","messages":[{"role":"user","content":"entry alpha-rc0123456789"}]}`, check: func(t *testing.T, req *appRequest) {
			if req.Token != "rc0123456789" {
				t.Errorf("token = %q", req.Token)
			}
		}},
		{name: "trailing value", path: pathChat, body: `{"model":"m","messages":[{"role":"user"}]} {}`, wantErr: "more than one JSON value"},
		{name: "stream on responses", path: pathResponses, body: `{"model":"m","input":"x","stream":true}`, check: func(t *testing.T, req *appRequest) {
			if !req.Stream {
				t.Error("stream not set")
			}
		}},
		{name: "image block", path: pathMessages, body: `{"model":"m","messages":[{"role":"user","content":[{"type":"image"}]}]}`, wantErr: `content block type "image" is not supported`},
		{name: "bad role", path: pathMessages, body: `{"model":"m","messages":[{"role":"system","content":"x"}]}`, wantErr: "role must be user or assistant"},
		{name: "function tool on messages", path: pathMessages, body: `{"model":"m","messages":[{"role":"user","content":"x"}],"tools":[{"type":"function"}]}`, wantErr: "Anthropic tools"},
		{name: "model not a string", path: pathChat, body: `{"model":5,"messages":[{"role":"user"}]}`, wantErr: "model:"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			req, err := parseAppRequest(dialectTable()[tt.path], "ledger", []byte(tt.body))
			if tt.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), tt.wantErr) {
					t.Fatalf("err = %v, want it to contain %q", err, tt.wantErr)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			tt.check(t, req)
		})
	}
}

// FuzzParseAppRequest feeds arbitrary bodies to the app-facing parser: it
// must never panic, every failure must be a 400-class *requestError, and an
// accepted request must be usable by its dialect.
func FuzzParseAppRequest(f *testing.F) {
	endpoints := []string{pathChat, pathResponses, pathMessages}
	for i, p := range []string{pathChat, pathResponses, pathMessages} {
		f.Add(uint8(i), seedBody(p, seedAsk, false, false))
		f.Add(uint8(i), seedBody(p, seedAsk, true, false))
	}
	f.Add(uint8(0), seedBody(pathChat, seedAsk, false, true))
	f.Add(uint8(2), `{"model":"m","system":"s","messages":[{"role":"user","content":[{"type":"text","text":"x"}]}],"tools":[{"name":"t"}]}`)
	f.Add(uint8(1), `{"model":"m","input":[{"type":"function_call_output","call_id":"c","output":"o"}]}`)
	f.Add(uint8(0), `null`)
	f.Fuzz(func(t *testing.T, which uint8, body string) {
		d := dialectTable()[endpoints[int(which)%len(endpoints)]]
		req, err := parseAppRequest(d, "ledger", []byte(body))
		if err != nil {
			if _, ok := err.(*requestError); !ok {
				t.Fatalf("error %T %v is not a *requestError", err, err)
			}
			return
		}
		if req.Model == "" {
			t.Fatal("accepted a request without a model")
		}
		conv := d.conversation(req)
		out, err := conv.body("m", nil, req.Stream)
		if err != nil {
			t.Fatalf("rendering the upstream body: %v", err)
		}
		if !json.Valid(out) {
			t.Fatalf("upstream body is not JSON: %s", out)
		}
	})
}

// TestDecodeObjectAsEncodingJSON: decodeObject and arrayItems give what
// encoding/json gives for the same bytes (the members and items as written,
// the last of a repeated name, the same errors), and nested values keep the
// standard library's nesting bound.
func TestDecodeObjectAsEncodingJSON(t *testing.T) {
	deep := `{"a":` + strings.Repeat("[", 10001) + strings.Repeat("]", 10001) + `}`
	tests := []struct {
		name    string
		body    string
		wantErr string
	}{
		{name: "seed", body: seedBody(pathChat, seedAsk, true, true)},
		{name: "space around values", body: " {\n \"model\" : \"m\" ,\t\"messages\" : [ {\"role\":\"user\"} , {\"role\" : \"assistant\"} ] } \n"},
		{name: "repeated name", body: `{"model":"a","model":"b"}`},
		{name: "escaped name", body: `{"mo\u0064el":"m","x\"y":{"a":[1,2.5e3,null,true]}}`},
		{name: "empty object", body: `{}`},
		{name: "empty array item list", body: `{"messages":[]}`},
		{name: "not JSON", body: `{"model":`, wantErr: "request body is not a JSON object: unexpected EOF"},
		{name: "trailing comma", body: `{"model":"m",}`, wantErr: "request body is not a JSON object: invalid character '}'"},
		{name: "two values", body: `{"model":"m"} {}`, wantErr: "request body holds more than one JSON value"},
		{name: "null", body: `null`, wantErr: "request body is not a JSON object"},
		{name: "array", body: `[1]`, wantErr: "request body is not a JSON object: json: cannot unmarshal array"},
		{name: "too deep", body: deep, wantErr: "exceeded max depth"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := decodeObject([]byte(tt.body))
			if tt.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), tt.wantErr) {
					t.Fatalf("err = %v, want it to contain %q", err, tt.wantErr)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			var want map[string]json.RawMessage
			if err := json.Unmarshal([]byte(tt.body), &want); err != nil {
				t.Fatal(err)
			}
			if diff := cmp.Diff(want, got); diff != "" {
				t.Errorf("members (-want +got):\n%s", diff)
			}
			for name, raw := range want {
				var wantItems []json.RawMessage
				wantErr := json.Unmarshal(raw, &wantItems)
				gotItems, gotErr := arrayItems(got[name])
				if fmt.Sprint(gotErr) != fmt.Sprint(wantErr) {
					t.Errorf("%s: err = %v, want %v", name, gotErr, wantErr)
				}
				if diff := cmp.Diff(wantItems, gotItems); diff != "" {
					t.Errorf("%s: items (-want +got):\n%s", name, diff)
				}
			}
		})
	}
}

// BenchmarkParseAppRequest: the seed's chat request parsed, and its top level
// split by decodeObject (json.Valid, then gjson) against a json.Decoder into a
// map, which parseAppRequest used before.
func BenchmarkParseAppRequest(b *testing.B) {
	body := []byte(seedBody(pathChat, seedAsk, false, false))
	b.Run("parseAppRequest", func(b *testing.B) {
		b.ReportAllocs()
		for b.Loop() {
			if _, err := parseAppRequest(dialectTable()[pathChat], "ledger", body); err != nil {
				b.Fatal(err)
			}
		}
	})
	b.Run("decodeObject", func(b *testing.B) {
		b.ReportAllocs()
		for b.Loop() {
			if _, err := decodeObject(body); err != nil {
				b.Fatal(err)
			}
		}
	})
	b.Run("json.Decoder", func(b *testing.B) {
		b.ReportAllocs()
		for b.Loop() {
			var top map[string]json.RawMessage
			dec := json.NewDecoder(bytes.NewReader(body))
			if err := dec.Decode(&top); err != nil || dec.More() {
				b.Fatal(err)
			}
		}
	})
}
