package upstream

import (
	"encoding/json"
	"strings"
	"testing"
)

// parseBodies are model requests as the fake gets them: the seed's chat
// request (benchBody), a chat follow-up, and a follow-up the size an agent
// CLI sends (a long system prompt and 40 tools with schemas, about 40 KB).
var parseBodies = func() []struct{ name, endpoint, body string } {
	followUp := strings.TrimSuffix(benchBody[:strings.Index(benchBody, `],"tools"`)], "]") +
		`,{"role":"assistant","content":null,"tool_calls":[{"id":"call_rc0123456789_1_0","type":"function","function":{"name":"ledger-commit_write","arguments":"{\"entry\":\"alpha-rc0123456789\"}"}}]},{"role":"tool","tool_call_id":"call_rc0123456789_1_0","content":"ok: 1 line written"}]` +
		benchBody[strings.Index(benchBody, `,"tools"`):]
	var tools []string
	for i := range 40 {
		tools = append(tools, `{"type":"function","function":{"name":"tool_`+strings.Repeat("x", i%7)+`_`+string(rune('a'+i%26))+`","description":"`+strings.Repeat("Does one thing well, and says so at length. ", 10)+`","parameters":{"type":"object","properties":{"path":{"type":"string","description":"A path."},"limit":{"type":"integer"},"flags":{"type":"array","items":{"type":"string","enum":["a","b","c"]}}},"required":["path"]}}}`)
	}
	agent := `{"model":"repro-model","stream":true,"messages":[{"role":"system","content":"` + strings.Repeat("You are an agent. Follow the rules. ", 200) +
		`"},{"role":"user","content":"Call the commit_write tool exactly once with entry alpha-rc0123456789, then reply done."},{"role":"assistant","content":null,"tool_calls":[{"id":"call_rc0123456789_1_0","type":"function","function":{"name":"ledger-commit_write","arguments":"{\"entry\":\"alpha-rc0123456789\"}"}}]},{"role":"tool","tool_call_id":"call_rc0123456789_1_0","content":"ok"}],"tools":[` +
		strings.Join(tools, ",") + `]}`
	return []struct{ name, endpoint, body string }{
		{"chat-initial", "chat", benchBody},
		{"chat-follow-up", "chat", followUp},
		{"chat-agent-40KB", "chat", agent},
	}
}()

// chatRequestJSON is what reading a chat request with encoding/json takes:
// the fields the fake needs, content left raw (a string or an array of
// parts).
type chatRequestJSON struct {
	Model         string `json:"model"`
	Stream        bool   `json:"stream"`
	StreamOptions *struct {
		IncludeUsage bool `json:"include_usage"`
	} `json:"stream_options"`
	Messages []struct {
		Role       string          `json:"role"`
		Content    json.RawMessage `json:"content"`
		ToolCallID string          `json:"tool_call_id"`
	} `json:"messages"`
	Tools []struct {
		Type     string `json:"type"`
		Function struct {
			Name string `json:"name"`
		} `json:"function"`
		Custom struct {
			Name string `json:"name"`
		} `json:"custom"`
	} `json:"tools"`
	Functions []struct {
		Name string `json:"name"`
	} `json:"functions"`
}

// BenchmarkParse measures reading a chat request the way the fake does
// (gjson, picking out the fields it needs) against decoding the same
// fields with encoding/json, on the bodies of parseBodies.
func BenchmarkParse(b *testing.B) {
	for _, pb := range parseBodies {
		de, _ := dialectByName(pb.endpoint)
		body := []byte(pb.body)
		want, err := de.d.parse(body)
		if err != nil || len(want.Tools) == 0 {
			b.Fatalf("%s: %v, %d tools", pb.name, err, len(want.Tools))
		}
		b.Run(pb.name+"/fake", func(b *testing.B) {
			b.SetBytes(int64(len(body)))
			b.ReportAllocs()
			for b.Loop() {
				if _, err := de.d.parse(body); err != nil {
					b.Fatal(err)
				}
			}
		})
		b.Run(pb.name+"/encoding-json", func(b *testing.B) {
			b.SetBytes(int64(len(body)))
			b.ReportAllocs()
			for b.Loop() {
				var r chatRequestJSON
				if err := json.Unmarshal(body, &r); err != nil {
					b.Fatal(err)
				}
				var text string
				for _, m := range r.Messages {
					if m.Role == "user" && len(m.Content) > 0 && m.Content[0] == '"' {
						_ = json.Unmarshal(m.Content, &text)
					}
				}
			}
		})
	}
}
