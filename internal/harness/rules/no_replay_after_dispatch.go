package rules

import (
	"fmt"

	"github.com/replaycheck/replaycheck/internal/harness/history"
	"github.com/replaycheck/replaycheck/internal/wire"
)

func noReplayAfterDispatchRule() Rule {
	return Rule{
		Name:    "no-replay-after-dispatch",
		Summary: "a tool call that reached the MCP server runs at most once per logical call",
		Doc: "A tool call that reached the MCP server is executed at most once per logical call: " +
			"no retry and no fallback re-runs it; judged per client request. Executions are of the same call when they are " +
			"of the same tool with equal arguments (canonical JSON, the idempotency key set aside). Its logical calls are the " +
			"model's asks of that tool with those arguments: the fake model's calls told apart by script step (a re-sent " +
			"model request answered from the same step is the same ask under a new call id), a replayed answer's by its " +
			"recorded id; so a tool the model asked for twice with equal arguments may run twice, and a call re-run for one " +
			"ask is a replay. Where no ask of the model's matches (a relayed model, a client that changes the arguments, an " +
			"older history) the script's calls of the tool stand in, and the verdict says so. A keyed call re-sent with the " +
			"same idempotency key that the server deduplicates (answers from the first call, writing nothing) is not " +
			"executed again; when forwarding, where that cannot be seen, a re-send with a key an earlier execution carried " +
			"is counted apart as a keyed re-send, one logical write with it. A call a fail_before_execute fault refused was " +
			"not executed; a forwarded call whose answer never came back may have run and counts as executed. A call the " +
			"model asked for again because the client reported the first failed (again_if_failed) is a logical call of its " +
			"own when an execution of the call wrote nothing (a tool error); when it had written, the re-run is a duplicate " +
			"the client's report caused. Cannot judge when no tool call reached the server.",
		Seed: "000 (LiteLLM): \"The router neither retries nor falls back on a tagged error\" — under fault_on each endpoint " +
			"wrote 3 lines before the fix and 1 after; the keyed exception is 004 #1 (\"Generate one key per logical action " +
			"(not per attempt) and reuse it on every retry\") and 003 R13",
		Fix: "Tag errors raised after a tool call was dispatched and neither retry nor fall back on them; " +
			"surface the error (or retry the failed model call alone, never the loop that ran the tool).",
		Example: `# scenarios/seed/fault-on-chat.yaml, trimmed
name: follow-up 500 after the tool ran
request: {endpoint: chat}
faults:
  upstream: [{on: follow_up, respond: {status: 500}, times: always}]
expect:
  writes: 1
  rules: [no-replay-after-dispatch]
`,
		Check: noReplayAfterDispatch,
	}
}

// noReplayAfterDispatch compares, in each client request, the executions
// of each call (tool and arguments) with the model's logical calls of it
// (see logicalCalls), so a replay in one request is not hidden by another
// request that executed fewer, nor by a call the model legitimately asked
// for twice.
func noReplayAfterDispatch(h *history.History) Verdict {
	if len(Executed(h)) == 0 {
		return unknown("each dispatched tool call executed at most once", "no tool call reached the MCP server, so nothing could be replayed")
	}
	reqs := logicalCalls(h)
	worst := 0
	for i := range reqs {
		r, w := &reqs[i], &reqs[worst]
		if r.replays() > w.replays() || r.replays() == w.replays() && r.execs-r.allowed > w.execs-w.allowed {
			worst = i
		}
	}
	r := &reqs[worst]
	deduped := make([]int, len(reqs))
	for i := range deduplicated(h) {
		deduped[max(h.ExchangeAt(h.MCP[i].At.D()), 0)]++
	}
	tail := ""
	if d := deduped[worst]; d > 0 {
		tail += fmt.Sprintf(" and %s the server deduplicated by idempotency key", plural(d, "keyed re-send"))
	}
	if r.resent > 0 {
		tail += fmt.Sprintf(" and %s with one key (an idempotency key the server had seen, taken as one logical write: whether the server deduplicated it cannot be seen from outside)", plural(r.resent, "keyed re-send"))
	}
	if g := r.worst(); g != nil && g.replays() > 0 {
		tail += "; " + groupText(g)
		if s := resumedReplayText(h, g.execs); s != "" {
			tail += "; " + s
		}
	}
	if s := reaskText(reasks(h)[worst]); s != "" {
		tail += "; " + s
	}
	if s := scriptNote(r); s != "" {
		tail += "; " + s
	}
	unanswered, n := unknownOutcome(h), 0
	var es []wire.MCPEvent
	for _, g := range r.groups {
		for _, i := range g.execs {
			es = append(es, h.MCP[i])
			if unanswered[i] {
				n++
			}
		}
	}
	ran := tally(byTool(es))
	if n > 0 {
		ran += fmt.Sprintf("; %d forwarded with no answer back: it may have run", n)
	}
	ok := r.replays() == 0
	if len(reqs) == 1 {
		return judged(ok, fmt.Sprintf("at most %s for %s", plural(r.allowed, "execution"), plural(r.allowed, "logical tool call")),
			fmt.Sprintf("%s (%s)%s", plural(r.execs, "execution"), ran, tail))
	}
	return judged(ok, fmt.Sprintf("at most %s per client request for its %s", plural(r.allowed, "execution"), plural(r.allowed, "logical tool call")),
		fmt.Sprintf("%s in request %d of %d (%s)%s", plural(r.execs, "execution"), worst+1, len(reqs), ran, tail))
}
