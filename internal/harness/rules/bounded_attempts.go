package rules

import (
	"fmt"

	"github.com/replaycheck/replaycheck/internal/harness/history"
	"github.com/replaycheck/replaycheck/internal/wire"
)

func boundedAttemptsRule() Rule {
	return Rule{
		Name:    "bounded-attempts",
		Summary: "attempts per client request stay under the retry cap",
		Doc: "Attempts stay under a cap: within one client request no kind of upstream request (initial, " +
			"follow_up) is sent more often than the scenario's max_attempts, or the target's num_retries+1 " +
			"(doubled with a fallback). Cannot judge without a cap or without an upstream failure.",
		Seed: "004 #2: \"Cap both attempts and total wall time\" (this rule checks attempts); 003 R10: \"Four 503 responses use " +
			"all four allowed executions, so there is no fifth attempt\"",
		Fix: "Cap the attempts of each model request (num_retries+1, per fallback model) and return the last " +
			"error once the cap is reached.",
		Example: `# scenarios/retry/transient.yaml, trimmed
name: attempts are capped
request: {endpoint: chat}
faults:
  upstream: [{on: initial, respond: {status: 503}, times: 10}]
expect:
  writes: 0
  rules: [bounded-attempts]
`,
		Check: boundedAttempts,
	}
}

// boundedAttempts counts, per client exchange and upstream kind, the upstream
// requests, and compares the largest with the cap.
func boundedAttempts(h *history.History) Verdict {
	cap := 0
	switch {
	case h.Expect.MaxAttempts != nil:
		cap = *h.Expect.MaxAttempts
	case h.Setup.NumRetries >= 0:
		cap = h.Setup.NumRetries + 1
		if h.Setup.Fallbacks {
			cap *= 2
		}
	}
	if cap == 0 {
		return unknown("attempts under a cap", "no attempt cap is known for this target")
	}
	failed := false
	for _, u := range h.Upstream {
		failed = failed || failure(u)
	}
	if !failed {
		return unknown(fmt.Sprintf("at most %s per client request", plural(cap, "attempt")), "no upstream request failed, so nothing was retried")
	}
	worst, worstKind := 0, wire.RequestKind("")
	for i := range max(len(h.Requests), 1) {
		if len(h.Requests) == 0 {
			i = -1
		}
		n := map[wire.RequestKind]int{}
		for _, u := range upstreamIn(h, i) {
			n[u.Kind]++
			if n[u.Kind] > worst {
				worst, worstKind = n[u.Kind], u.Kind
			}
		}
	}
	return judged(worst <= cap, fmt.Sprintf("at most %s of each kind per client request", plural(cap, "attempt")),
		fmt.Sprintf("at most %s in one client request", plural(worst, string(worstKind)+" request")))
}
