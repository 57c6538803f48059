package explore

import (
	"slices"
	"testing"
	"time"
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
