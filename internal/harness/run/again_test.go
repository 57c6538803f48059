package run

import (
	"strings"
	"testing"

	"github.com/replaycheck/replaycheck/internal/harness/history"
	"github.com/replaycheck/replaycheck/internal/harness/rules"
	"github.com/replaycheck/replaycheck/internal/wire"
)

// againScenario is the seed's request with a model that asks again once
// when the client reports the call failed, and faults on the ledger.
func againScenario(name, endpoint, extra, faults string) string {
	return `
- name: ` + name + `
  request: {endpoint: ` + endpoint + `}` + extra + `
  model: [{call: commit_write, arguments: {entry: "{{entry}}"}, again_if_failed: 1}, {say: done}]
  faults: {mcp: [` + faults + `]}
  expect: {rules: [no-replay-after-dispatch]}
`
}

// TestAgainOnTheGateway: a model that asks again when the client reports a
// call failed, against the built-in gateway. Guarded tells the model a
// dropped connection's outcome is unknown (and so a call refused with 503,
// which it cannot tell from one that ran): no re-ask, one write. A tool
// error is a plain failure: the model asks again and the one write passes.
// Naive reports a timed-out call that went on running as a plain timeout:
// the model asks again and writes a second time, which
// no-replay-after-dispatch fails.
func TestAgainOnTheGateway(t *testing.T) {
	tests := []struct {
		name, target, endpoint, extra, faults string
		wantWrites                            int
		wantAgain                             bool
		wantRead                              string // how the fake model read the first result
		want                                  rules.Status
	}{
		{"dropped after execute, outcome unknown", "builtin:guarded", "messages", "",
			"{tool: commit_write, drop_after_execute: {}, times: once}", 1, false, wire.ResultUnknown, rules.Pass},
		{"refused with 503, outcome unknown", "builtin:guarded", "responses", "",
			"{tool: commit_write, fail_before_execute: {}, times: once}", 0, false, wire.ResultUnknown, rules.Unknown},
		{"tool error, asked again", "builtin:guarded", "chat", "",
			"{tool: commit_write, is_error: {message: ledger busy}, times: once}", 1, true, wire.ResultFailed, rules.Pass},
		{"timed out and left running, asked again", "builtin:naive", "chat", "\n  gateway: {tool_timeout: 100ms}",
			"{tool: commit_write, delay: 1s, times: once}", 2, true, wire.ResultFailed, rules.Fail},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			hs := runSource(t, againScenario(tt.name, tt.endpoint, tt.extra, tt.faults), tt.target, 1)
			h := hs[0]
			again, reads := reaskedIn(h)
			if len(h.Writes()) != tt.wantWrites || (len(again) > 0) != tt.wantAgain || len(reads) == 0 || reads[0].Read != tt.wantRead {
				t.Errorf("%d writes, asked again for %q, results %+v: want %d writes, asked again %v, the first result read %s",
					len(h.Writes()), again, reads, tt.wantWrites, tt.wantAgain, tt.wantRead)
			}
			if h.Setup.ToolCalls != 1 || len(h.Setup.Tools) != 1 {
				t.Errorf("setup plans %d calls %q: want the script's one call, re-asks not counted", h.Setup.ToolCalls, h.Setup.Tools)
			}
			vs := rules.Check(h)
			if len(vs) != 1 || vs[0].Status != tt.want {
				t.Fatalf("verdicts %+v: want no-replay-after-dispatch %s", vs, tt.want)
			}
			if tt.wantAgain && !strings.Contains(vs[0].Message, "the model asked again for") {
				t.Errorf("verdict %q does not name the re-ask", vs[0].Message)
			}
		})
	}
}

// reaskedIn returns the ids of the calls the model asked for again in h,
// and the results the follow-ups carried.
func reaskedIn(h *history.History) (again []string, results []wire.ToolResult) {
	for _, u := range h.Upstream {
		again = append(again, u.AgainFor()...)
		results = append(results, u.Results...)
	}
	return again, results
}
