package main

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// validateCassetteCase is a scenario's cassette and what validate says of
// it.
type validateCassetteCase struct {
	name     string
	cassette string // session.jsonl's content; "" for none
	wantCode int
	want     []string // in stderr
}

// checkValidateCassettes runs validate on the scenario src, which names
// the cassette session.jsonl, once per case.
func checkValidateCassettes(t *testing.T, src string, tests []validateCassetteCase) {
	t.Helper()
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			dir := t.TempDir()
			f := filepath.Join(dir, "s.yaml")
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

// TestValidateCassette checks that validate reads a scenario's model
// cassette: one that is missing or unreadable is an error at the cassette's
// file:line:col (exit 2), and a readable one is fine.
func TestValidateCassette(t *testing.T) {
	const entry = `{"request":{"dialect":"chat","kind":"initial","stream":false,"messages":["user:0"]},"answer":{"status":200,"headers_ms":0,"body":"{}"}}` + "\n"
	checkValidateCassettes(t, "name: s\nrequest: {endpoint: chat}\nmodel: {cassette: session.jsonl}\nexpect: {writes: 1}\n", []validateCassetteCase{
		{"missing", "", exitBadUsage, []string{
			"s.yaml:3:19: model: cassette ", "session.jsonl: no such file or directory\n",
			">    3 | model: {cassette: session.jsonl}\n"}},
		{"unreadable line", entry + "{not json\n", exitBadUsage, []string{"s.yaml:3:19: model: cassette ", "session.jsonl:2: "}},
		{"empty", "\n", exitBadUsage, []string{"s.yaml:3:19: model: cassette ", "session.jsonl: no recorded exchange in it"}},
		{"readable", entry, exitOK, nil},
	})
}

// TestValidateMCPCassette checks that validate reads a scenario's MCP
// cassette: one that is missing, has a line that is not an entry (named at
// the cassette's file:line:col) or lists no tools is an error at
// mcp.cassette (exit 2), and a readable one is fine.
func TestValidateMCPCassette(t *testing.T) {
	const tools = `{"tools/list":{"tools":[{"name":"create_item","inputSchema":{"type":"object"}}]}}` + "\n"
	src := "name: s\nrequest: {endpoint: chat}\nmcp: {cassette: session.jsonl}\n" +
		"model: [{call: create_item, arguments: {name: \"{{entry}}\"}}, {say: done}]\nexpect: {writes: 1}\n"
	checkValidateCassettes(t, src, []validateCassetteCase{
		{"missing", "", exitBadUsage, []string{
			"s.yaml:3:17: mcp cassette ", "session.jsonl: no such file or directory\n",
			">    3 | mcp: {cassette: session.jsonl}\n"}},
		{"unknown field", tools + `{"tools/call":{"name":"create_item","args":{},"result":{"content":[]}}}` + "\n", exitBadUsage,
			[]string{"s.yaml:3:17: mcp cassette ", `session.jsonl:2:37: json: unknown field "args"`}},
		{"no tools", "\n", exitBadUsage, []string{"s.yaml:3:17: mcp cassette ", "session.jsonl: no tools/list recorded in it"}},
		{"readable", tools, exitOK, nil},
	})
}
