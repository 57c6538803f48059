package rules

import (
	"fmt"

	"github.com/replaycheck/replaycheck/internal/harness/history"
	"github.com/replaycheck/replaycheck/internal/wire"
)

// Undelivered calls: over stdio the target writes a tools/call to the
// harness's own stdio server (ledger-stdio), which forwards it to the
// ledger. On a busy machine that process can lack the CPU to forward the
// call before the target's tool timeout gives it up; the call then never
// runs, and a fault armed to fire after it ran never fires. A count short
// of its least in such a run says how fast the harness delivered the call,
// not what the target decided. The process names each call it never
// forwarded (wire.MCPUnforwarded); a target that never sent the call leaves
// no such event, and its run is judged as always.

// undelivered returns why h's failures cannot be judged, or "" when they
// can: the harness's stdio server never forwarded a tools/call the target
// sent and gave up (h has MCPUnforwarded events), and every failed verdict
// of vs is a count below its least or an error answer that a call that
// never ran explains (short, see counts). A failed replay rule, a count
// above its most and a run that did not complete leave the failures as they
// are.
func undelivered(h *history.History, vs []Verdict, short map[string]bool) string {
	given := h.MCPOf(wire.MCPUnforwarded, "")
	if len(given) == 0 {
		return ""
	}
	failed := false
	for _, v := range vs {
		if v.Status != Fail {
			continue
		}
		if v.Kind != KindCount || !short[v.Check] {
			return ""
		}
		failed = true
	}
	if !failed {
		return ""
	}
	why := fmt.Sprintf("the harness's stdio server never forwarded the target's tools/call %s to the ledger: the target gave it up (cancelled it or closed the server's stdin) first, so it never ran", tally(byTool(given)))
	if _, mcp := unfiredFaults(h); len(mcp) > 0 {
		why += " and " + unfired(mcp)
	}
	return why + "; the run measured how fast the harness delivered the call, not what the target decided (the harness may have been starved); re-run on a quieter machine or with a lower --parallel"
}

// undeliveredActivity says which tools/calls of the target the harness's
// stdio server never forwarded: "the harness's stdio server never forwarded
// the target's tools/call commit_write ×1 (given up first)"; "" when none.
func undeliveredActivity(h *history.History) string {
	given := h.MCPOf(wire.MCPUnforwarded, "")
	if len(given) == 0 {
		return ""
	}
	return "the harness's stdio server never forwarded the target's tools/call " + tally(byTool(given)) + " (the target gave it up first)"
}

// unfiredFaults returns the armed faults of h that never fired, upstream
// and MCP, each in report order.
func unfiredFaults(h *history.History) (up, mcp []wire.FaultReport) {
	for _, f := range h.Faults {
		if f.Fired > 0 {
			continue
		}
		if f.Side == wire.FaultMCP {
			mcp = append(mcp, f)
		} else {
			up = append(up, f)
		}
	}
	return up, mcp
}
