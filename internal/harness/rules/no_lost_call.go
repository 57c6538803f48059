package rules

import (
	"fmt"

	"github.com/replaycheck/replaycheck/internal/harness/history"
	"github.com/replaycheck/replaycheck/internal/wire"
)

func noLostCallRule() Rule {
	return Rule{
		Name:    "no-lost-call",
		Summary: "a tools/call lost before it ran is re-issued until it runs once",
		Doc: "A tools/call the server never ran because its request was lost on the way (refused before the tool " +
			"ran, its connection reset, its stdio server gone before executing it, its session gone) is re-issued, " +
			"so each call the model asked for runs once: writes equal the calls the script made of the tool. On MCP " +
			"2026-07-28 the spec asks the client to re-issue a request whose response stream broke; a client that " +
			"does not, and tells the model the call failed or succeeded, loses the call: it never ran and was not " +
			"re-issued. A re-issue is safe there only with an idempotency key the server honours (or a server that " +
			"honours cancellation before it commits), so a call without a key that is not re-issued is not judged (holding it " +
			"is the safe choice), and a call re-issued that the server refuses again is not the client's loss. A later call of the tool in the same client request that runs (the client's re-issue or " +
			"the model asking again) counts as the call running. Judged per client request and tool. Cannot judge " +
			"when no tools/call was lost before it ran, nor when the lost call was served at MCP 2025-xx (or at no " +
			"recorded version) and refused with an HTTP error or left unanswered: there the client cannot know it " +
			"did not run, and need not re-send it. In a run that killed the target and resumed it (faults.target), a call " +
			"the script asked for that ran in no life while the resumed run reports success (exit 0, a final answer) is " +
			"lost; unknown when the resumed run said nothing (killed again, past its deadline); a resumed run that " +
			"reports failure told the user.",
		Seed: "MCP 2026-07-28 (SEP-2575): \"a broken response stream loses the in-flight request: the client must " +
			"re-issue it as a new request with a new id\" (go-sdk v1.8.0 docs/protocol.md, Resumability and Redelivery); " +
			"issue 36: shipped clients that do not re-issue a call dropped before it ran make 0 writes, a lost call",
		Fix: "Re-issue a tools/call whose stream broke before it ran as a new request: with the same idempotency " +
			"key for a keyed tool, so the re-issue is safe whether or not it ran; give non-idempotent tools a key, " +
			"or a server that honours cancellation before it commits, so they can be re-issued too.",
		Example: `# scenarios/mcp2026/drop-before-execute.yaml, trimmed
name: keyed tools/call refused before it ran
request: {endpoint: chat}
model: [{call: commit_write_keyed, arguments: {entry: "{{entry}}"}}, {say: done}]
faults:
  mcp: [{tool: commit_write_keyed, fail_before_execute: {}, times: once}]
expect:
  writes: 1
  rules: [no-lost-call]
`,
		Check: noLostCall,
	}
}

// lostBeforeRun reports whether the fault event mcp[i] lost a tools/call
// before it ran in a way the client must make good by re-issuing it: its
// session was gone (404, on any protocol), or, on a stateless protocol,
// its request was refused with an HTTP error or left unanswered. legacy
// reports a call lost so on 2025-xx (or at no recorded version), which the
// client cannot tell from one that ran.
func lostBeforeRun(mcp []wire.MCPEvent, i int) (lost, legacy bool) {
	e := mcp[i]
	m, ok := e.FaultMeaning()
	if !ok || m.Ran != wire.ToolRanNo || e.Tool == "" {
		return false, false
	}
	switch m.ClientSees {
	case wire.ClientSeesSessionGone:
		return true, false
	case wire.ClientSeesHTTPError, wire.ClientSeesNoAnswer:
		stateless := servedAt(mcp, i).Stateless()
		return stateless, !stateless
	}
	return false, false
}

// noLostCall finds, for each client exchange and tool, whether a tools/call
// was lost before it ran (see lostBeforeRun), and counts the calls of that
// tool in the exchange that ran (wrote, or were answered from an earlier
// call with the same key) against the calls the script made of it.
func noLostCall(h *history.History) Verdict {
	if v, ok := lostOnResume(h); ok {
		return v
	}
	var marked []int
	legacy := 0
	for i := range h.MCP {
		lost, old := lostBeforeRun(h.MCP, i)
		if old {
			legacy++
		}
		if lost {
			marked = append(marked, i)
		}
	}
	order, _ := scopes(h, marked)
	losses := len(marked)
	const expected = "every tools/call lost before it ran re-issued until it ran once"
	if losses == 0 {
		if legacy > 0 {
			return unknown(expected, plural(legacy, "tools/call")+" lost before it ran at MCP 2025-xx (or at no recorded version), where the client cannot know it did not run and need not re-send it")
		}
		return unknown(expected, "no tools/call was lost before it ran")
	}
	ran, dedup := wrote(h), deduplicated(h)
	missing, held := 0, 0
	for _, s := range order {
		executed, attempts, keyed := 0, 0, false
		for j, c := range h.MCP {
			if c.Kind != wire.MCPCall || c.Tool != s.tool || h.ExchangeAt(c.At.D()) != s.exchange {
				continue
			}
			attempts++
			keyed = keyed || c.Key != ""
			if ran[j] || dedup[j] {
				executed++
			}
		}
		want := countOf(h.Setup.Tools, s.tool, 1)
		switch {
		case executed >= want, attempts > want:
			// It ran, or the client re-issued it (a server that refuses
			// every attempt is not the client's loss).
		case !keyed:
			held += want - executed // a call without a key: not re-issuing it is the safe choice
		default:
			missing += want - executed
		}
	}
	writes := plural(len(h.Writes()), "write")
	if missing > 0 {
		return judged(false, expected, fmt.Sprintf("lost call: %s never ran and %s not re-issued (%s; %s lost before it ran)",
			plural(missing, "tools/call"), wasWere(missing), writes, plural(losses, "call")))
	}
	if held > 0 {
		return unknown(expected, fmt.Sprintf("%s without an idempotency key lost before it ran and not re-issued: holding a call that may not be re-sent safely is the safe choice (%s)",
			plural(held, "tools/call"), writes))
	}
	return judged(true, expected, fmt.Sprintf("every lost call re-issued and run (%s after %s lost before it ran)", writes, plural(losses, "call")))
}

// wasWere is "was" for one, "were" for more.
func wasWere(n int) string {
	if n == 1 {
		return "was"
	}
	return "were"
}
