package rules

import (
	"fmt"
	"slices"

	"github.com/replaycheck/replaycheck/internal/harness/history"
	"github.com/replaycheck/replaycheck/internal/wire"
)

func errorSurfacesRule() Rule {
	return Rule{
		Name:    "error-surfaces",
		Summary: "a model call that fails after a tool ran reaches the app as an error",
		Doc: "When a model call fails after a tool call of the same client request reached the MCP server (so replay would be unsafe), " +
			"the client gets an explicit error — an error status, an SSE error event or a cut stream — never a " +
			"hang and never an invented success. A success after the target retried the follow-up call alone " +
			"(no tool ran again) is the model's answer and passes. Cannot judge when no upstream failure followed a dispatched call.",
		Seed: "000 (LiteLLM): \"the client now gets the error right away\" (After: the same 500, one write), and its caveat " +
			"\"Retrying only the follow-up call could be a later improvement\"; 003: \"Return the final failure status to the agent " +
			"instead of inventing a result\"; 004 #5: \"Failed TUI worker requests now return an error instead of leaving the caller hanging\"",
		Fix: "When a model call fails after a tool call ran and you will not retry it, return the failure to " +
			"the caller at once (its status, or an SSE error event); never hang and never invent a success.",
		Example: `# scenarios/seed/fault-on-chat.yaml, trimmed
name: follow-up 500 reaches the app
request: {endpoint: chat}
faults:
  upstream: [{on: follow_up, respond: {status: 500}, times: always}]
expect:
  writes: 1
  rules: [error-surfaces]
`,
		Check: errorSurfaces,
	}
}

// errorSurfaces finds the first upstream failure that followed an executed
// tool call of the same client exchange and judges that exchange.
func errorSurfaces(h *history.History) Verdict {
	const expected = "an explicit error to the client"
	ex := executions(h)
	if len(ex) == 0 {
		return unknown(expected, "no tool call reached the MCP server")
	}
	for _, u := range h.Upstream {
		if !failure(u) {
			continue
		}
		i := h.ExchangeAt(u.At.D())
		if i < 0 {
			return unknown(expected, "the client sent no request")
		}
		if !slices.ContainsFunc(ex, func(e wire.MCPEvent) bool { return e.At.D() <= u.At.D() && h.ExchangeAt(e.At.D()) == i }) {
			continue
		}
		x := h.Requests[i]
		exp := fmt.Sprintf("an explicit error to the client after the dispatched tool call and the upstream %s", label(u))
		switch {
		case x.Client != nil && x.Client.Killed:
			return judged(false, exp, "the client did not exit before its deadline (a hang)")
		case x.Client != nil && x.Client.Exit != 0:
			return judged(true, exp, fmt.Sprintf("the client exited with code %d", x.Client.Exit))
		case x.Client != nil && retriedSafely(h, u, i, ex):
			return judged(true, exp, "the client exited 0 after a retried follow-up that ran no tool again (a real answer, not an invented one)")
		case x.Client != nil:
			return judged(false, exp, "the client exited 0 (an invented success)")
		case x.TimedOut:
			return judged(false, exp, "no answer before the deadline (a hang)")
		case x.Status >= 400:
			return judged(true, exp, fmt.Sprintf("HTTP %d", x.Status))
		case x.ErrorEvents > 0:
			return judged(true, exp, fmt.Sprintf("HTTP %d with %s", x.Status, plural(x.ErrorEvents, "SSE error event")))
		case x.Stream && !x.Done:
			return judged(true, exp, fmt.Sprintf("HTTP %d and a stream cut before its end", x.Status))
		case x.Status == 0:
			return judged(true, exp, "a transport error: "+x.TransportError)
		case retriedSafely(h, u, i, ex):
			return judged(true, exp, fmt.Sprintf("HTTP %d from a retried follow-up that ran no tool again (a real answer, not an invented one)", x.Status))
		default:
			return judged(false, exp, fmt.Sprintf("HTTP %d and a complete answer (an invented success)", x.Status))
		}
	}
	return unknown(expected, "no upstream failure followed the dispatched tool call")
}

// retriedSafely reports whether, after the upstream failure u in client
// exchange i, the target retried the follow-up call alone: a later follow-up
// of the same exchange was answered, and no tool call executed after u. The
// success the client then gets is the model's, not an invented one.
func retriedSafely(h *history.History, u wire.UpstreamRequest, i int, ex []wire.MCPEvent) bool {
	for _, e := range ex {
		if e.At.D() > u.At.D() && h.ExchangeAt(e.At.D()) == i {
			return false
		}
	}
	for _, v := range h.Upstream {
		if v.At.D() > u.At.D() && v.Kind == wire.KindFollowUp && !failure(v) && h.ExchangeAt(v.At.D()) == i {
			return true
		}
	}
	return false
}
