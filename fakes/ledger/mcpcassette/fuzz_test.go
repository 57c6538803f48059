package mcpcassette

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/replaycheck/replaycheck/internal/jsonl"
)

// FuzzLoad: any file either loads or is an error naming the file; nothing
// panics, and a file that loads can be written and loaded again to the same
// tools and calls.
func FuzzLoad(f *testing.F) {
	f.Add([]byte(toolsLine + "\n" + callLine + "\n"))
	f.Add([]byte(`{"initialize":{"protocolVersion":"2025-06-18","serverInfo":{"name":"s","version":"1"},"capabilities":{}}}` + "\n" + toolsLine))
	f.Add([]byte(`{"tools/call":{"name":"x","arguments":{},"error":{"code":-32602,"message":"bad"}}}` + "\n{}\n"))
	f.Add([]byte("\n\n"))
	dir := f.TempDir()
	f.Fuzz(func(t *testing.T, src []byte) {
		path := filepath.Join(dir, "c.jsonl")
		if err := os.WriteFile(path, src, 0o644); err != nil {
			t.Fatal(err)
		}
		c, err := Load(path)
		if err != nil {
			if !strings.Contains(err.Error(), "c.jsonl") {
				t.Fatalf("error does not name the file: %v", err)
			}
			return
		}
		var b strings.Builder
		enc := jsonl.Encoder(&b)
		entries := []Entry{{ToolsList: &ToolsList{Tools: c.Tools}}}
		if c.Initialize != nil {
			entries = append(entries, Entry{Initialize: c.Initialize})
		}
		for i := range c.Calls {
			entries = append(entries, Entry{ToolsCall: &c.Calls[i]})
		}
		for i := range entries {
			if err := enc.Encode(&entries[i]); err != nil {
				t.Fatalf("writing loaded entries: %v", err)
			}
		}
		if err := os.WriteFile(path, []byte(b.String()), 0o644); err != nil {
			t.Fatal(err)
		}
		again, err := Load(path)
		if err != nil || len(again.Tools) != len(c.Tools) || len(again.Calls) != len(c.Calls) {
			t.Fatalf("round trip: %d tools and %d calls, then %+v (%v)\n%s", len(c.Tools), len(c.Calls), again, err, b.String())
		}
	})
}

// FuzzArguments: any JSON object keys to a JSON object that keys to itself,
// and a known secret survives in none of its strings (keys included).
func FuzzArguments(f *testing.F) {
	f.Add(`{"name":"a"}`, "hdr-secret")
	f.Add(`{"token":"abcd","n":[1,2.50]}`, "abcd")
	f.Fuzz(func(t *testing.T, args, secret string) {
		if len(secret) < 4 || strings.Contains(Redacted, secret) {
			return
		}
		var v map[string]any
		if json.Unmarshal([]byte(args), &v) != nil || v == nil {
			return
		}
		key, _, err := Arguments(json.RawMessage(args), "", []string{secret})
		if err != nil {
			t.Fatalf("Arguments(%s): %v", args, err)
		}
		if !json.Valid(key) || key[0] != '{' {
			t.Fatalf("Arguments(%s) = %s, not an object", args, key)
		}
		v2, err := decode(key)
		if err != nil {
			t.Fatal(err)
		}
		rewrite(v2, func(s string) string {
			if strings.Contains(s, secret) {
				t.Fatalf("secret %q survived in %s", secret, key)
			}
			return s
		})
		again, _, err := Arguments(key, "", []string{secret})
		if err != nil || string(again) != string(key) {
			t.Fatalf("keying %s again gave %s (%v)", key, again, err)
		}
	})
}
