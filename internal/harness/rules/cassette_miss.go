package rules

import (
	"fmt"
	"maps"
	"slices"

	"github.com/replaycheck/replaycheck/internal/harness/history"
	"github.com/replaycheck/replaycheck/internal/wire"
)

// cassetteMisses names the calls a replayed cassette had no recording for,
// one sentence per side, so no rule passes on a run that left the recording:
// tools/calls an MCP cassette could not answer (nothing ran; the client got
// an MCP error) and model requests a model cassette could not answer (the
// target got a 404). Nil when there was no miss.
func cassetteMisses(h *history.History) []string {
	var out []string
	missed := callsWith(h, func(e wire.MCPEvent) bool { return e.IsFault(wire.MCPFaultCassetteMiss) })
	var calls []string
	for _, i := range slices.Sorted(maps.Keys(missed)) {
		e := h.MCP[i]
		call := "tools/call " + e.Tool
		if e.Args != "" {
			call += " " + compactJSON([]byte(e.Args))
		}
		calls = append(calls, call)
	}
	if len(calls) > 0 {
		out = append(out, fmt.Sprintf("the MCP cassette had no answer for %s (nothing ran; the client got an error): re-record it", capped(calls)))
	}
	var reqs []string
	for i, u := range h.Upstream {
		if u.Outcome == wire.OutcomeCassetteMiss {
			reqs = append(reqs, fmt.Sprintf("model request %d (%s %s)", i+1, u.Kind, u.Path))
		}
	}
	if len(reqs) > 0 {
		out = append(out, fmt.Sprintf("the model cassette had no answer for %s (the target got a 404): re-record it", capped(reqs)))
	}
	return out
}
