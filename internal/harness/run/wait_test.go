package run

import (
	"testing"
	"time"

	"github.com/replaycheck/replaycheck/internal/harness/scenario"
)

// TestExpectedWait: what orders the runs, longest first, counts every wait
// the faults and knobs hold a run back by, a fault that fires always as
// several firings.
func TestExpectedWait(t *testing.T) {
	for _, tt := range []struct {
		name   string
		faults string
		want   time.Duration
	}{
		{"none", "", 0},
		{"a status", "faults: {upstream: [{respond: {status: 500}, times: once}]}", 0},
		{"Retry-After once", `faults: {upstream: [{respond: {status: 429, headers: {Retry-After: "1"}}, times: once}]}`, time.Second},
		{"retry-after-ms always", `faults: {upstream: [{respond: {status: 429, headers: {retry-after-ms: "100"}}}]}`, retryGuess * 100 * time.Millisecond},
		{"both, as the client reads them", `faults: {upstream: [{respond: {status: 503, headers: {retry-after-ms: "100", Retry-After: "1"}}, times: once}]}`, 100 * time.Millisecond},
		{"a lingering cut always", "faults: {upstream: [{drop: {after: tool_call, linger: 500ms}}]}", retryGuess * 500 * time.Millisecond},
		{"a stall once", "faults: {upstream: [{stall: {after: headers, for: 2s}, times: once}]}", 2 * time.Second},
		{"a dribble once", "faults: {upstream: [{dribble: 10ms, times: once}]}", 120 * time.Millisecond},
		{"a slow tool once", "faults: {mcp: [{delay: 1s, times: once}]}", time.Second},
		{"a tool list change once", "faults: {mcp: [{change_tools: {rename: commit_write, to: commit_entry}, times: once}]}", 100 * time.Millisecond},
		{"a tool timeout alone", "gateway: {tool_timeout: 300ms}", 0},
		{"a hung server, the gateway's tool timeout", "mcp: {transport: stdio}\ngateway: {tool_timeout: 3s}\nfaults: {mcp: [{stdio_hang: {}, times: once}]}", serverStart + 3*time.Second},
		{"a hung server, the default tool timeout", "mcp: {transport: stdio}\nfaults: {mcp: [{stdio_hang: {}, times: once}]}", serverStart + 10*time.Second},
		{"over stdio, the server's start", "mcp: {transport: stdio}", serverStart},
	} {
		t.Run(tt.name, func(t *testing.T) {
			src := "name: wait\nrequest: {endpoint: chat, stream: true}\nexpect: {writes: 1}\n" + tt.faults + "\n"
			ss, errs := scenario.Parse("wait.yaml", []byte(src))
			if len(errs) > 0 {
				t.Fatal(errs)
			}
			if got := expectedWait(ss[0]); got != tt.want {
				t.Errorf("expectedWait = %s, want %s", got, tt.want)
			}
		})
	}
}
