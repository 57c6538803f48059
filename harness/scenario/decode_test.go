package scenario

import (
	"errors"
	"strings"
	"testing"
)

func TestDecodeStrict(t *testing.T) {
	type item struct {
		Name  string `yaml:"name"`
		Count int    `yaml:"count"`
	}
	tests := []struct {
		name    string
		src     string
		want    int // items decoded
		wantErr string
	}{
		{"list", "- {name: a, count: 1}\n- {name: b, count: 2}\n", 2, ""},
		{"empty", "", 0, ""},
		{"comments only", "# nothing yet\n", 0, ""},
		{"unknown field", "- {name: a, count: 1}\n- {name: b, cuont: 2}\n", 0, "f.yaml:2:13: unknown field \"cuont\""},
		{"wrong type", "- name: a\n  count: three\n", 0, "f.yaml:2:10: count: want a whole number, got \"three\""},
		{"two documents", "- {name: a}\n---\n- {name: b}\n", 0, "f.yaml:3:1: want one YAML document, got 2"},
		{"syntax", "- {name: a\n", 0, "f.yaml:"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var got []item
			err := DecodeStrict("f.yaml", []byte(tt.src), &got)
			if tt.wantErr != "" {
				var e *Error
				if !errors.As(err, &e) || !strings.HasPrefix(err.Error(), tt.wantErr) {
					t.Fatalf("error %v, want an *Error starting %q", err, tt.wantErr)
				}
				return
			}
			if err != nil || len(got) != tt.want {
				t.Fatalf("got %d items, %v; want %d", len(got), err, tt.want)
			}
		})
	}
}
