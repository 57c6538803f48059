package rules

import "github.com/replaycheck/replaycheck/internal/harness/history"

// Replay places an execution among the executions of its logical call.
type Replay struct {
	// N is 1 for an execution within the model's asks of its call (tool
	// and arguments, in its client request), and 2 and up for the
	// executions beyond them: the replays, numbered as no-replay-after-dispatch
	// counts them.
	N int
	// First is the index in h.MCP of the call's first execution.
	First int
}

// Replays numbers the executions of h (see Executed) against the model's
// asks of each call, as no-replay-after-dispatch judges them (the script's
// calls stand in where no ask is known): keyed by index in h.MCP. A keyed
// re-send, which is no execution of its own, is not in it.
func Replays(h *history.History) map[int]Replay {
	out := map[int]Replay{}
	for _, r := range logicalCalls(h) {
		for _, g := range r.groups {
			for k, i := range g.execs {
				out[i] = Replay{N: max(k+1-g.allowed, 0) + 1, First: g.execs[0]}
			}
		}
	}
	return out
}
