package gateway

import (
	"bytes"
	"net/http"
	"testing"
	"time"

	"github.com/replaycheck/replaycheck/fakes/upstream"
	"github.com/replaycheck/replaycheck/internal/wire"
)

// TestStalledStreamGivesUp: a streamed follow-up that goes silent after its
// headers and never resumes is given up after StreamIdleTimeout. The tool
// already ran, so the call is not retried: the app gets the first answer's
// chunks, then an SSE error event, and the ledger one write.
func TestStalledStreamGivesUp(t *testing.T) {
	r := newRig(t, nil, func(c *Config) { c.StreamIdleTimeout = 200 * time.Millisecond })
	armUpstream(t, r, nil, upstream.Fault{On: wire.KindFollowUp, Stall: &upstream.Stall{After: upstream.DropAfterHeaders, Forever: true}})
	status, body := r.post(pathChat, seedBody(pathChat, seedAsk, false, true))
	got := r.observe([]int{status}, countLines(body, `data: {"id"`))
	want := observed{Statuses: []int{http.StatusOK}, Calls: 1, Writes: 1, Initial: 1, FollowUp: 1, Chunks: 7}
	if d := differing(want, got); len(d) > 0 {
		t.Errorf("counts differ in %v: want %+v, got %+v", d, want, got)
	}
	if !bytes.Contains(body, []byte("stream idle timeout")) {
		t.Errorf("the app's stream does not end with the idle timeout's error:\n%s", body)
	}
}
