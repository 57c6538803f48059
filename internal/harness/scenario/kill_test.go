package scenario

import (
	"strings"
	"testing"
)

// TestKillPointErrors: a kill point the harness cannot see is refused with
// the one to use; the others parse.
func TestKillPointErrors(t *testing.T) {
	tests := []struct{ after, want string }{
		{"execute", ""},
		{"follow_up", ""},
		{"stream", ""},
		{"delay, delay: 1s", ""},
		{"answer", `kill.after "answer": not a kill point, the harness sees no target read an answer; use follow_up`},
		{"exit", `kill.after "exit": want one of execute, follow_up, stream, delay`},
	}
	for _, tt := range tests {
		t.Run(tt.after, func(t *testing.T) {
			src := "name: k\nrequest: {endpoint: chat}\nfaults:\n  target: [{kill: {after: " + tt.after + "}}]\nexpect: {writes: 1}\n"
			_, errs := Parse("k.yaml", []byte(src))
			switch {
			case tt.want == "" && len(errs) > 0:
				t.Fatal(errs)
			case tt.want != "" && (len(errs) == 0 || !strings.Contains(errs.Error(), tt.want)):
				t.Fatalf("errors %v, want one with %q", errs, tt.want)
			}
		})
	}
}
