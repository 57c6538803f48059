package mcpcassette

import (
	"encoding/json"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/replaycheck/replaycheck/internal/jsonl"
)

const (
	toolsLine = `{"tools/list":{"tools":[{"name":"create_item","inputSchema":{"type":"object"}}]}}`
	callLine  = `{"tools/call":{"name":"create_item","arguments":{"name":"a"},"result":{"content":[{"type":"text","text":"created a"}]}}}`
)

// TestLoadErrors: a line that is not an entry is an error at
// file:line:col, and a cassette without a listing of tools is an error.
func TestLoadErrors(t *testing.T) {
	tests := []struct {
		name string
		src  string
		want string // after the file's path
	}{
		{"syntax", toolsLine + "\n  {\"tools/call\": nope}\n", ":2:19: invalid character 'o'"},
		{"unknown field", toolsLine + "\n" + `{"tools/call":{"name":"x","argumnets":{},"result":{"content":[]}}}` + "\n", `:2:27: json: unknown field "argumnets"`},
		{"wrong type", `{"tools/list":{"tools":"x"}}` + "\n", ":1:"},
		{"two kinds", `{"initialize":{"protocolVersion":"1"},` + toolsLine[1:] + "\n", `:1:1: want exactly one of "initialize", "tools/list" and "tools/call"`},
		{"result and error", toolsLine + "\n" + `{"tools/call":{"name":"x","arguments":{},"result":{"content":[]},"error":{"code":1,"message":"m"}}}` + "\n", `:2:1: tools/call: want exactly one of "result" and "error"`},
		{"arguments not an object", toolsLine + "\n" + `{"tools/call":{"name":"x","arguments":[1],"result":{"content":[]}}}` + "\n", ":2:1: tools/call: arguments: want a JSON object"},
		{"no input schema type", `{"tools/list":{"tools":[{"name":"x","inputSchema":{}}]}}` + "\n", `:1:1: tools/list: tools[0]: tool "x": inputSchema: want a JSON Schema with "type": "object"`},
		{"no listing", callLine + "\n", ": no tools/list recorded in it"},
		{"empty", "\n", ": no tools/list recorded in it"},
		{"two values", toolsLine + " {}\n", ":1:1: more than one JSON value on the line"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			path := filepath.Join(t.TempDir(), "c.jsonl")
			if err := os.WriteFile(path, []byte(tt.src), 0o644); err != nil {
				t.Fatal(err)
			}
			_, err := Load(path)
			if err == nil || !strings.Contains(err.Error(), path+tt.want) {
				t.Fatalf("Load: %v, want an error with %q", err, path+tt.want)
			}
		})
	}
}

