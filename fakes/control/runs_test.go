package control

import (
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/replaycheck/replaycheck/fakes/control/controltest"
	"github.com/replaycheck/replaycheck/fakes/ledger"
	"github.com/replaycheck/replaycheck/fakes/upstream"
	"github.com/replaycheck/replaycheck/internal/runtoken"
)

// ticker is a clock that moves one second at each reading, shared by both
// fakes, so every activity has a time of its own.
type ticker struct {
	mu  sync.Mutex
	now time.Time
}

func (c *ticker) read() time.Time {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.now = c.now.Add(time.Second)
	return c.now
}

// TestRunLimit: with a limit of 5, 30 runs and a request without a token
// leave the row of no token and the 5 most recently active runs (one of
// them an old run the ledger saw again last) in both fakes, in GET counts
// and in a global fault's per-run report; GET counts says 25 runs were
// dropped, and the total still counts every request. Without a limit every
// run is kept.
func TestRunLimit(t *testing.T) {
	for _, max := range []int{5, 0} {
		t.Run(fmt.Sprint("max ", max), func(t *testing.T) {
			clock := &ticker{now: time.Date(2025, 1, 2, 3, 4, 5, 0, time.UTC)}
			u, err := upstream.New(upstream.Config{Clock: clock.read})
			if err != nil {
				t.Fatal(err)
			}
			l, err := ledger.New(ledger.Config{Now: clock.read})
			if err != nil {
				t.Fatal(err)
			}
			t.Cleanup(func() { l.Close() })
			f, err := upstream.ParseFault("{on: initial, respond: {status: 500}}")
			if err != nil {
				t.Fatal(err)
			}
			if err := u.Arm("", nil, []upstream.Fault{f}); err != nil {
				t.Fatal(err)
			}
			rl := &RunLimit{Upstream: u, Ledger: l, Max: max}
			api := controltest.Validate(t, Spec, (&API{Upstream: u, Ledger: l, Runs: rl}).Handler())
			var tokens []string
			for i := range 30 {
				tokens = append(tokens, runtoken.Derive("limit", fmt.Sprint(i)))
			}
			for _, prompt := range append(slices.Clone(tokens), "no token") {
				body := `{"model":"m","messages":[{"role":"user","content":"write ` + prompt + `"}]}`
				rec := httptest.NewRecorder()
				u.ServeHTTP(rec, httptest.NewRequest(http.MethodPost, "/v1/chat/completions", strings.NewReader(body)))
				io.Copy(io.Discard, rec.Body)
			}
			if err := l.Arm(tokens[3], nil); err != nil { // the ledger sees an old run again
				t.Fatal(err)
			}

			rec := httptest.NewRecorder()
			req := httptest.NewRequest(http.MethodGet, Prefix+"counts", nil)
			req.RemoteAddr, req.Host = "127.0.0.1:1", "127.0.0.1:8765"
			api.ServeHTTP(rec, req)
			var c Counts
			if err := json.Unmarshal(rec.Body.Bytes(), &c); err != nil {
				t.Fatalf("counts %q: %v", rec.Body, err)
			}
			var got []string
			for _, rc := range c.Runs {
				got = append(got, rc.Token)
			}
			want := append([]string{""}, tokens...)
			wantDropped := 0
			if max > 0 {
				want = []string{"", tokens[3], tokens[26], tokens[27], tokens[28], tokens[29]}
				wantDropped = len(tokens) - max
			}
			slices.Sort(want)
			if d := cmp.Diff(want, got); d != "" {
				t.Errorf("runs in counts (-want +got):\n%s", d)
			}
			if c.DroppedRuns != wantDropped || c.MaxRuns != max || c.Total.Upstream.Initial != 31 {
				t.Errorf("dropped_runs %d, max_runs %d, total initial %d; want %d, %d, 31", c.DroppedRuns, c.MaxRuns, c.Total.Upstream.Initial, wantDropped, max)
			}
			if d := cmp.Diff(want, slices.Sorted(slices.Values(u.Tokens()))); d != "" {
				t.Errorf("runs the upstream keeps (-want +got):\n%s", d)
			}
			var reported []string
			for _, r := range u.FaultReports("")[0].Runs {
				reported = append(reported, r.Run)
			}
			if d := cmp.Diff(want, reported); d != "" {
				t.Errorf("runs of the global fault's report (-want +got):\n%s", d)
			}
		})
	}
}
