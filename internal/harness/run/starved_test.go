package run

import (
	"context"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/replaycheck/replaycheck/internal/harness/history"
	"github.com/replaycheck/replaycheck/internal/harness/rules"
	"github.com/replaycheck/replaycheck/internal/harness/scenario"
	"github.com/replaycheck/replaycheck/internal/harness/target"
	"github.com/replaycheck/replaycheck/internal/wire"
)

// TestStarvedRunIsTriedAgain: a run the harness was starved in (its
// verdict unknown for that alone) is tried again, under a token of its own,
// until it can be judged or starvedTries tries were made; the run's history
// is the last try's, with a note for each earlier one. A run judged on its
// first try, failed or passed, runs once.
func TestStarvedRunIsTriedAgain(t *testing.T) {
	ss, errs := scenario.Parse("starved.yaml", []byte("name: hung\nrequest: {endpoint: chat}\nexpect: {writes: 1}\n"))
	if len(errs) > 0 {
		t.Fatal(errs)
	}
	tg, err := target.ParseTarget("builtin:guarded")
	if err != nil {
		t.Fatal(err)
	}
	for _, tt := range []struct {
		name    string
		starved int // the first tries starved
		failed  bool
		tries   int
		verdict rules.Status
	}{
		{"judged at once", 0, false, 1, rules.Pass},
		{"failed at once", 0, true, 1, rules.Fail},
		{"starved once", 1, false, 2, rules.Pass},
		{"starved twice, then failed", 2, true, 3, rules.Fail},
		{"starved every time", starvedTries, false, starvedTries, rules.Unknown},
	} {
		t.Run(tt.name, func(t *testing.T) {
			var mu sync.Mutex
			var tokens []string
			do := func(j job) (*history.History, error) {
				mu.Lock()
				defer mu.Unlock()
				tokens = append(tokens, j.token("test"))
				h := toolTimedOut(j.token("test"))
				if len(tokens) <= tt.starved {
					h.Harness.Lateness = history.Duration(2 * time.Second)
				} else if !tt.failed {
					h.MCP = append(h.MCP, wire.MCPEvent{At: history.Duration(time.Millisecond), Kind: wire.MCPWrite, Tool: "commit_write", RequestID: "1"})
				}
				return h, nil
			}
			r := &runner{opts: Options{Targets: []target.Target{tg}}.withDefaults(), out: make([]*history.History, 1)}
			r.pool(context.Background(), []pair{{s: ss[0], t: tg, n: 1}}, 1, 0, do)
			if len(tokens) != tt.tries {
				t.Fatalf("the run was tried %d times (%v); want %d", len(tokens), tokens, tt.tries)
			}
			seen := map[string]bool{}
			for _, tok := range tokens {
				if seen[tok] {
					t.Errorf("token %s was used by two tries: %v", tok, tokens)
				}
				seen[tok] = true
			}
			h := r.out[0]
			if h.Token != tokens[len(tokens)-1] {
				t.Errorf("the run's history is try %s's; want the last, %s", h.Token, tokens[len(tokens)-1])
			}
			if got := rules.Evaluate(h).Verdict; got != tt.verdict {
				t.Errorf("verdict %s; want %s", got, tt.verdict)
			}
			notes := 0
			for _, n := range h.Notes {
				if strings.Contains(n, "could not be judged, so the run was tried again: ") && strings.Contains(n, "the harness was starved") {
					notes++
				}
			}
			if want := min(tt.starved, tt.tries-1); notes != want {
				t.Errorf("%d notes of a starved try, want %d: %q", notes, want, h.Notes)
			}
		})
	}
}

// toolTimedOut is the history of a run whose target gave up on the tool
// after its 200ms tool timeout, with the call at the ledger and no write:
// a failure a starved harness explains (see rules.Result.Starved), judged
// once the write is added.
func toolTimedOut(token string) *history.History {
	ms := func(n int) history.Duration { return history.Duration(time.Duration(n) * time.Millisecond) }
	status := 200
	return &history.History{
		Scenario: "hung", Target: "builtin:guarded", Token: token,
		Setup:    history.Setup{ToolCalls: 1, Tools: []string{"commit_write"}, ToolTimeout: ms(200)},
		Expect:   history.Expect{Counts: history.Counts{Status: &status, Writes: history.Exactly(1)}, Rules: []string{"no-replay-after-dispatch"}},
		Requests: []history.Exchange{{Endpoint: "chat", Path: "/v1/chat/completions", Start: ms(0), End: ms(300), Status: 200, CleanEnd: true}},
		MCP:      []wire.MCPEvent{{At: ms(1), Kind: wire.MCPCall, Tool: "commit_write", RequestID: "1"}},
		Upstream: []wire.UpstreamRequest{
			{At: ms(0), Path: "/v1/chat/completions", Kind: wire.KindInitial, Outcome: "forwarded", Status: 200},
			{At: ms(250), Path: "/v1/chat/completions", Kind: wire.KindFollowUp, Outcome: "forwarded", Status: 200},
		},
		Harness: &history.Harness{Deadline: history.Duration(30 * time.Second)},
	}
}

// TestStarvedClientIsNotHung runs a client that never exits on a CPU it
// shares with two other processes (all spinning, pinned to CPU 0), past its
// 2s timeout: each waited for the CPU two thirds of its run, so the run says the
// machine was starved, is tried again, and ends unknown, not failed as a
// hang; the helper client that hangs asleep (TestClientTarget) still fails.
func TestStarvedClientIsNotHung(t *testing.T) {
	ss, errs := scenario.Parse("spin.yaml", []byte("name: client spins\nrequest: {endpoint: chat, prompt: \"spin {{entry}}\"}\nexpect: {client: {exit: zero}}\n"))
	if len(errs) > 0 {
		t.Fatal(errs)
	}
	tg, _ := writeTarget(t, `
kind: client
name: spinning-client
command: [taskset, -c, "0", sh, -c, "while :; do :; done & while :; do :; done & while :; do :; done"]
timeout: 2s
`, nil)
	hs, err := Run(ctxFor(t), ss, Options{Targets: []target.Target{tg}})
	if err != nil {
		t.Fatal(err)
	}
	h := hs[0]
	res := rules.Evaluate(h)
	if res.Verdict != rules.Unknown || !strings.Contains(res.Starved(), "the machine was starved: the client's processes waited up to") {
		t.Errorf("verdict %s, starved %q; want unknown, the machine starved: %+v", res.Verdict, res.Starved(), res.Verdicts)
	}
	if c := h.Requests[0].Client; c == nil || !c.Killed || c.RunDelay.D() < time.Second {
		t.Errorf("client run %+v; want killed, having waited at least 1s for a CPU", c)
	}
	if n := strings.Count(strings.Join(h.Notes, "\n"), "could not be judged, so the run was tried again"); n != starvedTries-1 {
		t.Errorf("%d notes of tries, want %d: %q", n, starvedTries-1, h.Notes)
	}
}
