package envref

import (
	"testing"

	"github.com/google/go-cmp/cmp"
)

func TestExpand(t *testing.T) {
	env := map[string]string{"DIR": "/tmp/x", "EMPTY": ""}
	tests := []struct {
		name     string
		in       string
		want     string
		wantRefs []string
		wantErr  string
	}{
		{"a set variable", "${DIR}/memory-{{token}}.jsonl", "/tmp/x/memory-{{token}}.jsonl", []string{"DIR"}, ""},
		{"a default for an unset one", "${NOPE:-/var/tmp}/m", "/var/tmp/m", []string{"NOPE"}, ""},
		{"a default for an empty one", "${EMPTY:-d}", "d", []string{"EMPTY"}, ""},
		{"the escape of a literal ${", "$${DIR}", "${DIR}", nil, ""},
		{"plain text", "node server.js", "node server.js", nil, ""},
		{"unset without a default", "${NOPE}/m", "", nil, "environment variable NOPE is not set (use ${NOPE:-default} for a default)"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, refs, err := Expand(tt.in, func(k string) string { return env[k] })
			if tt.wantErr != "" {
				if err == nil || err.Error() != tt.wantErr {
					t.Fatalf("error %v, want %q", err, tt.wantErr)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if d := cmp.Diff(tt.want, got); d != "" {
				t.Errorf("(-want +got):\n%s", d)
			}
			if d := cmp.Diff(tt.wantRefs, refs); d != "" {
				t.Errorf("refs (-want +got):\n%s", d)
			}
		})
	}
}
