package main

import (
	"bytes"
	"context"
	"errors"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/openai/openai-go/v3"
	"github.com/openai/openai-go/v3/option"
	"github.com/openai/openai-go/v3/shared"

	"github.com/replaycheck/replaycheck/fakes/upstream"
)

// cliParams is a chat request with the commit_write tool.
func cliParams(prompt string) openai.ChatCompletionNewParams {
	return openai.ChatCompletionNewParams{
		Model:    "gpt-test",
		Messages: []openai.ChatCompletionMessageParamUnion{openai.UserMessage(prompt)},
		Tools: []openai.ChatCompletionToolUnionParam{openai.ChatCompletionFunctionTool(shared.FunctionDefinitionParam{
			Name: "commit_write", Parameters: shared.FunctionParameters{"type": "object"},
		})},
	}
}

// cliChat sends a plain and a streamed chat request through serve and
// returns the plain answer's tool call and the streamed error, if any.
func cliChat(t *testing.T, url, key, prompt string) (string, error) {
	t.Helper()
	oc := openai.NewClient(option.WithBaseURL(url), option.WithAPIKey(key), option.WithMaxRetries(0),
		option.WithQuery("key", key+"-query"))
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	r, err := oc.Chat.Completions.New(ctx, cliParams(prompt))
	if err != nil {
		t.Fatalf("chat: %v", err)
	}
	call := r.Choices[0].Message.ToolCalls[0]
	stream := oc.Chat.Completions.NewStreaming(ctx, cliParams(prompt))
	for stream.Next() {
	}
	return call.Function.Name + " " + call.Function.Arguments, stream.Err()
}

// serve --relay --record writes a session cassette without the key; serve
// --cassette replays it with the provider gone, an armed drop cutting the
// replayed stream, and a request the cassette lacks answered 404 naming the
// closest entry.
func TestServeRecordReplay(t *testing.T) {
	const key = "sk-cli-secret-0123456789"
	const prompt = "Call the commit_write tool exactly once with entry alpha-cli, then reply done."
	inner, err := upstream.New(upstream.Config{})
	if err != nil {
		t.Fatal(err)
	}
	provider := httptest.NewServer(inner)
	t.Cleanup(provider.Close)
	dir := filepath.Join(t.TempDir(), "cassettes")

	upURL, _, out, stop := startServe(t, &serveOptions{Relay: provider.URL, RecordDir: dir})
	recorded, err := cliChat(t, upURL, key, prompt)
	if err != nil {
		t.Fatalf("relayed stream: %v", err)
	}
	if err := stop(); err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(out.String(), "recording to: "+dir+string(os.PathSeparator)+"session-") {
		t.Errorf("banner does not name the cassette:\n%s", out)
	}
	files, _ := filepath.Glob(filepath.Join(dir, "session-*.jsonl"))
	if len(files) != 1 {
		t.Fatalf("cassettes %v, want one", files)
	}
	raw, err := os.ReadFile(files[0])
	if err != nil {
		t.Fatal(err)
	}
	if n := bytes.Count(raw, []byte("\n")); n != 2 {
		t.Errorf("cassette has %d lines, want 2", n)
	}
	if bytes.Contains(raw, []byte(key)) {
		t.Errorf("the cassette holds the key")
	}
	provider.Close() // replay is offline

	upURL, _, out, stop = startServe(t, &serveOptions{CassettePath: dir,
		UpstreamFaults: []string{"{on: initial, stream: true, drop: {after: tool_call}}"}})
	replayed, err := cliChat(t, upURL, key, prompt)
	diff := func(what string, want, got any) {
		t.Helper()
		if want != got {
			t.Errorf("%s: want %v, got %v", what, want, got)
		}
	}
	diff("replayed call", recorded, replayed)
	if err == nil {
		t.Errorf("the replayed stream ended cleanly; want the drop")
	}
	oc := openai.NewClient(option.WithBaseURL(upURL), option.WithAPIKey(key), option.WithMaxRetries(0))
	_, err = oc.Chat.Completions.New(context.Background(), cliParams("another prompt"))
	var oe *openai.Error
	if !errors.As(err, &oe) || oe.StatusCode != http.StatusNotFound || !strings.Contains(oe.Message, "closest is "+files[0]+":1") {
		t.Errorf("miss: err = %v, want a 404 naming %s:1", err, files[0])
	}
	if err := stop(); err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{"(replay)", "cassette:     " + dir + " (replay; a miss: error)", "1 initial dropped_stream", "1 initial cassette_miss"} {
		if !strings.Contains(out.String(), want) {
			t.Errorf("output lacks %q:\n%s", want, out)
		}
	}
}

