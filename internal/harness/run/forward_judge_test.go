package run

import (
	"strings"
	"testing"

	"github.com/replaycheck/replaycheck/internal/harness/rules"
	"github.com/replaycheck/replaycheck/internal/itemserver"
)

// verdictOf returns the verdict of check among vs, failing t when there is
// none.
func verdictOf(t *testing.T, vs []rules.Verdict, check string) rules.Verdict {
	t.Helper()
	for _, v := range vs {
		if v.Check == check {
			return v
		}
	}
	t.Fatalf("no verdict %s among %+v", check, vs)
	return rules.Verdict{}
}

// TestForwardKeyedResend: a forwarded keyed tool (the server's own
// create_item_keyed dedups by idempotency key) whose follow-up fails once,
// so the gateway's router re-runs the loop and re-sends the keyed call.
// Guarded reuses the key: the forwarder sees two executions with one key,
// the server creates one item, and the rules count one logical write,
// naming the keyed re-send apart. Naive takes a fresh key per attempt: two
// items, and both rules fail.
func TestForwardKeyedResend(t *testing.T) {
	tests := []struct {
		target          string
		wantItems       int
		want            rules.Status
		wantDispatchSay string
	}{
		{"builtin:guarded", 1, rules.Pass, "observed 1 execution (create_item_keyed ×1) and 1 keyed re-send with one key"},
		{"builtin:naive", 2, rules.Fail, `ran twice for 1 logical tool call (the model asked once)`},
	}
	for _, tt := range tests {
		t.Run(tt.target, func(t *testing.T) {
			is, url, _ := itemserver.ServeHTTP(t)
			hs := runSource(t, `
name: forwarded keyed write re-sent
request: {endpoint: chat}
mcp: {relay: "`+url+`"}
model: [{call: create_item_keyed, arguments: {name: "{{entry}}"}}, {say: done}]
faults:
  upstream: [{on: follow_up, respond: {status: 500}, times: once}]
expect: {rules: [no-replay-after-dispatch, keyed-retry-same-key]}
`, tt.target, 1)
			h := hs[0]
			items, ran := is.Record()
			if len(items) != tt.wantItems || ran != 2 || len(h.Writes()) != 2 {
				t.Errorf("server created %d items in %d calls, history has %d writes: want %d, 2 and 2", len(items), ran, len(h.Writes()), tt.wantItems)
			}
			vs := rules.Check(h)
			d := verdictOf(t, vs, "no-replay-after-dispatch")
			if d.Status != tt.want || !strings.Contains(d.Message, tt.wantDispatchSay) {
				t.Errorf("no-replay-after-dispatch %s %q: want %s saying %q", d.Status, d.Message, tt.want, tt.wantDispatchSay)
			}
			if k := verdictOf(t, vs, "keyed-retry-same-key"); k.Status != tt.want {
				t.Errorf("keyed-retry-same-key %s %q: want %s", k.Status, k.Message, tt.want)
			}
		})
	}
}

// TestForwardUnknownJudged: the forwarded server runs a call and its
// connection closes before the answer (the forwarder's forward_unknown).
// The run counts the call as unknown; guarded
// tells the model the outcome is unknown and sends nothing again, naive
// re-sends the call, which no-replay-ambiguous-mcp judges a replay.
func TestForwardUnknownJudged(t *testing.T) {
	tests := []struct {
		target    string
		wantItems int
		want      rules.Status
	}{
		{"builtin:guarded", 1, rules.Pass},
		{"builtin:naive", 2, rules.Fail},
	}
	for _, tt := range tests {
		t.Run(tt.target, func(t *testing.T) {
			is, url, _ := itemserver.ServeHTTP(t)
			is.DropAnswers(1)
			hs := runSource(t, `
name: forwarded answer never came back
request: {endpoint: chat}
mcp: {relay: "`+url+`"}
model: [{call: create_item, arguments: {name: "{{entry}}"}}, {say: done}]
expect: {rules: [no-replay-ambiguous-mcp, no-replay-after-dispatch]}
`, tt.target, 1)
			h := hs[0]
			if items := len(first(is.Record())); items != tt.wantItems {
				t.Errorf("server created %d items, want %d", items, tt.wantItems)
			}
			res := rules.Evaluate(h)
			if res.Counts.Unknown != 1 {
				t.Errorf("counts %+v: want 1 unknown", res.Counts)
			}
			a := verdictOf(t, res.Verdicts, "no-replay-ambiguous-mcp")
			if a.Status != tt.want || !strings.Contains(a.Expected, "after 1 forwarded call whose answer never came back") {
				t.Errorf("no-replay-ambiguous-mcp %s %q: want %s after the unanswered call", a.Status, a.Message, tt.want)
			}
			if d := verdictOf(t, res.Verdicts, "no-replay-after-dispatch"); d.Status != tt.want || !strings.Contains(d.Observed, "1 forwarded with no answer back") {
				t.Errorf("no-replay-after-dispatch %s %q: want %s naming the unanswered call", d.Status, d.Message, tt.want)
			}
		})
	}
}
