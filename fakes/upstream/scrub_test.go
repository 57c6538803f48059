package upstream

import (
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/jarcoal/httpmock"

	"github.com/replaycheck/replaycheck/fakes/upstream/cassette"
	"github.com/replaycheck/replaycheck/internal/secret/secrettest"
)

// TestCassetteScrubsLeaks: a relayed answer that repeats each credential
// of the shared table that text carries (the provider echoing a command
// line, a URL, a token, a value of replaycheck's environment) is recorded
// without them, the text around them kept.
func TestCassetteScrubsLeaks(t *testing.T) {
	secrettest.Setenv(t)
	leaks := secrettest.With("arg")
	var lines []string
	for _, l := range leaks {
		lines = append(lines, "the server started with "+l.Arg)
	}
	body := `{"error":{"message":"` + strings.Join(lines, "; ") + `"}}`
	mt := httpmock.NewMockTransport()
	mt.RegisterResponder("POST", provider+"/v1/chat/completions", func(*http.Request) (*http.Response, error) {
		resp := httpmock.NewStringResponse(http.StatusBadGateway, body)
		resp.Header.Set("Content-Type", "application/json")
		return resp, nil
	})
	rec, err := cassette.Create(filepath.Join(t.TempDir(), "session.jsonl"))
	if err != nil {
		t.Fatal(err)
	}
	_, srv, _ := newFake(t, Config{Relay: provider, Client: &http.Client{Transport: mt}, Record: rec})
	resp, err := http.Post(srv.URL+"/v1/chat/completions", "application/json",
		strings.NewReader(`{"model":"gpt-x","messages":[{"role":"user","content":"hi"}]}`))
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	srv.Close()
	if err := rec.Close(); err != nil {
		t.Fatal(err)
	}
	checkStubs(t, mt, map[string]int{"POST " + provider + "/v1/chat/completions": 1})
	b, err := os.ReadFile(rec.Path())
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(string(b), "the server started with") {
		t.Fatalf("the cassette did not record the answer:\n%s", b)
	}
	secrettest.Check(t, "the model cassette", string(b), leaks)
}
