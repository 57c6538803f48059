package gateway

import (
	"testing"
	"time"
)

func TestBreaker(t *testing.T) {
	now := time.Date(2026, 11, 30, 0, 0, 0, 0, time.UTC)
	b := &breaker{label: "ledger", threshold: 3, cooldown: time.Minute, now: func() time.Time { return now }}
	allowed := func() bool { ok, _ := b.allow(); return ok }
	steps := []struct {
		name string
		do   func()
		want bool
	}{
		{"closed at start", func() {}, true},
		{"two strikes keep it closed", func() { b.strike(); b.strike() }, true},
		{"a success resets the count", func() { b.reset(); b.strike(); b.strike() }, true},
		{"the third consecutive strike opens it", func() { b.strike() }, false},
		{"still open within the cooldown", func() { now = now.Add(59 * time.Second) }, false},
		{"half open after the cooldown", func() { now = now.Add(2 * time.Second) }, true},
		{"one strike while half open reopens it", func() { b.strike() }, false},
		{"a success after the cooldown closes it", func() { now = now.Add(2 * time.Minute); b.allow(); b.reset(); b.strike(); b.strike() }, true},
	}
	for _, s := range steps {
		s.do()
		if got := allowed(); got != s.want {
			t.Fatalf("%s: allow = %v, want %v", s.name, got, s.want)
		}
	}
	b.strike()
	b.strike()
	b.strike()
	_, msg := b.allow()
	if want := "MCP server 'ledger' is unreachable after 3 consecutive failures"; len(msg) < len(want) || msg[:len(want)] != want {
		t.Errorf("message = %q", msg)
	}
}
