package rules

import (
	"fmt"
	"strings"

	"github.com/replaycheck/replaycheck/internal/harness/history"
	"github.com/replaycheck/replaycheck/internal/wire"
)

// reask is a call the model asked for again (a script step's
// again_if_failed) because the client reported that an earlier call failed.
type reask struct {
	tool   string // the tool, as the answer named it
	failed string // the id of the call the client reported failed
}

// reasks returns, for each client exchange of h (at least one), the calls
// the model asked for again during it, each reported failure once: a
// follow-up sent twice is answered with a re-ask twice, but the client
// told the model once. A re-ask is a new logical call of the model, not
// part of the script's planned calls (h.Setup.Tools): where the first call
// ran, the write it leads to is a duplicate the client caused by reporting
// a failure; where it never ran, it is the one execution.
func reasks(h *history.History) [][]reask {
	out := make([][]reask, max(len(h.Requests), 1))
	seen := map[string]bool{}
	for _, u := range h.Upstream {
		for _, c := range u.Calls {
			if c.AgainFor == "" || seen[c.AgainFor] {
				continue
			}
			seen[c.AgainFor] = true
			i := max(h.ExchangeAt(u.At.D()), 0)
			out[i] = append(out[i], reask{tool: c.Tool, failed: c.AgainFor})
		}
	}
	return out
}

// wrote returns the indexes in h.MCP of the tools/call requests that
// wrote: a write of their tool and request id follows them before the next
// such call.
func wrote(h *history.History) map[int]bool {
	out := map[int]bool{}
	last := map[string]int{}
	for i, e := range h.MCP {
		id := e.Tool + "\x00" + e.RequestID
		switch e.Kind {
		case wire.MCPCall:
			last[id] = i
		case wire.MCPWrite:
			if j, ok := last[id]; ok {
				out[j] = true
			}
		}
	}
	return out
}

// reaskText says what the model asked again for: "the model asked again for
// commit_write after the client reported call_X failed"; "" for none.
func reaskText(rs []reask) string {
	if len(rs) == 0 {
		return ""
	}
	return "the model asked again " + reaskList(rs)
}

// reaskList names re-asks: "for commit_write after the client reported
// call_X failed, and for …".
func reaskList(rs []reask) string {
	parts := make([]string, len(rs))
	for i, r := range rs {
		parts[i] = fmt.Sprintf("for %s after the client reported %s failed", r.tool, r.failed)
	}
	return strings.Join(parts, ", and ")
}

// againUnmatched says which re-asks the model was due to make and could not,
// since no tool the follow-up offered matched the step's call (the upstream
// record's AgainUnmatched): "the model could not ask again for commit_write
// after the client reported call_X failed: no tool the follow-up offered
// matches it; offered: read_ledger". A re-ask another request of the run
// made (a follow-up sent again, with the tool offered) is no missed one; ""
// when none was missed.
func againUnmatched(h *history.History) string {
	made := map[string]bool{}
	for _, u := range h.Upstream {
		for _, id := range u.AgainFor() {
			made[id] = true
		}
	}
	var missed []reask
	var offered []string
	for _, u := range h.Upstream {
		for _, c := range u.AgainUnmatched {
			if made[c.AgainFor] {
				continue
			}
			made[c.AgainFor] = true
			missed = append(missed, reask{tool: c.Tool, failed: c.AgainFor})
			for _, t := range u.Offered {
				offered = appendNew(offered, t)
			}
		}
	}
	if len(missed) == 0 {
		return ""
	}
	which := "no tool the follow-up offered matches it"
	if len(missed) > 1 {
		which = "no tool the follow-ups offered matches them"
	}
	return "the model could not ask again " + reaskList(missed) + ": " + which + "; offered: " + offeredText(offered, "none")
}
