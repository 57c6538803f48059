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
			path := e.Path(DefaultModelGroup, false)
			if prev, dup := paths[path]; dup {
				t.Errorf("%s and %s share the path %s", prev, e, path)
			}
			paths[path] = e
			body := map[string]any{}
			if !e.InPath() {
				body["model"] = DefaultModelGroup
			}
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
			resp, err := http.Post(srv.URL+path, "application/json", bytes.NewReader(b))
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
			tok := fake.Tokens()
			if len(tok) != 1 || fake.Requests(tok[0])[0].Endpoint != string(e) || fake.Requests(tok[0])[0].Model != DefaultModelGroup {
				t.Errorf("the upstream fake records %s at %s as %+v; want endpoint %s, model %s", b, path, fake.Requests(tok[0]), e, DefaultModelGroup)
			}
		})
	}
	if Endpoint("embeddings").Valid() || Endpoint("").Valid() {
		t.Error("an endpoint outside the table is Valid")
	}
	if got, want := EndpointNames(), "chat, responses, messages or gemini"; got != want {
		t.Errorf("EndpointNames() = %q, want %q", got, want)
	}
}

// Gemini names the model and the stream in its path.
func TestEndpointPath(t *testing.T) {
	for _, tt := range []struct {
		e      Endpoint
		model  string
		stream bool
		want   string
	}{
		{Chat, "m", true, "/v1/chat/completions"},
		{Messages, "m", false, "/v1/messages"},
		{Gemini, "gemini-2.5-flash", false, "/v1beta/models/gemini-2.5-flash:generateContent"},
		{Gemini, "gemini-2.5-flash", true, "/v1beta/models/gemini-2.5-flash:streamGenerateContent?alt=sse"},
		{Gemini, "a/b", false, "/v1beta/models/a%2Fb:generateContent"},
	} {
		if got := tt.e.Path(tt.model, tt.stream); got != tt.want {
			t.Errorf("%s.Path(%q, %v) = %q, want %q", tt.e, tt.model, tt.stream, got, tt.want)
		}
	}
}
