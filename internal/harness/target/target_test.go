package target

import (
	"strings"
	"testing"
)

func TestParseTarget(t *testing.T) {
	tests := []struct {
		in      string
		want    string
		wantErr bool
	}{
		{"builtin:guarded", "builtin:guarded", false},
		{"builtin:", "builtin:guarded", false},
		{"builtin:naive", "builtin:naive", false},
		{"builtin:stream-splice,fresh-key-per-attempt", "builtin:stream-splice,fresh-key-per-attempt", false},
		{"builtin:no-such-bug", "", true},
		{"proxy:http://x", "", true},
	}
	for _, tt := range tests {
		t.Run(tt.in, func(t *testing.T) {
			got, err := ParseTarget(tt.in)
			if (err != nil) != tt.wantErr {
				t.Fatalf("err = %v, wantErr %v", err, tt.wantErr)
			}
			if err == nil && got.Name() != tt.want {
				t.Errorf("Name = %q, want %q", got.Name(), tt.want)
			}
		})
	}
}

// TestParseBuiltinUnknown: an unknown builtin name is named with the modes
// guarded and naive, the bugs, and the closest valid spelling of the
// target; a mode does not combine with bugs.
func TestParseBuiltinUnknown(t *testing.T) {
	tests := []struct {
		in   string
		want []string // parts of the error
	}{
		{"builtin:naieve", []string{`unknown builtin target name "naieve" (did you mean builtin:naive?)`, "want guarded (the default: the fixed gateway), naive (every bug switched on), or gateway bugs", "of replay-after-dispatch, stream-splice,"}},
		{"builtin:Guarded", []string{`"Guarded" (did you mean builtin:guarded?)`}},
		{"builtin:replay-after-dispatch,stream-splce", []string{`"stream-splce" (did you mean builtin:replay-after-dispatch,stream-splice?)`}},
		{"builtin:naiv,stream-splice", []string{`unknown builtin target name "naiv": want guarded`}},
		{"builtin:xyz", []string{`unknown builtin target name "xyz": want guarded`}},
		{"builtin:guarded,stream-splice", []string{"builtin target guarded stands alone: guarded and naive are modes, not bugs to switch on with others"}},
	}
	for _, tt := range tests {
		t.Run(tt.in, func(t *testing.T) {
			_, err := ParseTarget(tt.in)
			if err == nil {
				t.Fatal("no error")
			}
			for _, w := range tt.want {
				if !strings.Contains(err.Error(), w) {
					t.Errorf("error %q lacks %q", err, w)
				}
			}
		})
	}
}
