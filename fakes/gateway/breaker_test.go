package gateway

import (
	"context"
	"log/slog"
	"net/http"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/replaycheck/replaycheck/fakes/fault"
	"github.com/replaycheck/replaycheck/fakes/ledger"
	"github.com/replaycheck/replaycheck/internal/wire"
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
		{"an abandoned trial hands its turn to the next call", func() { b.abandon() }, true},
		{"which is the only trial again", func() {}, false},
		{"abandoning a call of a closed breaker counts nothing", func() { b.reset(); b.strike(); b.strike(); b.abandon() }, true},
		{"so the third strike still opens it", func() { b.strike() }, false},
	}
	for _, s := range steps {
		s.do()
		if got := allowed(); got != s.want {
			t.Fatalf("%s: allow = %v, want %v", s.name, got, s.want)
		}
	}
	now = now.Add(2 * time.Minute)
	b.allow()
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

// logNotes is a slog.Handler that passes every record's message to a channel,
// so a test can wait for a decision the gateway logs.
type logNotes chan string

func (n logNotes) Enabled(context.Context, slog.Level) bool { return true }
func (n logNotes) Handle(_ context.Context, r slog.Record) error {
	select {
	case n <- r.Message:
	default:
	}
	return nil
}
func (n logNotes) WithAttrs([]slog.Attr) slog.Handler { return n }
func (n logNotes) WithGroup(string) slog.Handler      { return n }

// wait waits for msg, up to a deadline.
func (n logNotes) wait(t *testing.T, msg string) {
	t.Helper()
	deadline := time.NewTimer(10 * time.Second)
	defer deadline.Stop()
	for {
		select {
		case got := <-n:
			if got == msg {
				return
			}
		case <-deadline.C:
			t.Fatalf("the gateway did not log %q", msg)
		}
	}
}

// TestBreakerIgnoresAbandonedCalls: an app that gives up during a tool call
// says nothing about the MCP server, so three of them in a row do not open
// the guarded gateway's breaker.
func TestBreakerIgnoresAbandonedCalls(t *testing.T) {
	notes := make(logNotes, 256)
	r := newRig(t, nil, func(c *Config) { c.Logger = slog.New(notes) })
	slow := fault.Duration(30 * time.Second)
	armLedger(t, r, ledger.Fault{Tool: ledger.ToolCommitWrite, Delay: &slow})
	for i := range 3 {
		ctx, cancel := context.WithCancel(context.Background())
		req, err := http.NewRequestWithContext(ctx, http.MethodPost, r.url+pathChat, strings.NewReader(seedBody(pathChat, seedAsk, false, false)))
		if err != nil {
			t.Fatal(err)
		}
		req.Header.Set("Authorization", "Bearer "+seedKey)
		done := make(chan struct{})
		go func() {
			defer close(done)
			if resp, err := r.client.Do(req); err == nil {
				resp.Body.Close()
			}
		}()
		r.waitLedger(func(c wire.MCPCounts) bool { return c.CallsTotal() == i+1 })
		cancel()
		<-done
		notes.wait(t, "mcp call abandoned: the app request ended")
	}
	armLedger(t, r)
	if status, body := r.post(pathChat, seedBody(pathChat, seedAsk, false, false)); status != http.StatusOK {
		t.Fatalf("status %d: %s", status, body)
	}
	if got := r.ledger.Total().CallsTotal(); got != 4 {
		t.Errorf("tools/call received = %d, want 4: the fourth call was kept off the wire", got)
	}
}
