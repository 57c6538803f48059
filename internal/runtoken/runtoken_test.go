package runtoken

import "testing"

func TestDeriveIsValidAndStable(t *testing.T) {
	a := Derive("seed", "scenario one", "builtin:guarded")
	if !Valid(a) {
		t.Fatalf("Derive gave invalid token %q", a)
	}
	if b := Derive("seed", "scenario one", "builtin:guarded"); a != b {
		t.Fatalf("Derive not stable: %q vs %q", a, b)
	}
	if c := Derive("seed", "scenario two", "builtin:guarded"); a == c {
		t.Fatalf("Derive collided for different parts: %q", a)
	}
	if Derive("ab", "c") == Derive("a", "bc") {
		t.Fatal("Derive does not separate parts")
	}
}

func TestFind(t *testing.T) {
	tests := []struct {
		name, in, want string
	}{
		{"entry", `{"entry":"alpha-rc0123456789"}`, "rc0123456789"},
		{"id", `"id":"call_rc0123456789_0"`, "rc0123456789"},
		{"word containing rc", "source rcabcdefghijk", ""},
		{"too short", "rc01234", ""},
		{"inside word", "xrc0123456789", ""},
		{"second is token", "rcx rc9876543210.", "rc9876543210"},
		{"none", "", ""},
		{"uppercase not token", "rc0123456789A", "rc0123456789"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := Find([]byte(tt.in)); got != tt.want {
				t.Errorf("Find(%q) = %q, want %q", tt.in, got, tt.want)
			}
		})
	}
}

func FuzzFind(f *testing.F) {
	f.Add([]byte(`{"entry":"alpha-rc0123456789"}`))
	f.Add([]byte("rcrcrcrcrcrcrcrc"))
	f.Fuzz(func(t *testing.T, b []byte) {
		tok := Find(b)
		if tok != "" && !Valid(tok) {
			t.Fatalf("Find returned invalid token %q", tok)
		}
	})
}
