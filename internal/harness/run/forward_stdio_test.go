package run

import (
	"fmt"
	"path/filepath"
	"strings"
	"testing"

	"github.com/replaycheck/replaycheck/internal/harness/rules"
	"github.com/replaycheck/replaycheck/internal/itemserver"
)

// TestForwardStdioFaultsOnTheGateway: the built-in gateway reaches a
// forwarding ledger over stdio (mcp: {transport: stdio, relay: URL}, or
// command: the server spawned over stdio too) and
// each stdio fault acts at the forwarding point: before_execute kills the
// process before the call is forwarded (the server runs nothing), the
// others after it ran. Guarded never re-sends a call whose process died;
// with the switch mcp-replay-after-stdio-death the gateway re-sends it on
// the respawned process, which the server runs again after an ambiguous
// death, and no-replay-ambiguous-mcp fails; a hung process is ended by the
// tool timeout, after which neither re-sends.
func TestForwardStdioFaultsOnTheGateway(t *testing.T) {
	tests := []struct {
		fault, target string
		command       bool // the server spawned over stdio (mcp.command), not at a URL
		wantItems     int
		want          rules.Status // no-replay-ambiguous-mcp
	}{
		{"stdio_exit: {at: before_execute}", "builtin:guarded", false, 0, rules.Unknown},
		{"stdio_exit: {at: after_execute}", "builtin:guarded", false, 1, rules.Pass},
		{"stdio_exit: {at: after_execute}", "builtin:mcp-replay-after-stdio-death", false, 2, rules.Fail},
		{"stdio_exit: {at: after_answer}", "builtin:guarded", false, 1, rules.Unknown},
		{"stdio_exit: {at: after_answer}", "builtin:mcp-replay-after-stdio-death", false, 1, rules.Unknown},
		{"stdio_hang: {}", "builtin:guarded", false, 1, rules.Pass},
		// A hung process is ended by the tool timeout, which no target
		// re-sends after.
		{"stdio_hang: {}", "builtin:mcp-replay-after-stdio-death", false, 1, rules.Pass},
		{"stdio_malformed_line: {}", "builtin:guarded", false, 1, rules.Pass},
		{"stdio_exit: {at: before_execute}", "builtin:guarded", true, 0, rules.Unknown},
		{"stdio_exit: {at: after_execute}", "builtin:guarded", true, 1, rules.Pass},
		{"stdio_exit: {at: after_execute}", "builtin:mcp-replay-after-stdio-death", true, 2, rules.Fail},
		// A malformed line, then the answer: the gateway's MCP client
		// either reads past it and gets the answer (1 execution, pass) or
		// drops the connection first and, with the switch, re-sends the
		// call (2, fail), by how the SDK's reader and the process race;
		// the verdict must follow what happened (checked below).
		{"stdio_malformed_line: {}", "builtin:mcp-replay-after-stdio-death", false, 0, ""},
	}
	for _, tt := range tests {
		name := tt.fault + " " + tt.target
		if tt.command {
			name += " command"
		}
		t.Run(name, func(t *testing.T) {
			is, url, _ := itemserver.ServeHTTP(t)
			server, items := `relay: "`+url+`"`, func() []string { return first(is.Record()) }
			if tt.command {
				journal := filepath.Join(t.TempDir(), "items.log")
				server = fmt.Sprintf("command: [%q, %s, %q]", self(t), itemserver.Arg, journal)
				items = func() []string { return first(itemserver.Journal(t, journal)) }
			}
			// The tool timeout ends a hung process's call; elsewhere it
			// is far beyond a forwarded call, so that a busy machine
			// does not turn a death into a timeout (after which no target
			// re-sends).
			timeout := "10s"
			if strings.HasPrefix(tt.fault, "stdio_hang") {
				timeout = "300ms"
			}
			hs := runSource(t, `
name: forwarded over stdio, the process dies
request: {endpoint: chat}
mcp: {transport: stdio, `+server+`}
gateway: {tool_timeout: `+timeout+`}
model: [{call: create_item, arguments: {name: "{{entry}}"}}, {say: done}]
faults:
  mcp: [{tool: create_item, `+tt.fault+`, times: once}]
expect: {rules: [no-replay-ambiguous-mcp]}
`, tt.target, 1)
			h := hs[0]
			created := items()
			if tt.want == "" {
				// Either way; the verdict says which happened.
				tt.wantItems, tt.want = 1, rules.Pass
				if len(created) == 2 {
					tt.wantItems, tt.want = 2, rules.Fail
				}
			}
			if len(created) != tt.wantItems || len(h.Writes()) != tt.wantItems {
				t.Errorf("server created %v, history has %d writes: want %d and %d", created, len(h.Writes()), tt.wantItems, tt.wantItems)
			}
			vs := rules.Check(h)
			if len(vs) != 1 || vs[0].Status != tt.want {
				t.Errorf("verdicts %+v: want no-replay-ambiguous-mcp %s", vs, tt.want)
			}
		})
	}
}
