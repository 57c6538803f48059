package rules

import (
	"fmt"
	"strings"

	"github.com/replaycheck/replaycheck/internal/harness/history"
	"github.com/replaycheck/replaycheck/internal/wire"
)

func noReplayAmbiguousMCPRule() Rule {
	return Rule{
		Name:    "no-replay-ambiguous-mcp",
		Summary: "a tools/call whose outcome is unknown (lost after execution) is not re-sent",
		Doc: "A tools/call whose connection dropped after the server executed it (the outcome is unknown to " +
			"the client) is not sent again, whatever idempotentHint or readOnlyHint the tool advertises; also when " +
			"the server forgot the session with it (expire_session after execute): the client must initialize a new " +
			"session, and must not take the session's end as proof that the call did not run; and also when the stdio " +
			"server process ran it and then died, hung or broke its stdout before answering (stdio_exit after_execute, " +
			"stdio_hang, stdio_malformed_line): a re-send on a respawned process is a replay; and also when a forwarding ledger " +
			"got no answer from the real server (forward_unknown): the call may have run. A process that died before " +
			"executing the call (stdio_exit before_execute) leaves nothing ambiguous: sending it again is safe. The one " +
			"exception is a keyed write re-sent with the same idempotency key that the server deduplicates (answers " +
			"from the first call, writing nothing): that re-send passes; an unkeyed re-send, or one with a new key " +
			"that writes again, fails; a forwarded server's deduplication cannot be seen from outside, so there a " +
			"re-send with the same key is taken as deduplicated and said so. Judged per client request and tool, beyond the calls of that tool the script " +
			"still had to make. Executions are counted the same on every MCP protocol version; the verdict says who must prevent a duplicate under the version the call was served at (2026-07-28: the server or the gateway, since the client must re-issue; 2025-xx: the client). Cannot judge when no tools/call connection was dropped, nor stdio server lost, after execution, nor forwarded call left unanswered.",
		Seed: "001 (agent-framework #9247): \"avoid automatically replaying an operation whose execution outcome is unknown\"; " +
			"idempotentHint and readOnlyHint \"are not a reliable guarantee of replay safety\". The keyed exception is 004 #1 " +
			"(\"For a write, that re-issue is only safe with an idempotency key\"; \"If the tool has no key, never resend\") and 003 R13; " +
			"over stdio, hermes-agent PR #106546 (\"a stdio server dying mid-call no longer replays the tool call\")",
		Fix: "When a tools/call's connection drops, its session expires or its stdio server dies before the " +
			"answer, tell the model the outcome is unknown instead of re-sending the call; re-send only a " +
			"keyed write, with the same key, to a server that deduplicates. On MCP 2026-07-28 the spec asks the " +
			"client to re-issue a call whose response stream broke, so there the duplicate is the server's to " +
			"prevent (honour an idempotency key, or honour cancellation before committing) or the gateway's " +
			"(hold non-idempotent tools instead of re-issuing them); on 2025-xx it is the client's replay.",
		Example: `# scenarios/mcp/ambiguous-disconnect.yaml, trimmed
name: tools/call dropped after execute
request: {endpoint: chat}
faults:
  mcp: [{tool: commit_write, drop_after_execute: {}, times: once}]
expect:
  writes: 1
  rules: [no-replay-ambiguous-mcp]
`,
		Check: noReplayAmbiguousMCP,
	}
}

// ambiguous reports whether e is a fault that left a tools/call's outcome
// unknown to the client: it ran, and the connection closed before the answer
// (drop_after_execute, or expire_session after execute), or the stdio server
// process carrying it exited, hung or wrote a line that is not JSON-RPC
// before the answer (stdio_exit after_execute, stdio_hang,
// stdio_malformed_line), or a forwarding ledger's call whose answer never
// came back from the real server (forward_unknown). A stdio process that
// exited before executing the
// call (stdio_exit before_execute), or after answering it, leaves nothing
// unknown.
// The table says which (wire.ToolRanUnknown).
func ambiguous(e wire.MCPEvent) bool {
	m, ok := e.FaultMeaning()
	return ok && m.Ran == wire.ToolRanUnknown
}

