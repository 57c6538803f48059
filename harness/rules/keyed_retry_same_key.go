package rules

import (
	"fmt"

	"github.com/replaycheck/replaycheck/harness/history"
)

func keyedRetrySameKeyRule() Rule {
	return Rule{
		Name: "keyed-retry-same-key",
		Doc: "A retried keyed write reuses one idempotency key per logical action, so the server sees one " +
			"key and dedupes. Cannot judge when no keyed call reached the server or the keyed call was not retried.",
		Seed:  "004 #1 and 003: one key per logical action (not per attempt), reused on every retry",
		Check: keyedRetrySameKey,
	}
}

// keyedRetrySameKey compares the distinct idempotency keys with the logical
// keyed calls, once a keyed call was sent more than once.
func keyedRetrySameKey(h *history.History) Verdict {
	const expected = "one idempotency key per logical keyed call"
	keyedTools := map[string]bool{}
	for _, e := range h.MCP {
		if e.Key != "" || e.Kind == history.MCPResult && e.Detail == "dedup" {
			keyedTools[e.Tool] = true
		}
	}
	attempts := 0
	for _, e := range h.Calls("") {
		if keyedTools[e.Tool] {
			attempts++
		}
	}
	if attempts == 0 {
		return unknown(expected, "no keyed tool call reached the MCP server")
	}
	logical := 0
	for _, t := range h.Setup.Tools {
		if keyedTools[t] {
			logical++
		}
	}
	logical *= max(len(h.Requests), 1)
	if logical == 0 {
		logical = 1
	}
	if attempts <= logical {
		return unknown(expected, fmt.Sprintf("the keyed call was not retried (%s)", plural(attempts, "attempt")))
	}
	keys := len(h.Keys())
	return judged(keys <= logical, fmt.Sprintf("%s across %s", plural(logical, "idempotency key"), plural(attempts, "attempt")),
		fmt.Sprintf("%s (%s)", plural(keys, "key"), plural(len(h.Writes()), "write")))
}
