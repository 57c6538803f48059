package rules

import (
	"fmt"
	"slices"
	"strings"

	"github.com/replaycheck/replaycheck/internal/harness/history"
	"github.com/replaycheck/replaycheck/internal/toolname"
	"github.com/replaycheck/replaycheck/internal/wire"
)

// What counts as the same call, and as one logical call.
//
// Two executions are of the same call when they are of the same MCP tool
// with the same arguments: equal as canonical JSON once the idempotency key
// is set aside (wire.CallArgs), in one client request. A logical call is
// one ask of the model: the calls the fake model issued with that tool
// (under any prefix a client puts before it) and those arguments, told
// apart by wire.ToolCall.Ask: a scripted call by its script step and
// attempt, so a re-sent model request answered from the same step is the
// same ask under a new call id, and a replayed one by its recorded id. A
// call asked for again because the client reported it failed
// (again_if_failed) is a logical call of its own only while an execution
// of the same call wrote nothing (a tool error, a read). A keyed call whose
// idempotency key an earlier execution of its tool in the request carried
// is no execution of its own: a keyed re-send (see keyedResends).
//
// Where the asks cannot be known (the model's calls were not recorded: a
// relayed model, an older history; or no ask names the tool with those
// arguments, as when a client rewrote them), executions are compared with
// the script's calls of their tool per request instead, and the verdict
// says so.

// callGroup is the executions of one call (tool and arguments) in one
// client request, and the model's asks of it there.
type callGroup struct {
	tool, args string
	execs      []int // indexes in h.MCP
	asks       int   // the model's own asks
	reasks     int   // asks after the client reported a call failed
	idle       int   // executions that wrote nothing
	byScript   bool  // no ask known: allowed is the script's count
	allowed    int
}

// replays returns how many executions beyond its logical calls g has.
func (g *callGroup) replays() int { return max(len(g.execs)-g.allowed, 0) }

// requestCalls is what one client request executed, call by call.
type requestCalls struct {
	groups  []*callGroup
	resent  int // keyed re-sends (see keyedResends)
	execs   int // executions, keyed re-sends not counted
	allowed int // logical calls over the groups
	// rewritten says the model asked for a tool with arguments no
	// execution of it had (a client that changes them), so its calls
	// were judged by the script's calls instead.
	rewritten bool
}

// replays returns the executions beyond their logical calls in r.
func (r *requestCalls) replays() int {
	n := 0
	for _, g := range r.groups {
		n += g.replays()
	}
	return n
}

// worst returns r's group with the most replays, the first on ties; nil
// when r has none.
func (r *requestCalls) worst() *callGroup {
	var w *callGroup
	for _, g := range r.groups {
		if w == nil || g.replays() > w.replays() {
			w = g
		}
	}
	return w
}

// logicalCalls groups the executions of h (see Executed) by client request
// and call, and counts each call's logical calls (see the comment above).
func logicalCalls(h *history.History) []requestCalls {
	n := max(len(h.Requests), 1)
	out := make([]requestCalls, n)
	resent := keyedResends(h)
	w := wrote(h)
	for _, i := range Executed(h) {
		e := h.MCP[i]
		r := &out[max(h.ExchangeAt(e.At.D()), 0)]
		if resent[i] {
			r.resent++
			continue
		}
		r.execs++
		var g *callGroup
		for _, x := range r.groups {
			if x.tool == e.Tool && x.args == e.Args {
				g = x
			}
		}
		if g == nil {
			g = &callGroup{tool: e.Tool, args: e.Args}
			r.groups = append(r.groups, g)
		}
		g.execs = append(g.execs, i)
		if !w[i] {
			g.idle++
		}
	}
	asks := modelAsks(h, n)
	for k := range out {
		r := &out[k]
		claimed := map[string]bool{}
		for _, g := range r.groups {
			if g.args == "" {
				continue
			}
			for ask, c := range asks[k] {
				if !toolname.Names(c.Tool, g.tool) || c.Args != g.args {
					continue
				}
				claimed[ask] = true
				if c.AgainFor != "" {
					g.reasks++
				} else {
					g.asks++
				}
			}
		}
		for _, g := range r.groups {
			if g.asks+g.reasks == 0 {
				// No ask of this call is known: the script's calls of
				// the tool that no other call of it claimed stand in,
				// with the unclaimed asks again of the tool.
				g.byScript = true
				for _, c := range asks[k] {
					r.rewritten = r.rewritten || g.args != "" && c.Args != "" && toolname.Names(c.Tool, g.tool)
				}
				own, again := unclaimed(asks[k], claimed, g.tool)
				g.asks, g.reasks = max(countOf(h.Setup.Tools, g.tool, 1)-own, 1), again
			}
			g.allowed = g.asks + min(g.reasks, g.idle)
			r.allowed += g.allowed
		}
	}
	return out
}

