package main

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestValidateMCPCassette checks that validate reads a scenario's MCP
// cassette: one that is missing, has a line that is not an entry (named at
// the cassette's file:line:col) or lists no tools is an error at
// mcp.cassette (exit 2), and a readable one is fine.
func TestValidateMCPCassette(t *testing.T) {
	const tools = `{"tools/list":{"tools":[{"name":"create_item","inputSchema":{"type":"object"}}]}}` + "\n"
	tests := []struct {
		name     string
		cassette string // the cassette file's content; "" for none
		wantCode int
		want     []string
	}{
		{"missing", "", exitBadUsage, []string{
			"s.yaml:3:17: mcp cassette ", "session.jsonl: no such file or directory\n",
			">    3 | mcp: {cassette: session.jsonl}\n"}},
		{"unknown field", tools + `{"tools/call":{"name":"create_item","args":{},"result":{"content":[]}}}` + "\n", exitBadUsage,
			[]string{"s.yaml:3:17: mcp cassette ", `session.jsonl:2:37: json: unknown field "args"`}},
		{"no tools", "\n", exitBadUsage, []string{"s.yaml:3:17: mcp cassette ", "session.jsonl: no tools/list recorded in it"}},
		{"readable", tools, exitOK, nil},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			dir := t.TempDir()
			f := filepath.Join(dir, "s.yaml")
			src := "name: s\nrequest: {endpoint: chat}\nmcp: {cassette: session.jsonl}\nmodel: [{call: create_item, arguments: {name: \"{{entry}}\"}}, {say: done}]\nexpect: {writes: 1}\n"
			if err := os.WriteFile(f, []byte(src), 0o644); err != nil {
				t.Fatal(err)
			}
			if tt.cassette != "" {
				if err := os.WriteFile(filepath.Join(dir, "session.jsonl"), []byte(tt.cassette), 0o644); err != nil {
					t.Fatal(err)
				}
			}
			code, out, errOut := execute(t, "validate", f)
			if code != tt.wantCode {
				t.Fatalf("exit %d, want %d\nstdout: %s\nstderr: %s", code, tt.wantCode, out, errOut)
			}
			for _, w := range tt.want {
				if !strings.Contains(errOut, w) {
					t.Errorf("stderr lacks %q:\n%s", w, errOut)
				}
			}
		})
	}
}
