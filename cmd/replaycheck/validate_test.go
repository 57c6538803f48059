package main

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestValidateWarnings checks that validate warns, at file:line:col and
// without failing, about request fields a client scenario sets that client
// targets ignore, and says nothing of other scenarios.
func TestValidateWarnings(t *testing.T) {
	tests := []struct {
		name       string
		src        string
		wantOut    string
		wantErrOut []string
	}{
		{
			name:    "client scenario with endpoint and stream",
			src:     "name: c\nrequest: {endpoint: chat, stream: true}\nexpect: {writes: 1, client: {exit: zero}}\n",
			wantOut: "ok: 1 scenario in 1 file (2 warnings)\n",
			wantErrOut: []string{
				"c.yaml:2:11: warning: request.endpoint is ignored on client targets, where this scenario (expect.client) runs: a client calls the endpoints it calls\n",
				"c.yaml:2:27: warning: request.stream is ignored on client targets",
				">    2 | request: {endpoint: chat, stream: true}\n",
			},
		},
		{
			name:       "client scenario with a prompt and a body",
			src:        "- name: c\n  requests:\n    - prompt: hi\n      body: {x: 1}\n  expect: {client: {}}\n",
			wantOut:    "ok: 1 scenario in 1 file (2 warnings)\n",
			wantErrOut: []string{"c.yaml:3:7: warning: requests[0].prompt is ignored on client targets", "$REPLAYCHECK_PROMPT", "c.yaml:4:7: warning: requests[0].body"},
		},
		{
			name:    "the same request in a scenario for every target",
			src:     "name: p\nrequest: {endpoint: chat, stream: true}\nexpect: {writes: 1}\n",
			wantOut: "ok: 1 scenario in 1 file\n",
		},
		{
			name:    "client scenario without request",
			src:     "name: c\nexpect: {writes: {max: 1}, client: {}}\n",
			wantOut: "ok: 1 scenario in 1 file\n",
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			f := filepath.Join(t.TempDir(), "c.yaml")
			if err := os.WriteFile(f, []byte(tt.src), 0o644); err != nil {
				t.Fatal(err)
			}
			code, out, errOut := execute(t, "validate", f)
			if code != exitOK || out != tt.wantOut {
				t.Fatalf("exit %d, stdout %q; want 0, %q\n%s", code, out, tt.wantOut, errOut)
			}
			for _, w := range tt.wantErrOut {
				if !strings.Contains(errOut, w) {
					t.Errorf("stderr lacks %q:\n%s", w, errOut)
				}
			}
			if len(tt.wantErrOut) == 0 && errOut != "" {
				t.Errorf("stderr %q, want nothing", errOut)
			}
		})
	}
}
