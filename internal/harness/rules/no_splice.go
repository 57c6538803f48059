package rules

import (
	"fmt"

	"github.com/replaycheck/replaycheck/internal/harness/history"
)

func noSpliceRule() Rule {
	return Rule{
		Name:    "no-splice",
		Summary: "a dropped stream is not continued with a retry's or a fallback's chunks",
		Doc: "A streamed answer whose upstream stream dropped after output reached the client is not " +
			"continued with a retry's or a fallback's chunks: after the drop no further upstream request " +
			"feeds the same client stream. Cannot judge without a streamed request whose upstream stream dropped, " +
			"or when the client stream carried no data chunks, or when no chunk reached the client before the drop " +
			"(told by the answer ids the upstream mints, where the target passes them through). On a target that rewrites " +
			"the ids it passes only when no upstream request followed the drop, and otherwise cannot judge.",
		Seed: "000 (LiteLLM): streaming chat with a fallback and drop_stream — Before 14 chunks and 2 writes \"because the fallback " +
			"re-ran the whole loop and its chunks were spliced after the original ones\"; After 7 and 1: \"the client gets the error " +
			"after the original chunks instead of a fallback that runs the tool again\"",
		Fix: "Once a chunk of a streamed answer reached the client, end a stream that fails upstream with an " +
			"error event; never retry or fall back into the same client stream.",
		Example: `# scenarios/seed/stream-drop-fallback.yaml, trimmed
name: follow-up stream drops with a fallback
request: {endpoint: chat, stream: true}
gateway: {fallbacks: {repro-model: backup-model}}
faults:
  upstream: [{on: follow_up, stream: true, drop: {after: headers}, times: always}]
expect:
  writes: 1
  rules: [no-splice]
`,
		Check: noSplice,
	}
}

// noSplice finds the dropped upstream streams inside streamed client
// exchanges that had delivered chunks and counts the upstream requests that
// followed each drop within the same exchange. Where the client stream
// carries the upstream's answer ids, it judges by them: a drop whose chunks
// never reached the client cannot be spliced, and a splice is a later
// answer's chunks in the same client stream.
func noSplice(h *history.History) Verdict {
	const expected = "the stream to end after the upstream drop with no other answer spliced in"
	why := "no streamed request had its upstream stream dropped"
	for _, u := range h.Upstream {
		if !dropped(u) {
			continue
		}
		i := h.ExchangeAt(u.At.D())
		if i < 0 || !h.Requests[i].Stream {
			continue
		}
		x := h.Requests[i]
		if x.DataChunks == 0 {
			why = "the client stream carried no data chunks, so nothing could be spliced"
			continue
		}
		// Output reached the client before the cut: chunks of the dropped
		// answer or of an earlier one in the same client stream.
		reached, known := false, false
		for _, v := range upstreamIn(h, i) {
			if v.At.D() <= u.At.D() {
				r, k := delivered(h, i, v)
				reached, known = reached || r, known || k
			}
		}
		later, spliced := 0, 0
		for _, v := range upstreamIn(h, i) {
			if v.At.D() <= u.At.D() {
				continue
			}
			later++
			if r, _ := delivered(h, i, v); r {
				spliced++
			}
		}
		observed := fmt.Sprintf("%s after the drop and %s in the client stream", plural(later, "upstream request"), plural(x.DataChunks, "data chunk"))
		if len(x.ResponseIDs) > 1 {
			observed += fmt.Sprintf(" from %s", plural(len(x.ResponseIDs), "response"))
		}
		switch {
		case known && !reached && spliced > 0:
			return judged(true, expected, observed+"; no chunk had reached the client before the drop, so the later answer is a retry, not a splice")
		case known:
			return judged(spliced == 0, expected, observed)
		case later == 0:
			return judged(true, expected, observed)
		}
		return unknown(expected, observed+"; the client stream does not carry the upstream's answer ids, so whether a later answer was spliced after delivered chunks cannot be told")
	}
	return unknown(expected, why)
}
