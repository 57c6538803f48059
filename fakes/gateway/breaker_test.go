package gateway

import (
	"net/http"
	"sync/atomic"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/replaycheck/replaycheck/fakes/fault"
	"github.com/replaycheck/replaycheck/fakes/ledger"
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
		{"other calls are refused while the trial is out", func() {}, false},
		{"one strike while half open reopens it", func() { b.strike() }, false},
		{"a success after the cooldown closes it", func() { now = now.Add(2 * time.Minute); b.allow(); b.reset(); b.strike(); b.strike() }, true},
		{"a trial that never reports back is replaced after another cooldown", func() {
			b.strike() // the third strike: open
			now = now.Add(2 * time.Minute)
			b.allow() // the trial, which never reports back
			now = now.Add(2 * time.Minute)
		}, true},
		{"the replacement is the only trial", func() {}, false},
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

// TestBreakerCountsTransportFailures drives the guarded gateway's breaker
// through the ledger: dropped connections are strikes, three in a row keep
// the next call off the wire until the cooldown has passed, and a completed
// round trip, even an isError one, resets the count (seed 002).
func TestBreakerCountsTransportFailures(t *testing.T) {
	drop := func(nth int) ledger.Fault {
		return ledger.Fault{Tool: ledger.ToolCommitWrite, Times: fault.Times{Nth: nth}, DropAfterExecute: &ledger.DropAfterExecute{}}
	}
	isError := func(nth int) ledger.Fault {
		return ledger.Fault{Tool: ledger.ToolCommitWrite, Times: fault.Times{Nth: nth}, IsError: &ledger.IsError{Message: "entry not found"}}
	}
	tests := []struct {
		name   string
		faults []ledger.Fault
		// advance[i] moves the clock before request i.
		advance map[int]time.Duration
		// want[i] is whether request i's tools/call reached the ledger.
		want []bool
	}{
		{
			name:    "three drops open it until the cooldown",
			faults:  []ledger.Fault{drop(1), drop(2), drop(3)},
			advance: map[int]time.Duration{4: 61 * time.Second},
			want:    []bool{true, true, true, false, true, true},
		},
		{
			name:   "two drops stay closed",
			faults: []ledger.Fault{drop(1), drop(2)},
			want:   []bool{true, true, true, true},
		},
		{
			name:   "an isError result resets the count",
			faults: []ledger.Fault{drop(1), drop(2), isError(3), drop(4), drop(5)},
			want:   []bool{true, true, true, true, true, true},
		},
		{
			name:    "a failed trial reopens it",
			faults:  []ledger.Fault{drop(1), drop(2), drop(3), drop(4)},
			advance: map[int]time.Duration{4: 61 * time.Second},
			want:    []bool{true, true, true, false, true, false},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			r := newRig(t, nil, func(c *Config) { c.BreakerCooldown = time.Minute })
			var clock atomic.Int64
			clock.Store(time.Date(2026, 11, 30, 0, 0, 0, 0, time.UTC).UnixNano())
			r.gw.now = func() time.Time { return time.Unix(0, clock.Load()) }
			armLedger(t, r, tt.faults...)
			var got []bool
			for i := range tt.want {
				clock.Add(int64(tt.advance[i]))
				before := r.ledger.Total().CallsTotal()
				if status, body := r.post(pathChat, seedBody(pathChat, seedAsk, false, false)); status != http.StatusOK {
					t.Fatalf("request %d: status %d, want 200: %s", i, status, body)
				}
				got = append(got, r.ledger.Total().CallsTotal() > before)
			}
			if diff := cmp.Diff(tt.want, got); diff != "" {
				t.Errorf("tools/call reached the ledger, per request (-want +got):\n%s", diff)
			}
		})
	}
}
