package main

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestValidateCassette checks that validate reads a scenario's model
// cassette: one that is missing or unreadable is an error at the cassette's
// file:line:col (exit 2), and a readable one is fine.
func TestValidateCassette(t *testing.T) {
	const entry = `{"request":{"dialect":"chat","kind":"initial","stream":false,"messages":["user:0"]},"answer":{"status":200,"headers_ms":0,"body":"{}"}}` + "\n"
	tests := []struct {
		name     string
		cassette string // the cassette file's content; "" for none
		wantCode int
		want     []string
	}{
		{"missing", "", exitBadUsage, []string{
			"s.yaml:3:19: model: cassette ", "session.jsonl: no such file or directory\n",
			">    3 | model: {cassette: session.jsonl}\n"}},
		{"unreadable line", entry + "{not json\n", exitBadUsage, []string{"s.yaml:3:19: model: cassette ", "session.jsonl:2: "}},
		{"empty", "\n", exitBadUsage, []string{"s.yaml:3:19: model: cassette ", "session.jsonl: no recorded exchange in it"}},
		{"readable", entry, exitOK, nil},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			dir := t.TempDir()
			f := filepath.Join(dir, "s.yaml")
			src := "name: s\nrequest: {endpoint: chat}\nmodel: {cassette: session.jsonl}\nexpect: {writes: 1}\n"
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