// TestLoadLineTooLong: a line over jsonl.MaxLine is an error naming the
// file, the line and the limit.
func TestLoadLineTooLong(t *testing.T) {
	path := filepath.Join(t.TempDir(), "c.jsonl")
	if err := os.WriteFile(path, []byte(toolsLine+"\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	// A second line of MaxLine+1 zero bytes, sparse on disk.
	if err := os.Truncate(path, int64(len(toolsLine)+1+jsonl.MaxLine+1)); err != nil {
		t.Fatal(err)
	}
	_, err := Load(path)
	if want := "mcp cassette " + path + ":2: the line is longer than 64 MiB (67108864 bytes), the most a line may have"; err == nil || err.Error() != want {
		t.Errorf("Load: %v, want %q", err, want)
	}
}

// TestLoadDirectory: a directory is its *.jsonl files in name order; a tool
// listed twice is offered as last listed, in the order first listed.
func TestLoadDirectory(t *testing.T) {
	dir := t.TempDir()
	files := map[string]string{
		"a.jsonl": `{"tools/list":{"tools":[{"name":"b","inputSchema":{"type":"object"}},{"name":"a","inputSchema":{"type":"object"}}]}}` + "\n" + callLine + "\n",
		"b.jsonl": `{"tools/list":{"tools":[{"name":"a","description":"new","inputSchema":{"type":"object"}}]}}` + "\n",
		"c.txt":   "not a cassette",
	}
	for name, src := range files {
		if err := os.WriteFile(filepath.Join(dir, name), []byte(src), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	c, err := Load(dir)
	if err != nil {
		t.Fatal(err)
	}
	var got []string
	for _, tool := range c.Tools {
		got = append(got, tool.Name+":"+tool.Description)
	}
	if diff := cmp.Diff([]string{"b:", "a:new"}, got); diff != "" {
		t.Errorf("tools (-want +got):\n%s", diff)
	}
	if len(c.Calls) != 1 || c.Sources[0].String() != filepath.Join(dir, "a.jsonl")+":2" {
		t.Errorf("calls %v from %v, want one from a.jsonl:2", c.Calls, c.Sources)
	}
}

// TestPlayerOrder: equal calls are served in cassette order, then the last
// again; arguments match whatever their key order and spacing.
func TestPlayerOrder(t *testing.T) {
	path := filepath.Join(t.TempDir(), "c.jsonl")
	src := toolsLine + "\n" +
		`{"tools/call":{"name":"create_item","arguments":{"name":"a","n":1},"result":{"content":[{"type":"text","text":"first"}]}}}` + "\n" +
		`{"tools/call":{"name":"create_item","arguments":{"n":1, "name":"a"},"result":{"content":[{"type":"text","text":"second"}],"isError":true}}}` + "\n"
	if err := os.WriteFile(path, []byte(src), 0o644); err != nil {
		t.Fatal(err)
	}
	c, err := Load(path)
	if err != nil {
		t.Fatal(err)
	}
	p := NewPlayer(c)
	var got []string
	for range 3 {
		key, _, err := Arguments(json.RawMessage(`{ "name": "a", "n": 1 }`), "", nil)
		if err != nil {
			t.Fatal(err)
		}
		call, src, err := p.Find("create_item", key)
		if err != nil {
			t.Fatal(err)
		}
		res, _, err := call.Answer("")
		if err != nil {
			t.Fatal(err)
		}
		got = append(got, res.Content[0].(*mcp.TextContent).Text+"@"+strings.TrimPrefix(src.String(), path))
	}
	if diff := cmp.Diff([]string{"first@:2", "second@:3", "second@:3"}, got); diff != "" {
		t.Errorf("answers (-want +got):\n%s", diff)
	}
	_, _, err = p.Find("create_item", json.RawMessage(`{"n":2,"name":"a"}`))
	var miss *MissError
	if !errors.As(err, &miss) || miss.Closest.Line != 2 || miss.Recorded != 2 {
		t.Fatalf("Find of other arguments: %v, want a miss naming line 2 of 2 recorded", err)
	}
	if want := `no recorded answer for tools/call create_item {"n":2,"name":"a"}`; !strings.Contains(err.Error(), want) {
		t.Errorf("miss %q lacks %q", err, want)
	}
}

// TestArguments: the key of a call's arguments is canonical, writes the run
// token as {{token}}, and scrubs secrets: the values of secret-named string
// arguments (not idempotency_key), the known secrets and key-shaped values.
func TestArguments(t *testing.T) {
	tests := []struct {
		name, args, token string
		secrets           []string
		want              string
		wantFound         []string
	}{
		{"none", ``, "", nil, `{}`, nil},
		{"null", `null`, "", nil, `{}`, nil},
		{"canonical", `{ "b": 1.50, "a": [true, null] }`, "", nil, `{"a":[true,null],"b":1.50}`, nil},
		{"token", `{"entry":"x-rcabcdefghij"}`, "rcabcdefghij", nil, `{"entry":"x-{{token}}"}`, nil},
		{"secret-named", `{"api_token":"t0ps3cret","password":"pw","idempotency_key":"k-123456"}`, "", nil,
			`{"api_token":"[REDACTED]","idempotency_key":"k-123456","password":"[REDACTED]"}`, []string{"t0ps3cret"}},
		{"known secret nested", `{"note":{"text":"use hdr-value-1 now"}}`, "", []string{"hdr-value-1"}, `{"note":{"text":"use [REDACTED] now"}}`, nil},
		{"key-shaped", `{"k":"sk-ant-api03-abcdef123456"}`, "", nil, `{"k":"[REDACTED]"}`, nil},
		{"html kept", `{"q":"a<b>&c"}`, "", nil, `{"q":"a<b>&c"}`, nil},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, found, err := Arguments(json.RawMessage(tt.args), tt.token, tt.secrets)
			if err != nil {
				t.Fatal(err)
			}
			if string(got) != tt.want {
				t.Errorf("Arguments = %s, want %s", got, tt.want)
			}
			if diff := cmp.Diff(tt.wantFound, found); diff != "" {
				t.Errorf("secrets found (-want +got):\n%s", diff)
			}
		})
	}
}

// TestNewCallScrubsAnswer: a secret found in the arguments is scrubbed
// from the answer too, and the answer's token is written as {{token}}, then
// back as the replaying run's.
func TestNewCallScrubsAnswer(t *testing.T) {
	res := &mcp.CallToolResult{
		Content:           []mcp.Content{&mcp.TextContent{Text: "logged in with t0ps3cret as rcabcdefghij"}},
		StructuredContent: map[string]any{"session": "t0ps3cret"},
	}
	e, err := NewCall("login", json.RawMessage(`{"password":"t0ps3cret"}`), "rcabcdefghij", nil, res, nil)
	if err != nil {
		t.Fatal(err)
	}
	b, err := json.Marshal(e)
	if err != nil {
		t.Fatal(err)
	}
	if strings.Contains(string(b), "t0ps3cret") || strings.Contains(string(b), "rcabcdefghij\"") && !strings.Contains(string(b), `"token":"rcabcdefghij"`) {
		t.Errorf("entry keeps a secret or the token: %s", b)
	}
	got, _, err := e.ToolsCall.Answer("rczyxwvutsrq")
	if err != nil {
		t.Fatal(err)
	}
	if want := "logged in with [REDACTED] as rczyxwvutsrq"; got.Content[0].(*mcp.TextContent).Text != want {
		t.Errorf("answer %q, want %q", got.Content[0].(*mcp.TextContent).Text, want)
	}
	if res.Content[0].(*mcp.TextContent).Text != "logged in with t0ps3cret as rcabcdefghij" {
		t.Errorf("NewCall changed the server's result: %q", res.Content[0].(*mcp.TextContent).Text)
	}
}

// TestRecordedHTML: a tool answer of HTML is recorded with its <, > and &
// as they are, so its line is about as long as the answer (the SDK's
// content types escape them, six bytes each), and reads back the same.
func TestRecordedHTML(t *testing.T) {
	text := strings.Repeat("<p>a & b</p>", 10_000)
	res := &mcp.CallToolResult{Content: []mcp.Content{&mcp.TextContent{Text: text}}}
	path := filepath.Join(t.TempDir(), "c.jsonl")
	rec, err := Create(path)
	if err != nil {
		t.Fatal(err)
	}
	entries := []Entry{{ToolsList: &ToolsList{Tools: []*mcp.Tool{{Name: "page", InputSchema: map[string]any{"type": "object"}}}}}}
	call, err := NewCall("page", json.RawMessage(`{}`), "", nil, res, nil)
	if err != nil {
		t.Fatal(err)
	}
	for _, e := range append(entries, call) {
		if _, err := rec.Add(e); err != nil {
			t.Fatal(err)
		}
	}
	if err := rec.Close(); err != nil {
		t.Fatal(err)
	}
	st, err := os.Stat(path)
	if err != nil {
		t.Fatal(err)
	}
	if st.Size() > int64(len(text))+500 {
		t.Errorf("cassette of a %d-byte answer has %d bytes, want about as many", len(text), st.Size())
	}
	c, err := Load(path)
	if err != nil {
		t.Fatal(err)
	}
	got, _, err := c.Calls[0].Answer("")
	if err != nil {
		t.Fatal(err)
	}
	if got.Content[0].(*mcp.TextContent).Text != text {
		t.Error("the recorded answer reads back changed")
	}
}
