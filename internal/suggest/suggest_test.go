package suggest

import (
	"testing"

	"github.com/google/go-cmp/cmp"
)

func TestSimilar(t *testing.T) {
	names := []string{"no-replay-after-dispatch", "no-replay-ambiguous-mcp", "no-splice", "bounded-attempts"}
	tests := []struct {
		name string
		in   string
		want []string
	}{
		{"a typo", "no-replay-after-dispach", []string{"no-replay-after-dispatch"}},
		{"two edits and another case", "No-Splcie", []string{"no-splice"}},
		{"a part of two names", "no-replay", []string{"no-replay-after-dispatch", "no-replay-ambiguous-mcp"}},
		{"a part of one", "attempts", []string{"bounded-attempts"}},
		{"too short to be a part", "no", nil},
		{"nothing like it", "retry-everything", nil},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if diff := cmp.Diff(tt.want, Similar(tt.in, names)); diff != "" {
				t.Errorf("Similar(%q) (-want +got):\n%s", tt.in, diff)
			}
		})
	}
}
