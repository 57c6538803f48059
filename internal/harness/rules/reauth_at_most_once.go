package rules

import (
	"fmt"

	"github.com/replaycheck/replaycheck/internal/harness/history"
	"github.com/replaycheck/replaycheck/internal/wire"
)

func reauthAtMostOnceRule() Rule {
	return Rule{
		Name:    "reauth-at-most-once",
		Summary: "a tools/call refused with 401 is re-sent at most once",
		Doc: "A tools/call the MCP server refused with 401 Unauthorized did not run, so sending it again after " +
			"re-authenticating is safe — once per logical call: from the first refusal on, the client request sends at " +
			"most two tools/call requests of the tool for each call of it the script still had to make. A second refusal is terminal: " +
			"the target must tell the model (or the app) that the call was refused and did not run, not re-authenticate " +
			"and send it again and again. Judged per client request and tool. Cannot judge when no call was refused " +
			"as unauthorized.",
		Seed: "004 #2: \"On 401, or an MCP 403 insufficient_scope, refresh or re-authorize once, then treat a second failure " +
			"as terminal\"; refresh_auth_once_then_terminal: [401, insufficient_scope_403]",
		Fix: "On a 401 from the MCP server, re-authenticate and re-send the call once; on a second refusal " +
			"tell the model the call was refused and did not run.",
		Example: `# scenarios/mcp/unauthorized.yaml, trimmed
name: authorization refused for good
request: {endpoint: responses}
faults:
  mcp: [{tool: commit_write, unauthorized: {}}]
expect:
  writes: 0
  mcp: {calls: {commit_write: {max: 2}}}
  rules: [reauth-at-most-once]
`,
		Check: reauthAtMostOnce,
	}
}

// reauthAtMostOnce finds, for each client exchange and tool, the first call
// refused as unauthorized and counts the calls of that tool from it on:
// each call of that tool the script still had to make may go twice.
func reauthAtMostOnce(h *history.History) Verdict {
	const expected = "each tools/call refused as unauthorized sent again at most once (after re-authenticating)"
	type scope struct {
		exchange int
		tool     string
	}
	first := map[scope]history.Duration{}
	var order []scope
	refusals := 0
	for _, e := range h.MCP {
		if m, ok := e.FaultMeaning(); !ok || m.ClientSees != wire.ClientSeesUnauthorized {
			continue
		}
		refusals++
		s := scope{h.ExchangeAt(e.At.D()), e.Tool}
		if _, ok := first[s]; !ok {
			first[s] = e.At
			order = append(order, s)
		}
	}
	if refusals == 0 {
		return unknown(expected, "no tools/call was refused as unauthorized")
	}
	worst, worstTool, observed := 0, "", ""
	for _, s := range order {
		before, from := 0, 0
		for _, c := range h.Calls(s.tool) {
			if h.ExchangeAt(c.At.D()) != s.exchange {
				continue
			}
			// The refused call itself is the last call before its fault.
			if c.At <= first[s] {
				before++
			} else {
				from++
			}
		}
		from, before = from+1, max(before-1, 0)
		left := max(countOf(h.Setup.Tools, s.tool, 1)-before, 1)
		if over := from - 2*left; over > worst || worstTool == "" {
			worst, worstTool = over, s.tool
			observed = fmt.Sprintf("%s refused as unauthorized; %s of %s from the first refusal on, for %s",
				plural(refusals, "tools/call"), plural(from, "call"), s.tool, plural(left, "logical call"))
		}
	}
	return judged(worst <= 0, expected, observed)
}
