package upstream

import (
	"net/http"
	"path/filepath"
	"strings"
	"sync"
	"testing"

	"github.com/jarcoal/httpmock"

	"github.com/replaycheck/replaycheck/fakes/upstream/cassette"
	"github.com/replaycheck/replaycheck/internal/wire"
)

// A relayed plain answer over MaxRecordedBody reaches the client whole but
// is not recorded, and says so: its record's Unrecorded is too_large and
// TooLargeToRecord is told its path, and the cassette keeps its request
// marked too_large, so a replay of it misses and the miss says why (in the
// answer's error and the record's). An answer within the limit is recorded
// and says nothing of the kind.
func TestTooLargeToRecord(t *testing.T) {
	tok := token(t)
	big := `{"id":"chatcmpl-big","object":"chat.completion","choices":[{"index":0,"message":{"role":"assistant","content":"` +
		strings.Repeat("x", MaxRecordedBody) + `"},"finish_reason":"stop"}]}`
	small := `{"id":"chatcmpl-small","object":"chat.completion","choices":[{"index":0,"message":{"role":"assistant","content":"done"},"finish_reason":"stop"}]}`
	mt := httpmock.NewMockTransport()
	mt.RegisterResponder("POST", provider+"/v1/chat/completions", func(req *http.Request) (*http.Response, error) {
		body := small
		if req.URL.Query().Get("size") == "big" {
			body = big
		}
		resp := httpmock.NewStringResponse(http.StatusOK, body)
		resp.Header.Set("Content-Type", "application/json")
		return resp, nil
	})
	rec, err := cassette.Create(filepath.Join(t.TempDir(), "session.jsonl"))
	if err != nil {
		t.Fatal(err)
	}
	var mu sync.Mutex
	var told []string
	s, srv, _ := newFake(t, Config{Relay: provider, Client: &http.Client{Transport: mt}, Record: rec, TooLargeToRecord: func(path string) {
		mu.Lock()
		defer mu.Unlock()
		told = append(told, path)
	}})
	req := `{"model":"m","messages":[{"role":"user","content":"` + prompt(tok) + `"}]}`
	for _, size := range []string{"big", "small"} {
		status, body, _ := post(t, srv.URL+"/v1/chat/completions?size="+size, req)
		want := small
		if size == "big" {
			want = big
		}
		if status != http.StatusOK || body != want {
			t.Fatalf("%s answer: status %d, %d bytes; want 200 and the provider's %d bytes", size, status, len(body), len(want))
		}
	}
	if err := rec.Close(); err != nil {
		t.Fatal(err)
	}
	if info := mt.GetCallCountInfo(); info["POST "+provider+"/v1/chat/completions"] != 2 {
		t.Errorf("provider calls = %v, want 2", info)
	}
	recs := s.Requests(tok)
	if len(recs) != 2 {
		t.Fatalf("%d records, want 2", len(recs))
	}
	if r := recs[0]; r.Unrecorded != wire.UnrecordedTooLarge || r.Recorded != "" || r.Outcome != wire.OutcomeForwarded {
		t.Errorf("the big answer's record: Unrecorded %q, Recorded %q, Outcome %q; want too_large, none, forwarded", r.Unrecorded, r.Recorded, r.Outcome)
	}
	if r := recs[1]; r.Unrecorded != "" || r.Recorded == "" {
		t.Errorf("the small answer's record: Unrecorded %q, Recorded %q; want none, recorded", r.Unrecorded, r.Recorded)
	}
	diff(t, "told too large to record", []string{"/v1/chat/completions"}, told)
	player, err := cassette.Open(rec.Path())
	if err != nil {
		t.Fatal(err)
	}
	diff(t, "cassette entries", 2, player.Len())

	// Replayed offline: the same request twice, as recorded.
	rs, rsrv, _ := newFake(t, Config{Cassette: player})
	rtok := token(t)
	rreq := `{"model":"m","messages":[{"role":"user","content":"` + prompt(rtok) + `"}]}`
	const why = "was not recorded: its body was over the recording limit of 32 MiB"
	if status, body, _ := post(t, rsrv.URL+"/v1/chat/completions", rreq); status != http.StatusNotFound || !strings.Contains(body, why) {
		t.Errorf("replaying the big answer: status %d, %s; want 404 saying it %s", status, body, why)
	}
	if status, body, _ := post(t, rsrv.URL+"/v1/chat/completions", rreq); status != http.StatusOK || !strings.Contains(body, "chatcmpl-small") {
		t.Errorf("replaying the small answer: status %d, %s; want 200 and the recorded answer", status, body)
	}
	replayed := rs.Requests(rtok)
	if len(replayed) != 2 {
		t.Fatalf("%d replay records, want 2", len(replayed))
	}
	if r := replayed[0]; r.Outcome != wire.OutcomeCassetteMiss || !strings.Contains(r.Error, why) {
		t.Errorf("the big answer's replay record: outcome %q, error %q; want cassette_miss saying it %s", r.Outcome, r.Error, why)
	}
}
