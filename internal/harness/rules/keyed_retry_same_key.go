package rules

import (
	"fmt"

	"github.com/replaycheck/replaycheck/internal/harness/history"
	"github.com/replaycheck/replaycheck/internal/wire"
)

func keyedRetrySameKeyRule() Rule {
	return Rule{
		Name:    "keyed-retry-same-key",
		Summary: "a retried keyed write reuses its idempotency key",
		Doc: "A retried keyed write reuses one idempotency key per logical action, so the server sees one " +
			"key and dedupes. Executions with one key count as one logical write: the ledger answers a re-send from the " +
			"first call; a forwarded server's deduplication cannot be seen from outside, so its re-sends with a key it " +
			"had seen are taken as deduplicated and counted apart. Cannot judge when no keyed call reached the server or " +
			"the keyed call was not retried.",
		Seed: "004 #1: \"Generate one key per logical action (not per attempt) and reuse it on every retry\"; 003 R13: \"the same " +
			"write protected by an application-verified idempotency key and server deduplication\" may be called again",
		Fix: "Generate the idempotency key once per logical action, before the first attempt, and send that " +
			"same key on every retry.",
		Example: `# scenarios/retry/keyed.yaml, trimmed
name: retried keyed write reuses its key
request: {endpoint: chat, prompt: "Call commit_write_keyed once with entry {{entry}}, then reply done."}
model: [{call: commit_write_keyed, arguments: {entry: "{{entry}}"}}, {say: done}]
faults:
  upstream: [{on: follow_up, respond: {status: 500}, times: once}]
expect:
  writes: 1
  keys: 1
  rules: [keyed-retry-same-key]
`,
		Check: keyedRetrySameKey,
	}
}

// keyedRetrySameKey compares, in each client request whose keyed call was
// sent more than once, the distinct idempotency keys with the logical keyed
// calls the script makes per request.
func keyedRetrySameKey(h *history.History) Verdict {
	const expected = "one idempotency key per logical keyed call"
	keyedTools := keyedTools(h)
	logical := 0
	for _, t := range h.Setup.Tools {
		if keyedTools[t] {
			logical++
		}
	}
	logical = max(logical, 1)
	n := max(len(h.Requests), 1)
	attempts := make([]int, n)
	keys := make([]map[string]bool, n)
	total := 0
	for _, e := range h.MCP {
		if !keyedTools[e.Tool] {
			continue
		}
		i := max(h.ExchangeAt(e.At.D()), 0)
		if e.Kind == wire.MCPCall {
			attempts[i]++
			total++
		}
		if e.Key != "" && e.Kind != wire.MCPCall {
			if keys[i] == nil {
				keys[i] = map[string]bool{}
			}
			keys[i][e.Key] = true
		}
	}
	if total == 0 {
		return unknown(expected, "no keyed tool call reached the MCP server")
	}
	retried, worst := -1, -1
	for i := range n {
		if attempts[i] <= logical {
			continue
		}
		if retried < 0 {
			retried = i
		}
		if len(keys[i]) > logical && worst < 0 {
			worst = i
		}
	}
	if retried < 0 {
		return unknown(expected, fmt.Sprintf("the keyed call was not retried (%s)", plural(total, "attempt")))
	}
	i := retried
	if worst >= 0 {
		i = worst
	}
	where := ""
	if n > 1 {
		where = fmt.Sprintf(" in request %d of %d", i+1, n)
	}
	writes := plural(len(h.Writes()), "write")
	if resent := len(keyedResends(h)); resent > 0 {
		writes += fmt.Sprintf("; %s with a key an earlier call had: one logical write per key (whether the server deduplicated them cannot be seen from outside)", plural(resent, "keyed re-send"))
	}
	return judged(worst < 0, fmt.Sprintf("%s across %s%s", plural(logical, "idempotency key"), plural(attempts[i], "attempt"), where),
		fmt.Sprintf("%s (%s)", plural(len(keys[i]), "key"), writes))
}
