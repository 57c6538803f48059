package scenario

import (
	"bytes"
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"testing"

	"github.com/replaycheck/replaycheck/fakes/upstream"
)

// TestEndpointsTable: every endpoint in the table is valid, has a path of
// its own, is a name the upstream fake knows, and the body the harness
// builds for a prompt, sent to its path, is one the fake answers and counts
// as an initial request.
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
			fake, err := upstream.New(upstream.Config{})
			if err != nil {
				t.Fatal(err)
			}
			srv := httptest.NewServer(fake)
			t.Cleanup(srv.Close)
			resp, err := http.Post(srv.URL+e.Path(), "application/json", bytes.NewReader(b))
			if err != nil {
				t.Fatal(err)
			}
			answer, err := io.ReadAll(resp.Body)
			resp.Body.Close()
			if err != nil {
				t.Fatal(err)
			}
			if resp.StatusCode != http.StatusOK {
				t.Errorf("the upstream fake answers %s with %d: %s", b, resp.StatusCode, answer)
			}
			if got := fake.Total(); got.Initial != 1 || got.FollowUp != 0 {
				t.Errorf("the upstream fake counts %s as %d initial, %d follow-up; want 1 initial", b, got.Initial, got.FollowUp)
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
