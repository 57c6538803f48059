package run

import (
	"fmt"
	"strings"
	"testing"

	"github.com/replaycheck/replaycheck/internal/harness/rules"
	"github.com/replaycheck/replaycheck/internal/harness/scenario"
	"github.com/replaycheck/replaycheck/internal/harness/target"
	"github.com/replaycheck/replaycheck/internal/itemserver"
)

// TestForwardOwnServerCannotStart: a scenario whose own MCP server exits
// before serving fails that scenario only, its history naming the server's
// stderr and exit status; the other scenario runs and passes.
func TestForwardOwnServerCannotStart(t *testing.T) {
	src := fmt.Sprintf(`
- name: its own server cannot start
  request: {endpoint: chat}
  mcp: {command: [%[1]q, %[2]s, %[3]q, fatal]}
  model: [{call: create_item, arguments: {name: "{{entry}}"}}, {say: done}]
  expect: {rules: [no-replay-after-dispatch]}
- name: the ledger's own tools
  request: {endpoint: chat}
  model: [{call: commit_write, arguments: {entry: "{{entry}}"}}, {say: done}]
  expect: {writes: 1, rules: [no-replay-after-dispatch]}
`, self(t), itemserver.StubbornArg, t.TempDir())
	ss, errs := scenario.Parse("scenario.yaml", []byte(src))
	if len(errs) > 0 {
		t.Fatal(errs)
	}
	tg, err := target.ParseTarget("builtin:guarded")
	if err != nil {
		t.Fatal(err)
	}
	hs, err := Run(ctxFor(t), ss, Options{Targets: []target.Target{tg}, Parallel: 2})
	if err != nil {
		t.Fatalf("Run: %v, want each scenario judged", err)
	}
	if len(hs) != 2 {
		t.Fatalf("%d histories, want 2", len(hs))
	}
	for _, h := range hs {
		got := rules.Overall(rules.Check(h))
		switch h.Scenario {
		case "its own server cannot start":
			if got != rules.Fail {
				t.Errorf("%s: %v, want fail", h.Scenario, got)
			}
			for _, w := range []string{"exited with code 1", "fatal: MY_SERVER_DB_URL is not set"} {
				if !strings.Contains(h.Error, w) {
					t.Errorf("%s: error %q, want it to say %q", h.Scenario, h.Error, w)
				}
			}
		default:
			if got != rules.Pass || h.Error != "" {
				t.Errorf("%s: %v (error %q), want pass", h.Scenario, got, h.Error)
			}
		}
	}
}