// noReplayAmbiguousMCP finds, for each client exchange and tool, the first
// ambiguous fault (see ambiguous) and counts the calls of that tool that followed it
// in the exchange beyond the calls of that tool the script still had to make
// (a script may call a tool more than once); a re-send the server answered
// from an earlier call with the same idempotency key is not a replay.
func noReplayAmbiguousMCP(h *history.History) Verdict {
	var marked []int
	drops, lost, unanswered := 0, 0, 0 // of the drops, stdio servers lost and forwarded calls unanswered
	for i, e := range h.MCP {
		if !ambiguous(e) {
			continue
		}
		drops++
		marked = append(marked, i)
		switch m, _ := e.FaultMeaning(); {
		case m.Stdio != wire.StdioNone:
			lost++
		case m.Source == wire.FromForwarder:
			unanswered++
		}
	}
	order, first := scopes(h, marked)
	if drops == 0 {
		return unknown("no tools/call re-sent after its connection dropped", "no tools/call connection was dropped, nor stdio server lost, after execution")
	}
	dedup, keyed := deduplicated(h), keyedResends(h)
	replayed, deduped, trusted := 0, 0, 0
	for _, s := range order {
		before, after, afterDedup, afterKeyed := 0, 0, 0, 0
		for j, c := range h.MCP {
			if c.Kind != wire.MCPCall || c.Tool != s.tool || h.ExchangeAt(c.At.D()) != s.exchange {
				continue
			}
			switch {
			case j < first[s]:
				before++
			case dedup[j]:
				after++
				afterDedup++
			case keyed[j]:
				after++
				afterKeyed++
			default:
				after++
			}
		}
		left := max(countOf(h.Setup.Tools, s.tool, 1)-before, 0)
		resent := max(after-left, 0)
		d := min(afterDedup, resent)
		k := min(afterKeyed, resent-d)
		replayed += resent - d - k
		deduped += d
		trusted += k
	}
	var whats []string
	if n := drops - lost - unanswered; n > 0 {
		whats = append(whats, plural(n, "dropped connection"))
	}
	if lost > 0 {
		whats = append(whats, plural(lost, "stdio server lost after execution"))
	}
	if unanswered > 0 {
		whats = append(whats, plural(unanswered, "forwarded call")+" whose answer never came back")
	}
	what := joinAnd(whats)
	expected := fmt.Sprintf("no tools/call re-sent after %s, unless re-sent with the same idempotency key and deduplicated by the server", what)
	writes := plural(len(h.Writes()), "write")
	if len(keyedTools(h)) > 0 {
		writes += ", " + plural(len(h.Keys()), "idempotency key")
	}
	var parts []string
	if replayed > 0 {
		parts = append(parts, fmt.Sprintf("%d re-sent and executed again", replayed))
	}
	if deduped > 0 {
		parts = append(parts, fmt.Sprintf("%d re-sent with the same idempotency key and deduplicated by the server", deduped))
	}
	if trusted > 0 {
		parts = append(parts, fmt.Sprintf("%d re-sent with the same idempotency key (taken as deduplicated by the server: that cannot be seen from outside)", trusted))
	}
	observed := "no tools/call re-sent"
	if len(parts) > 0 {
		observed = strings.Join(parts, ", ")
	}
	observed += " (" + writes + ")"
	if owner := duplicateOwner(servedAt(h.MCP, first[order[0]])); replayed > 0 && owner != "" {
		observed += ": " + owner
	}
	return judged(replayed == 0, expected, observed)
}

// countOf counts tool in tools, or returns least when the script names it fewer
// times (a script the harness does not know counts as one call).
func countOf(tools []string, tool string, least int) int {
	n := 0
	for _, t := range tools {
		if t == tool {
			n++
		}
	}
	return max(n, least)
}
