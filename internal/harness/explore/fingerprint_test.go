package explore

import (
	"slices"
	"testing"
	"time"

	"github.com/replaycheck/replaycheck/fakes/fault"
	"github.com/replaycheck/replaycheck/internal/harness/history"
	"github.com/replaycheck/replaycheck/internal/harness/rules"
	"github.com/replaycheck/replaycheck/internal/wire"
)

// TestOuterGaps checks that the waits of an outer retry loop are told from
// its inner loop's backoff, and that a single loop has none.
func TestOuterGaps(t *testing.T) {
	ms := func(ds ...int) []time.Duration {
		out := make([]time.Duration, len(ds))
		for i, d := range ds {
			out[i] = time.Duration(d) * time.Millisecond
		}
		return out
	}
	tests := []struct {
		name string
		gaps []time.Duration
		want []int
	}{
		{"one exponential loop", ms(500, 1000, 2000, 4000, 8000), nil},
		{"one flat loop, jittered", ms(1000, 1100, 900, 1050, 980), nil},
		{"three bursts of an exponential loop", ms(500, 1000, 2000, 10000, 500, 1000, 2000, 12000, 500, 1000, 2000), []int{3, 7}},
		{"three bursts of a flat loop", ms(100, 100, 5000, 100, 100, 6000, 100, 100), []int{2, 5}},
		{"two attempts", ms(700), nil},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := outerGaps(tt.gaps); !slices.Equal(got, tt.want) {
				t.Errorf("outerGaps = %v, want %v", got, tt.want)
			}
		})
	}
}

// TestFingerprintRowOfACutRun checks a row's outer gaps and that a run cut
// by its deadline marks its attempts incomplete.
func TestFingerprintRowOfACutRun(t *testing.T) {
	p := Point{Side: SideUpstream, Kind: wire.KindFollowUp, Endpoint: "chat", Nth: 1}
	h := &history.History{Error: "no answer within 5s"}
	for _, ms := range []int{0, 100, 300, 3300, 3400, 3600, 7000, 7100} {
		h.Upstream = append(h.Upstream, wire.UpstreamRequest{Kind: wire.KindFollowUp, Endpoint: "chat", At: history.Duration(time.Duration(ms) * time.Millisecond)})
	}
	rep := &Report{Cells: []Cell{{Base: "b", Schedule: Schedule{{Point: p, Kind: "500", Times: fault.Always}}, Result: rules.Result{History: h}}}}
	rows := Fingerprint(rep)
	if len(rows) != 1 {
		t.Fatalf("%d rows, want 1", len(rows))
	}
	r := rows[0]
	if r.Attempts != 8 || !r.Incomplete {
		t.Errorf("attempts %d, incomplete %t; want 8, incomplete", r.Attempts, r.Incomplete)
	}
	want := []history.Duration{history.Duration(3 * time.Second), history.Duration(3400 * time.Millisecond)}
	if !slices.Equal(r.OuterGaps, want) {
		t.Errorf("outer gaps %v, want %v", r.OuterGaps, want)
	}
	if r.GapMax != history.Duration(200*time.Millisecond) {
		t.Errorf("gap max %v, want the inner loop's 200ms", r.GapMax)
	}
}