// serve --relay --record relays a plain answer over the recording limit
// whole and says at the end, under the table, how many answers it could not
// record and the limit.
func TestServeRecordTooLarge(t *testing.T) {
	big := `{"id":"chatcmpl-big","object":"chat.completion","model":"gpt-test","choices":[{"index":0,"message":{"role":"assistant","content":"` +
		strings.Repeat("x", upstream.MaxRecordedBody) + `"},"finish_reason":"stop"}]}`
	provider := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "application/json")
		_, _ = io.WriteString(w, big)
	}))
	t.Cleanup(provider.Close)
	dir := t.TempDir()
	upURL, _, out, stop := startServe(t, &serveOptions{Relay: provider.URL, RecordDir: dir})
	oc := openai.NewClient(option.WithBaseURL(upURL), option.WithAPIKey("sk-test"), option.WithMaxRetries(0))
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	r, err := oc.Chat.Completions.New(ctx, cliParams("a prompt with a big answer"))
	if err != nil {
		t.Fatalf("chat: %v", err)
	}
	if got := len(r.Choices[0].Message.Content); got != upstream.MaxRecordedBody {
		t.Errorf("relayed answer's content has %d bytes, want %d", got, upstream.MaxRecordedBody)
	}
	if err := stop(); err != nil {
		t.Fatal(err)
	}
	files, _ := filepath.Glob(filepath.Join(dir, "session-*.jsonl"))
	if len(files) != 1 {
		t.Fatalf("cassettes %v, want one", files)
	}
	want := "NOT RECORDED: 1 model answer relayed but not recorded in " + files[0] + ", their body over the recording limit of 32 MiB; a replay of the cassette misses them\n"
	final := out.String()[strings.LastIndex(out.String(), "TOTAL"):] // under the last table
	if !strings.Contains(final, want) {
		t.Errorf("the last table is not followed by %q:\n%s", want, lastLines([]byte(out.String()), 5))
	}
}

func TestServeCassetteBadFlags(t *testing.T) {
	dir := t.TempDir()
	bad := filepath.Join(dir, "bad.jsonl")
	if err := os.WriteFile(bad, []byte(`{"request":{"dialect":"chat"},"answer":{"status":200}}`+"\nnot json\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	tests := []struct {
		name    string
		args    []string
		wantErr string
	}{
		{"record without relay", []string{"--record", dir}, "--record needs --relay"},
		{"record into a file", []string{"--relay", "http://127.0.0.1:1", "--record", bad}, "not a directory"},
		{"unknown miss", []string{"--cassette", dir, "--miss", "ignore"}, `--miss "ignore"`},
		{"miss relay without relay", []string{"--cassette", dir, "--miss", "relay"}, "--miss relay needs --cassette and --relay"},
		{"cassette and relay", []string{"--cassette", dir, "--relay", "http://127.0.0.1:1"}, "add --miss relay"},
		{"timing without cassette", []string{"--replay-timing"}, "--replay-timing needs --cassette"},
		{"missing cassette", []string{"--cassette", filepath.Join(dir, "nope")}, "--cassette: cassette:"},
		{"bad cassette line", []string{"--cassette", bad}, bad + ":2:"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var out, errOut bytes.Buffer
			root := newRootCmd(strings.NewReader(""), &out, &errOut)
			root.SetArgs(append([]string{"serve", "--upstream-addr", "127.0.0.1:0", "--mcp-addr", "127.0.0.1:0"}, tt.args...))
			ctx, cancel := context.WithCancel(context.Background())
			cancel()
			err := root.ExecuteContext(ctx)
			if err == nil || !strings.Contains(err.Error(), tt.wantErr) {
				t.Fatalf("error = %v, want one containing %q", err, tt.wantErr)
			}
			if code := exitCode(err); code != exitBadUsage {
				t.Errorf("exit code %d, want %d (error %v)", code, exitBadUsage, err)
			}
		})
	}
}
