package wire

import (
	"strings"
	"testing"
)

func TestCallArgs(t *testing.T) {
	long := `{"text":"` + strings.Repeat("x", MaxArgs) + `"}`
	tests := []struct {
		name, raw, want, wantKey string
	}{
		{"none", ``, `{}`, ""},
		{"null", `null`, `{}`, ""},
		{"keys sorted, spaces dropped", `{ "b": 1, "a": {"d": [1, 2], "c": "x"} }`, `{"a":{"c":"x","d":[1,2]},"b":1}`, ""},
		{"numbers keep their text", `{"n": 1.50}`, `{"n":1.50}`, ""},
		{"the key set aside", `{"entry":"a","idempotency_key":"k1"}`, `{"entry":"a"}`, "k1"},
		{"a key that is no string stays", `{"entry":"a","idempotency_key":7}`, `{"entry":"a","idempotency_key":7}`, ""},
		{"not an object", `[1, 2]`, `[1,2]`, ""},
		{"not JSON", `{oops`, `{oops`, ""},
		{"long: its digest", long, "sha256:", ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, key := CallArgs([]byte(tt.raw))
			if !strings.HasPrefix(got, tt.want) || tt.want != "sha256:" && got != tt.want || key != tt.wantKey {
				t.Errorf("CallArgs(%s) = %q, %q; want %q, %q", tt.raw, got, key, tt.want, tt.wantKey)
			}
		})
	}
	a, _ := CallArgs([]byte(long))
	b, _ := CallArgs([]byte(`{ "text" : "` + strings.Repeat("x", MaxArgs) + `" }`))
	if a != b || len(a) != len("sha256:")+64 {
		t.Errorf("long arguments render %q and %q: want one digest", a, b)
	}
}
