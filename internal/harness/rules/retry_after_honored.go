package rules

import (
	"fmt"
	"time"

	"github.com/replaycheck/replaycheck/internal/harness/history"
)

func retryAfterHonoredRule() Rule {
	return Rule{
		Name:    "retry-after-honored",
		Summary: "a retry waits at least as long as Retry-After asks",
		Doc: "After an upstream answer with Retry-After (seconds) or retry-after-ms, the next upstream request " +
			"of the same client request for the same model comes no sooner than the wait asked for (a fallback to " +
			"another model is not a retry). Cannot judge when no answer " +
			"asked for a wait, or when no upstream request followed one within its client request (no retry, so " +
			"no wait to measure: a client that never retries is not credited with honouring Retry-After), and when " +
			"the harness was starved by as much as the retry's margin over the wait (a retry sent at once and held up " +
			"by a busy machine looks like one that waited).",
		Seed: "004 #2: \"Honor Retry-After (seconds or an HTTP date) on 429/503 as the minimum wait, but cap it: if the server asks " +
			"for longer than your remaining time budget, stop now\"; 003 R03 \"honors the service’s two-second rate-limit delay " +
			"instead of using its shorter calculated delay\"",
		Fix: "Read Retry-After (seconds or an HTTP date) and retry-after-ms and wait at least that long " +
			"before the next attempt; give up at once when the wait is longer than your time budget.",
		Example: `# scenarios/retry/transient.yaml, trimmed
name: Retry-After seconds is honoured
request: {endpoint: messages}
faults:
  upstream: [{on: initial, respond: {status: 503, headers: {Retry-After: "1"}}, times: once}]
expect:
  status: 200
  rules: [retry-after-honored]
`,
		Check: retryAfterHonored,
	}
}

// retryAfterHonored compares, for each answer that asked for a wait, the gap
// to the next upstream request of the same client exchange and model with
// the wait.
func retryAfterHonored(h *history.History) Verdict {
	const expected = "waits that respect Retry-After"
	asked, measured, dated := 0, 0, 0
	var exp, obs, starvedWhy string
	for i, u := range h.Upstream {
		wait, ok := u.AskedWait()
		if !ok {
			if header(u, "retry-after") != "" {
				dated++
			}
			continue
		}
		asked++
		x := h.ExchangeAt(u.At.D())
		next := -1
		for j := i + 1; j < len(h.Upstream); j++ {
			if v := h.Upstream[j]; h.ExchangeAt(v.At.D()) == x && v.Model == u.Model {
				next = j
				break
			}
		}
		if next < 0 {
			continue
		}
		measured++
		gap := h.Upstream[next].At.D() - u.At.D()
		exp = fmt.Sprintf("a wait of at least %s after the %s", wait, label(u))
		obs = fmt.Sprintf("the next upstream request %s later", gap.Round(time.Millisecond))
		if gap < wait {
			return judged(false, exp, obs)
		}
		if why := starvedWait(h, u.At.D(), h.Upstream[next].At.D(), wait); why != "" && starvedWhy == "" {
			starvedWhy = why + " (" + exp + ", " + obs + ")"
		}
	}
	switch {
	case asked == 0 && dated > 0:
		return unknown(expected, "Retry-After was an HTTP date, which cannot be measured against the run's clock")
	case asked == 0:
		return unknown(expected, "no upstream answer asked for a wait")
	case measured == 0:
		return unknown(expected, fmt.Sprintf("no upstream request followed the %s that asked for a wait, so no wait could be measured", plural(asked, "answer")))
	case starvedWhy != "":
		v := unknown(expected, starvedWhy)
		v.Starved = true
		return v
	case measured > 1:
		exp = fmt.Sprintf("each of %d retries to wait as asked", measured)
		obs = "every one waited at least as long (the last: " + obs + ")"
	}
	return judged(true, exp, obs)
}
