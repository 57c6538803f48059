package rules

import (
	"github.com/replaycheck/replaycheck/internal/harness/history"
	"github.com/replaycheck/replaycheck/internal/wire"
)

// Result is one scenario run on one target, or the runs of a repeated one
// judged together: its history, the verdicts of its checks, the overall
// verdict, and the headline counts reports show.
type Result struct {
	History  *history.History `json:"history"`
	Verdicts []Verdict        `json:"verdicts"`
	Verdict  Status           `json:"verdict"`
	Counts   Counts           `json:"counts"`
	// Repeat, when not nil, makes this the result of a repeated scenario's
	// runs judged together (see Aggregate): History, Counts and the checks
	// after the first (repeat) verdict are those of the run Repeat.Shown.
	Repeat *Repeat `json:"repeat,omitempty"`
}

// Counts are the headline numbers of a run, as reports show them.
type Counts struct {
	// Statuses are the HTTP statuses of the client's requests, in order.
	Statuses []int `json:"statuses"`
	Writes   int   `json:"writes"`
	Initial  int   `json:"initial"`
	FollowUp int   `json:"follow_up"`
	MCPCalls int   `json:"mcp_calls"`
	// Unknown counts the MCP calls a forwarding ledger forwarded whose
	// answer never came back: they may have run.
	Unknown int `json:"unknown,omitempty"`
	// Spawns and Exits count the stdio MCP server processes the target
	// started and those that ended during the run (0 over HTTP).
	Spawns int `json:"spawns"`
	Exits  int `json:"exits"`
	// Protocols are the MCP protocol versions the run's sessions
	// negotiated, in the order first seen (history.History.MCPProtocols);
	// omitted when no event said one.
	Protocols []wire.MCPProtocol `json:"protocols,omitempty"`
	// Upstream counts upstream requests by "path kind outcome", the seed's
	// `sort upstream.log | uniq -c` view.
	Upstream map[string]int `json:"upstream,omitempty"`
}

// Evaluate checks h and gathers its headline counts. A run whose scenario
// did not apply to the target (notApplicable) is Skipped with one verdict
// saying why, unless a replay rule failed: a duplicate write is one whether
// or not the scenario applied.
func Evaluate(h *history.History) Result {
	vs := Check(h)
	if why := notApplicable(h); why != "" && !ruleBroken(vs) {
		vs = []Verdict{skippedVerdict(why)}
	}
	c := Counts{
		Writes:    len(h.Writes()),
		Initial:   len(h.UpstreamOf(wire.KindInitial)),
		FollowUp:  len(h.UpstreamOf(wire.KindFollowUp)),
		MCPCalls:  len(h.Calls("")),
		Unknown:   len(unknownOutcome(h)),
		Protocols: h.MCPProtocols(),
	}
	for _, e := range h.MCP {
		switch e.Kind {
		case wire.MCPSpawn:
			c.Spawns++
		case wire.MCPExit:
			c.Exits++
		}
	}
	for _, x := range h.Requests {
		c.Statuses = append(c.Statuses, x.Status)
	}
	for _, u := range h.Upstream {
		if c.Upstream == nil {
			c.Upstream = map[string]int{}
		}
		c.Upstream[u.Path+" "+u.CountKey().String()]++
	}
	return Result{History: h, Verdicts: vs, Verdict: Overall(vs), Counts: c}
}