// unclaimed counts the asks of tool that no execution claimed: own are
// claimed asks of the model's own (the script's calls they stand for are
// taken), again the unclaimed asks again.
func unclaimed(asks map[string]wire.ToolCall, claimed map[string]bool, tool string) (own, again int) {
	for ask, c := range asks {
		switch {
		case !toolname.Names(c.Tool, tool):
		case claimed[ask] && c.AgainFor == "":
			own++
		case !claimed[ask] && c.AgainFor != "":
			again++
		}
	}
	return own, again
}

// modelAsks returns, for each of n client requests, the model's distinct
// asks (wire.ToolCall.Ask) in the answers of its time, each with its
// first call; calls with no ask are left out.
func modelAsks(h *history.History, n int) []map[string]wire.ToolCall {
	out := make([]map[string]wire.ToolCall, n)
	for i := range out {
		out[i] = map[string]wire.ToolCall{}
	}
	for _, u := range h.Upstream {
		i := max(h.ExchangeAt(u.At.D()), 0)
		if i >= n {
			continue
		}
		for _, c := range u.Calls {
			ask := c.Ask()
			if ask == "" {
				continue
			}
			if _, ok := out[i][ask]; !ok {
				out[i][ask] = c
			}
		}
	}
	return out
}

// keyedResends returns the indexes in h.MCP of the executed tools/call
// requests (see Executed) whose idempotency key an earlier call of the same
// tool in the same client request carried, that call executed or its
// outcome unknown: the server got a key it had seen again. The ledger
// answers such a re-send from the first call (it is no execution at all);
// a forwarded server's deduplication cannot be seen from outside, so these
// are taken as its re-sends of one logical write, on trust of the key.
func keyedResends(h *history.History) map[int]bool {
	type scope struct {
		exchange  int
		tool, key string
	}
	seen := map[scope]bool{}
	out := map[int]bool{}
	for _, i := range Executed(h) {
		e := h.MCP[i]
		if e.Key == "" {
			continue
		}
		s := scope{h.ExchangeAt(e.At.D()), e.Tool, e.Key}
		if seen[s] {
			out[i] = true
		}
		seen[s] = true
	}
	return out
}

// callText renders a call for verdicts: "commit_write {"entry":"x"}".
func callText(tool, args string) string {
	if args == "" {
		return tool
	}
	const most = 120
	if len(args) > most {
		args = args[:most] + "…"
	}
	return tool + " " + args
}

// groupText says what became of g: "commit_write {…} ran 3 times for 1
// logical tool call (the model asked once)".
func groupText(g *callGroup) string {
	asked := "the model asked " + times(g.asks)
	if g.byScript {
		asked = "no ask of the model's is known: the script calls it " + times(g.asks)
	}
	if g.reasks > 0 {
		asked += ", and again " + times(g.reasks) + " after the client reported it failed"
	}
	return fmt.Sprintf("%s ran %s for %s (%s)", callText(g.tool, g.args), times(len(g.execs)), plural(g.allowed, "logical tool call"), asked)
}

// times renders "once", "twice", "3 times".
func times(n int) string {
	switch n {
	case 1:
		return "once"
	case 2:
		return "twice"
	}
	return fmt.Sprintf("%d times", n)
}

// scriptNote says how logical calls were counted where the model asked
// for a tool with arguments none of its executions had; "" when it did not.
func scriptNote(r *requestCalls) string {
	if !r.rewritten {
		return ""
	}
	var tools []string
	for _, g := range r.groups {
		if g.byScript {
			tools = appendNew(tools, g.tool)
		}
	}
	slices.Sort(tools)
	return fmt.Sprintf("the model's calls of %s matched no execution's arguments (the client changed them), so its logical calls are the script's", strings.Join(tools, ", "))
}
