package targetfile

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

func TestReadVersion(t *testing.T) {
	dir := t.TempDir()
	lock := `{"packages": {"": {}, "node_modules/@openai/codex": {"version": "0.171.0"}}}`
	if err := os.MkdirAll(filepath.Join(dir, "clients"), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, "clients", "package-lock.json"), []byte(lock), 0o644); err != nil {
		t.Fatal(err)
	}
	const head = "kind: client\ncommand: [agent]\n"
	tests := []struct {
		name    string
		version string
		want    string
		wantErr string
	}{
		{"none", "", "", ""},
		{"package in the default lock", `version: {package: "@openai/codex"}`, "0.171.0", ""},
		{"package in a lock named", `version: {package: "@openai/codex", lock: clients/package-lock.json}`, "0.171.0", ""},
		{"command", `version: {command: [sh, -c, "printf '2.0.1 (build 7)\\nmore\\n'"]}`, "2.0.1 (build 7)", ""},
		{"package not installed", `version: {package: "@google/gemini-cli"}`, "", "installs no package @google/gemini-cli"},
		{"command fails", `version: {command: ["false"]}`, "", "version: false: exit status 1"},
		{"both", `version: {package: x, command: [y]}`, "", "want package (read from its package lock) or command"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			path := filepath.Join(dir, strings.ReplaceAll(tt.name, " ", "-")+".yaml")
			if err := os.WriteFile(path, []byte(head+tt.version+"\n"), 0o644); err != nil {
				t.Fatal(err)
			}
			// Load refuses what the file says wrong; what it points at
			// (a lock, a command) is ReadVersion's to find out.
			_, err := Load(path, Options{})
			if refused := strings.HasPrefix(tt.name, "both"); (err != nil) != refused || refused && !strings.Contains(err.Error(), tt.wantErr) {
				t.Fatalf("Load: %v, want refused %v", err, refused)
			}
			got, err := ReadVersion(context.Background(), path, Options{})
			switch {
			case tt.wantErr == "" && err != nil:
				t.Fatalf("ReadVersion: %v", err)
			case tt.wantErr != "" && (err == nil || !strings.Contains(err.Error(), tt.wantErr)):
				t.Fatalf("ReadVersion: %v, want an error with %q", err, tt.wantErr)
			case got != tt.want:
				t.Errorf("ReadVersion = %q, want %q", got, tt.want)
			}
		})
	}
}

// TestReadVariantOf: variant_of names another target file, relative to
// the file; Load refuses one that is not a file, or is the file itself,
// with where it is written.
func TestReadVariantOf(t *testing.T) {
	dir := t.TempDir()
	const head = "kind: client\ncommand: [agent]\n"
	if err := os.WriteFile(filepath.Join(dir, "base.yaml"), []byte(head), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.MkdirAll(filepath.Join(dir, "sub"), 0o755); err != nil {
		t.Fatal(err)
	}
	tests := []struct {
		name, file, variantOf string
		want, wantErr         string
	}{
		{"none", "none.yaml", "", "", ""},
		{"a sibling", "stdio.yaml", "variant_of: base.yaml", filepath.Join(dir, "base.yaml"), ""},
		{"relative to the file", "sub/resume.yaml", "variant_of: ../base.yaml", filepath.Join(dir, "base.yaml"), ""},
		{"missing", "missing.yaml", "variant_of: gone.yaml", "", `missing.yaml:3:13: variant_of "gone.yaml": want a target file, relative to this one`},
		{"a directory", "dir.yaml", "variant_of: sub", "", `variant_of "sub": want a target file`},
		{"itself", "self.yaml", "variant_of: self.yaml", "", `variant_of "self.yaml" names this file itself`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			path := filepath.Join(dir, tt.file)
			if err := os.WriteFile(path, []byte(head+tt.variantOf+"\n"), 0o644); err != nil {
				t.Fatal(err)
			}
			_, loadErr := Load(path, Options{})
			got, err := ReadVariantOf(path, Options{})
			for what, err := range map[string]error{"Load": loadErr, "ReadVariantOf": err} {
				if (err != nil) != (tt.wantErr != "") || err != nil && !strings.Contains(err.Error(), tt.wantErr) {
					t.Errorf("%s: %v, want an error with %q", what, err, tt.wantErr)
				}
			}
			if got != tt.want {
				t.Errorf("ReadVariantOf = %q, want %q", got, tt.want)
			}
		})
	}
}
