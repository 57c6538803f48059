package gateway

import (
	"encoding/json"
	"strings"
	"testing"
)

func TestParseAppRequest(t *testing.T) {
	tests := []struct {
		name     string
		endpoint string
		body     string
		check    func(t *testing.T, req *appRequest)
		wantErr  string
	}{
		{name: "seed chat", endpoint: EndpointChat, body: seedBody(pathChat, seedAsk, true, true), check: func(t *testing.T, req *appRequest) {
			if req.Model != "repro-model" || !req.Stream || !req.BlockMCP || !req.UseMCP || len(req.Messages) != 1 || len(req.FuncTools) != 0 {
				t.Errorf("got %+v", req)
			}
		}},
		{name: "responses string input", endpoint: EndpointResponses, body: seedBody(pathResponses, seedAsk, false, false), check: func(t *testing.T, req *appRequest) {
			if len(req.Input) != 1 || !strings.Contains(string(req.Input[0]), `"role":"user"`) {
				t.Errorf("input = %s", req.Input)
			}
		}},
		{name: "messages to responses", endpoint: EndpointMessages, body: `{"model":"m","max_tokens":9,"system":[{"type":"text","text":"be brief"}],"messages":[{"role":"user","content":[{"type":"text","text":"hi"}]}],"tools":[{"name":"lookup","input_schema":{"type":"object"}}]}`, check: func(t *testing.T, req *appRequest) {
			if string(req.Extra["max_output_tokens"]) != "9" || string(req.Extra["instructions"]) != `"be brief"` || len(req.FuncTools) != 1 {
				t.Errorf("got %+v", req)
			}
		}},
		{name: "chat passes extra fields", endpoint: EndpointChat, body: `{"model":"m","temperature":0.5,"messages":[{"role":"user","content":"x"}]}`, check: func(t *testing.T, req *appRequest) {
			if string(req.Extra["temperature"]) != "0.5" || req.UseMCP {
				t.Errorf("got %+v", req)
			}
		}},
		{name: "run token", endpoint: EndpointChat, body: `{"model":"m","messages":[{"role":"user","content":"entry alpha-rc0123456789"}]}`, check: func(t *testing.T, req *appRequest) {
			if req.Token != "rc0123456789" {
				t.Errorf("token = %q", req.Token)
			}
		}},
		{name: "trailing value", endpoint: EndpointChat, body: `{"model":"m","messages":[{"role":"user"}]} {}`, wantErr: "more than one JSON value"},
		{name: "stream on responses", endpoint: EndpointResponses, body: `{"model":"m","input":"x","stream":true}`, check: func(t *testing.T, req *appRequest) {
			if !req.Stream {
				t.Error("stream not set")
			}
		}},
		{name: "image block", endpoint: EndpointMessages, body: `{"model":"m","messages":[{"role":"user","content":[{"type":"image"}]}]}`, wantErr: `content block type "image" is not supported`},
		{name: "bad role", endpoint: EndpointMessages, body: `{"model":"m","messages":[{"role":"system","content":"x"}]}`, wantErr: "role must be user or assistant"},
		{name: "function tool on messages", endpoint: EndpointMessages, body: `{"model":"m","messages":[{"role":"user","content":"x"}],"tools":[{"type":"function"}]}`, wantErr: "Anthropic tools"},
		{name: "model not a string", endpoint: EndpointChat, body: `{"model":5,"messages":[{"role":"user"}]}`, wantErr: "model:"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			req, err := parseAppRequest(tt.endpoint, "ledger", []byte(tt.body))
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
	endpoints := []string{EndpointChat, EndpointResponses, EndpointMessages}
	for i, p := range []string{pathChat, pathResponses, pathMessages} {
		f.Add(uint8(i), seedBody(p, seedAsk, false, false))
		f.Add(uint8(i), seedBody(p, seedAsk, true, false))
	}
	f.Add(uint8(0), seedBody(pathChat, seedAsk, false, true))
	f.Add(uint8(2), `{"model":"m","system":"s","messages":[{"role":"user","content":[{"type":"text","text":"x"}]}],"tools":[{"name":"t"}]}`)
	f.Add(uint8(1), `{"model":"m","input":[{"type":"function_call_output","call_id":"c","output":"o"}]}`)
	f.Add(uint8(0), `null`)
	f.Fuzz(func(t *testing.T, which uint8, body string) {
		endpoint := endpoints[int(which)%len(endpoints)]
		req, err := parseAppRequest(endpoint, "ledger", []byte(body))
		if err != nil {
			if _, ok := err.(*requestError); !ok {
				t.Fatalf("error %T %v is not a *requestError", err, err)
			}
			return
		}
		if req.Model == "" {
			t.Fatal("accepted a request without a model")
		}
		d := dialectTable()[map[string]string{EndpointChat: pathChat, EndpointResponses: pathResponses, EndpointMessages: pathMessages}[endpoint]].d
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
