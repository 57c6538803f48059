package rules

import (
	"fmt"

	"github.com/replaycheck/replaycheck/harness/history"
	"github.com/replaycheck/replaycheck/internal/wire"
)

func noReplayAfterDispatchRule() Rule {
	return Rule{
		Name: "no-replay-after-dispatch",
		Doc: "A tool call that reached the MCP server is executed at most once per logical call: " +
			"no retry and no fallback re-runs it; judged per client request. A keyed call re-sent with the same " +
			"idempotency key that the server deduplicates (answers from the first call, writing nothing) is not " +
			"executed again; a call a fail_before_execute fault refused was not executed. A call the model asked for " +
			"again because the client reported the first failed (again_if_failed) is no planned call: a logical call of its " +
			"own when the first wrote nothing (a tool error); when the first had written, its execution is a duplicate the " +
			"client's report caused. Cannot judge when no tool call reached the server.",
		Seed: "000 (LiteLLM): \"The router neither retries nor falls back on a tagged error\" — under fault_on each endpoint " +
			"wrote 3 lines before the fix and 1 after; the keyed exception is 004 #1 (\"Generate one key per logical action " +
			"(not per attempt) and reuse it on every retry\") and 003 R13",
		Check: noReplayAfterDispatch,
	}
}

// noReplayAfterDispatch compares, for each client request, the tools/call
// requests the ledger executed during it with the logical calls the
// scenario's script makes per request, so a replay in one request is not
// hidden by another request that executed fewer.
func noReplayAfterDispatch(h *history.History) Verdict {
	ex := executions(h)
	if len(ex) == 0 {
		return unknown("each dispatched tool call executed at most once", "no tool call reached the MCP server, so nothing could be replayed")
	}
	per := h.Setup.ToolCalls
	if per == 0 {
		per = 1
	}
	n := max(len(h.Requests), 1)
	byExchange := make([][]wire.MCPEvent, n)
	for _, e := range ex {
		i := max(h.ExchangeAt(e.At.D()), 0)
		byExchange[i] = append(byExchange[i], e)
	}
	deduped := make([]int, n)
	for i := range deduplicated(h) {
		deduped[max(h.ExchangeAt(h.MCP[i].At.D()), 0)]++
	}
	// A call the model asked for again after a call that wrote nothing is
	// a logical call of its own (see asked).
	again := asked(h)
	worst := 0
	for i, es := range byExchange {
		if len(es)-again[i] > len(byExchange[worst])-again[worst] {
			worst = i
		}
	}
	es := byExchange[worst]
	per += again[worst]
	extra := ""
	if d := deduped[worst]; d > 0 {
		extra = fmt.Sprintf(" and %s the server deduplicated by idempotency key", plural(d, "keyed re-send"))
	}
	if s := reaskText(reasks(h)[worst]); s != "" {
		extra += "; " + s
	}
	if n == 1 {
		return judged(len(es) <= per, fmt.Sprintf("at most %s for %s", plural(per, "execution"), plural(per, "logical tool call")),
			fmt.Sprintf("%s (%s)%s", plural(len(es), "execution"), tally(byTool(es)), extra))
	}
	return judged(len(es) <= per, fmt.Sprintf("at most %s per client request for its %s", plural(per, "execution"), plural(per, "logical tool call")),
		fmt.Sprintf("%s in request %d of %d (%s)%s", plural(len(es), "execution"), worst+1, n, tally(byTool(es)), extra))
}
