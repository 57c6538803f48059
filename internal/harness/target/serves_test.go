package target

import (
	"testing"

	"github.com/replaycheck/replaycheck/internal/harness/scenario"
)

// The built-in gateway serves chat, responses and messages, not gemini;
// a target that says nothing of its endpoints is taken to serve them all.
func TestUnserved(t *testing.T) {
	builtin, err := ParseTarget("builtin:guarded")
	if err != nil {
		t.Fatal(err)
	}
	reqs := func(es ...scenario.Endpoint) []scenario.Request {
		var out []scenario.Request
		for _, e := range es {
			out = append(out, scenario.Request{Endpoint: e})
		}
		return out
	}
	for _, tt := range []struct {
		t    Target
		reqs []scenario.Request
		want scenario.Endpoint
	}{
		{builtin, reqs(scenario.Chat, scenario.Responses, scenario.Messages), ""},
		{builtin, reqs(scenario.Chat, scenario.Gemini), scenario.Gemini},
		{NewProxy(ProxySpec{Name: "p"}), reqs(scenario.Gemini), ""},
	} {
		if got := Unserved(tt.t, tt.reqs); got != tt.want {
			t.Errorf("Unserved(%s, %v) = %q, want %q", tt.t.Name(), tt.reqs, got, tt.want)
		}
	}
}
