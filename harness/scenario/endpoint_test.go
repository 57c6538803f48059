package scenario

import (
	"encoding/json"
	"testing"

	"github.com/replaycheck/replaycheck/fakes/upstream"
)

// TestEndpointsTable: every endpoint in the table is valid, has a path of
// its own, is a name the upstream fake knows, and the body the harness
// builds for a prompt is one the fake reads as an initial request.
func TestEndpointsTable(t *testing.T) {
	paths := map[string]Endpoint{}
	for _, e := range Endpoints() {
		t.Run(string(e), func(t *testing.T) {
			if !e.Valid() {
				t.Errorf("%s is not Valid", e)
			}
			if prev, dup := paths[e.Path()]; dup {
				t.Errorf("%s and %s share the path %s", prev, e, e.Path())
			}
			paths[e.Path()] = e
			body := map[string]any{"model": DefaultModelGroup}
			e.SetPrompt(body, DefaultPrompt)
			b, err := json.Marshal(body)
			if err != nil {
				t.Fatal(err)
			}
			kind, err := upstream.Classify(string(e), b)
			if err != nil || kind != upstream.KindInitial {
				t.Errorf("the upstream fake classifies %s as %q, %v; want %q", b, kind, err, upstream.KindInitial)
			}
		})
	}
	if Endpoint("gemini").Valid() || Endpoint("").Valid() {
		t.Error("an endpoint outside the table is Valid")
	}
	if got, want := EndpointNames(), "chat, responses or messages"; got != want {
		t.Errorf("EndpointNames() = %q, want %q", got, want)
	}
}
