package run

import (
	"strings"
	"testing"

	"github.com/replaycheck/replaycheck/internal/harness/rules"
	"github.com/replaycheck/replaycheck/internal/itemserver"
)

// TestSameCallAskedTwice: a model that asks for the same call twice (two
// script steps, equal arguments, two call ids) makes two logical calls,
// on the ledger and on a forwarded server alike: guarded runs each once
// and passes with two executions of equal arguments. When one of them is
// replayed, by naive re-running the loop after a failed follow-up or by
// naive re-sending the call whose connection dropped after it ran, the
// executions exceed the two asks and the verdict names the call.
func TestSameCallAskedTwice(t *testing.T) {
	tests := []struct {
		name, target, server, faults string
		wantWrites                   int
		want                         rules.Status
		wantSaid                     string
	}{
		{"ledger, guarded", "builtin:guarded", "", "", 2, rules.Pass, "2 executions (commit_write ×2)"},
		{"forwarded, guarded", "builtin:guarded", "forward", "", 2, rules.Pass, "2 executions (create_item ×2)"},
		{"ledger, naive re-runs the loop", "builtin:naive", "", "upstream: [{on: follow_up, respond: {status: 500}, times: always}]",
			6, rules.Fail, `ran 6 times for 2 logical tool calls (the model asked twice)`},
		{"forwarded, naive re-runs the loop", "builtin:naive", "forward", "upstream: [{on: follow_up, respond: {status: 500}, times: always}]",
			6, rules.Fail, `ran 6 times for 2 logical tool calls (the model asked twice)`},
		{"ledger, naive re-sends one call", "builtin:naive", "", "mcp: [{tool: commit_write, drop_after_execute: {}, times: once}]",
			3, rules.Fail, `ran 3 times for 2 logical tool calls (the model asked twice)`},
		{"forwarded, naive re-sends one call", "builtin:naive", "forward", "mcp: [{tool: create_item, drop_after_execute: {}, times: once}]",
			3, rules.Fail, `ran 3 times for 2 logical tool calls (the model asked twice)`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			call, arg, mcp := "commit_write", "entry", ""
			var items func() int
			if tt.server == "forward" {
				is, url, _ := itemserver.ServeHTTP(t)
				call, arg, mcp = "create_item", "name", "\nmcp: {relay: \""+url+"\"}"
				items = func() int { return len(first(is.Record())) }
			}
			step := `{call: ` + call + `, arguments: {` + arg + `: "{{entry}}"}}`
			hs := runSource(t, `
name: the same call asked twice
request: {endpoint: chat}`+mcp+`
model: [`+step+`, `+step+`, {say: done}]
faults: {`+tt.faults+`}
expect: {rules: [no-replay-after-dispatch]}
`, tt.target, 1)
			h := hs[0]
			if len(h.Writes()) != tt.wantWrites || items != nil && items() != tt.wantWrites {
				t.Errorf("%d writes: want %d, also on the server", len(h.Writes()), tt.wantWrites)
			}
			ids := map[string]bool{}
			for _, u := range h.Upstream {
				for _, c := range u.Calls {
					ids[c.ID] = true
				}
			}
			if len(ids) < 2 {
				t.Fatalf("the model issued call ids %v: want at least two", ids)
			}
			vs := rules.Check(h)
			if len(vs) != 1 || vs[0].Status != tt.want || !strings.Contains(vs[0].Message, tt.wantSaid) {
				t.Fatalf("verdicts %+v: want no-replay-after-dispatch %s saying %q", vs, tt.want, tt.wantSaid)
			}
		})
	}
}
