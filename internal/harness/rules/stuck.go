package rules

import (
	"fmt"

	"github.com/replaycheck/replaycheck/internal/harness/history"
	"github.com/replaycheck/replaycheck/internal/wire"
)

// stuckOnCutStream explains a run whose target did not answer before the
// deadline after the ledger cut the answer of one of its tools/calls (the
// client saw no answer: the connection closed, or the SSE stream opened and
// then ended): a client must notice the stream ended, so waiting on it for
// hours, or for ever, is the target's finding, not a timeout of the
// harness's. It returns "" when the run did not hang or no answer was cut.
func stuckOnCutStream(h *history.History) string {
	hung := false
	for _, x := range h.Requests {
		hung = hung || x.TimedOut || (x.Client != nil && x.Client.Killed)
	}
	if !hung {
		return ""
	}
	for i := len(h.MCP) - 1; i >= 0; i-- {
		e := h.MCP[i]
		if m, ok := e.FaultMeaning(); ok && m.ClientSees == wire.ClientSeesNoAnswer && m.Stdio == wire.StdioNone && e.Tool != "" {
			return fmt.Sprintf("a finding, not a timeout of replaycheck's: the target was still waiting on tools/call %s, whose answer the ledger cut (%s) — a client must see the stream end, not wait on it for hours or for ever", e.Tool, e.Fault)
		}
	}
	return ""
}
