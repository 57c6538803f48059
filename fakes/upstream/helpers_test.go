package upstream

import (
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/replaycheck/replaycheck/internal/syncbuf"

	"github.com/replaycheck/replaycheck/internal/runtoken"
	"github.com/replaycheck/replaycheck/internal/wire"
)

// fixedClock is a deterministic clock for tests.
func fixedClock() time.Time { return time.Unix(1_700_000_000, 0).UTC() }

// newFake starts the upstream fake on a loopback port; log receives its lines.
func newFake(t testing.TB, cfg Config) (*Server, *httptest.Server, *syncbuf.Buffer) {
	t.Helper()
	log := &syncbuf.Buffer{}
	if cfg.Log == nil {
		cfg.Log = log
	}
	if cfg.Clock == nil {
		cfg.Clock = fixedClock
	}
	s, err := New(cfg)
	if err != nil {
		t.Fatalf("New: %v", err)
	}
	srv := httptest.NewServer(s)
	t.Cleanup(srv.Close)
	return s, srv, log
}

// token returns a run token unique to the test.
func token(t testing.TB, parts ...string) string {
	return runtoken.Derive(append([]string{t.Name()}, parts...)...)
}

// oneCleanLoop is the counts of one tool loop the fake forwarded untouched:
// the initial request and its follow-up.
func oneCleanLoop() wire.UpstreamCounts {
	return wire.UpstreamCounts{Initial: 1, FollowUp: 1, Outcomes: countsOf(map[string]int{"initial forwarded": 1, "follow_up forwarded": 1})}
}

// oneCleanLoopLog is the request log of oneCleanLoop on path.
func oneCleanLoopLog(path string) string {
	return path + " initial forwarded\n" + path + " follow_up forwarded\n"
}

// diff fails the test with a (-want +got) report when want != got.
func diff(t testing.TB, what string, want, got any) {
	t.Helper()
	if !reflect.DeepEqual(want, got) {
		t.Errorf("%s mismatch (-want +got):\n- %#v\n+ %#v", what, want, got)
	}
}

// post sends body as JSON to path and returns the status and body.
func post(t testing.TB, url, body string) (int, string, http.Header) {
	t.Helper()
	resp, err := http.Post(url, "application/json", strings.NewReader(body))
	if err != nil {
		t.Fatalf("POST %s: %v", url, err)
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	if err != nil {
		t.Fatalf("reading %s: %v", url, err)
	}
	return resp.StatusCode, string(b), resp.Header
}

// prompt is the seed's prompt with a run token entry.
func prompt(tok string) string {
	return fmt.Sprintf("Call the commit_write tool exactly once with entry alpha-%s, then reply done.", tok)
}

// countKey returns the count key written as text ("initial forwarded").
func countKey(text string) wire.CountKey {
	var k wire.CountKey
	_ = k.UnmarshalText([]byte(text)) // never fails
	if err := k.Check(); err != nil {
		panic(err)
	}
	return k
}

// countsOf returns outcome counts keyed by their text form.
func countsOf(m map[string]int) map[wire.CountKey]int {
	out := make(map[wire.CountKey]int, len(m))
	for k, n := range m {
		out[countKey(k)] = n
	}
	return out
}

// callIDs returns the ids of r's tool calls that have one; nil when none do.
func callIDs(r wire.UpstreamRequest) []string {
	var out []string
	for _, c := range r.Calls {
		if c.ID != "" {
			out = append(out, c.ID)
		}
	}
	return out
}
