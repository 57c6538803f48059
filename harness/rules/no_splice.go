package rules

import (
	"fmt"

	"github.com/replaycheck/replaycheck/harness/history"
)

func noSpliceRule() Rule {
	return Rule{
		Name: "no-splice",
		Doc: "A streamed answer whose upstream stream dropped after output reached the client is not " +
			"continued with a retry's or a fallback's chunks: after the drop no further upstream request " +
			"feeds the same client stream. Cannot judge without a streamed request whose upstream stream dropped, " +
			"or when the client stream carried no data chunks. It does not see when chunks reached the client, so a " +
			"target that buffers a streamed attempt and retries it before any output was delivered is judged a " +
			"splice too: name this rule only where the target streams through (chat on the built-in gateway).",
		Seed: "000 (LiteLLM): streaming chat with a fallback and drop_stream — Before 14 chunks and 2 writes \"because the fallback " +
			"re-ran the whole loop and its chunks were spliced after the original ones\"; After 7 and 1: \"the client gets the error " +
			"after the original chunks instead of a fallback that runs the tool again\"",
		Check: noSplice,
	}
}

// noSplice finds the first dropped upstream stream inside a streamed client
// exchange that had delivered chunks and counts the upstream requests that
// followed it within the same exchange.
func noSplice(h *history.History) Verdict {
	const expected = "the stream to end after the upstream drop with no other answer spliced in"
	for _, u := range h.Upstream {
		if !dropped(u) {
			continue
		}
		i := exchangeAt(h, u.At.D())
		if i < 0 || !h.Requests[i].Stream {
			continue
		}
		x := h.Requests[i]
		if x.DataChunks == 0 {
			return unknown(expected, "the client stream carried no data chunks, so nothing could be spliced")
		}
		later := 0
		for _, v := range upstreamIn(h, i) {
			if v.At.D() > u.At.D() {
				later++
			}
		}
		observed := fmt.Sprintf("%s after the drop and %s in the client stream", plural(later, "upstream request"), plural(x.DataChunks, "data chunk"))
		if len(x.ResponseIDs) > 1 {
			observed += fmt.Sprintf(" from %s", plural(len(x.ResponseIDs), "response"))
		}
		return judged(later == 0, expected, observed)
	}
	return unknown(expected, "no streamed request had its upstream stream dropped")
}
