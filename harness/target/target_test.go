package target

import "testing"

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
