package matrix

import (
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/replaycheck/replaycheck/internal/harness/explore"
)

// TestInnerCut: of the unnamed cut points of a streamed answer, the matrix
// keeps the first and the last of each region (the content arriving, after
// the content; one region when the content's end is unknown).
func TestInnerCut(t *testing.T) {
	tests := []struct {
		name            string
		events, content int
		want            []int // the unnamed events kept
	}{
		{name: "content then more", events: 10, content: 5, want: []int{1, 4, 6, 8}},
		{name: "content end unknown", events: 10, content: 0, want: []int{1, 8}},
		{name: "content ends before the terminal event", events: 10, content: 8, want: []int{1, 7}},
		{name: "content in the first event", events: 6, content: 1, want: []int{2, 4}},
		{name: "one unnamed event", events: 4, content: 2, want: []int{1}},
		{name: "two unnamed events", events: 4, content: 0, want: []int{1, 2}},
		{name: "headers only", events: 1, content: 0, want: nil},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var got []int
			for k := range tt.events {
				p := explore.Point{Side: explore.SideUpstream, Stream: true, Nth: 1, Cut: true, Event: k, Events: tt.events, ContentEvents: tt.content}
				if !p.Named() && !innerCut(p) {
					got = append(got, k)
				}
			}
			if diff := cmp.Diff(tt.want, got); diff != "" {
				t.Errorf("unnamed events kept (-want +got):\n%s", diff)
			}
		})
	}
}
