package run

import (
	"fmt"
	"os"
	"path/filepath"
	"testing"

	"github.com/replaycheck/replaycheck/internal/harness/rules"
	"github.com/replaycheck/replaycheck/internal/harness/scenario"
	"github.com/replaycheck/replaycheck/internal/harness/target"
	"github.com/replaycheck/replaycheck/internal/itemserver"
)

// TestForwardSeedOnTheGateway runs the seed's fault_on scenario (every
// follow-up fails with 500) with the ledger replaced by a real MCP server,
// over Streamable HTTP (mcp: {relay: URL}) and spawned over stdio (mcp:
// {command: [...]}, this test binary, see TestMain): naive re-runs the loop
// and the duplicate is found from the forwarded executions alone, each one
// the server's own; guarded runs the tool once.
func TestForwardSeedOnTheGateway(t *testing.T) {
	tests := []struct {
		target, transport string
		wantItems         int
		want              rules.Status
	}{
		{"builtin:naive", "relay", 3, rules.Fail},
		{"builtin:guarded", "relay", 1, rules.Pass},
		{"builtin:naive", "command", 3, rules.Fail},
		{"builtin:guarded", "command", 1, rules.Pass},
	}
	for _, tt := range tests {
		t.Run(tt.target+" "+tt.transport, func(t *testing.T) {
			var server string
			var items func() int
			switch tt.transport {
			case "relay":
				is, url, _ := itemserver.ServeHTTP(t)
				server, items = `{relay: "`+url+`"}`, func() int { created, _ := is.Record(); return len(created) }
			case "command":
				journal := filepath.Join(t.TempDir(), "items.log")
				server = fmt.Sprintf("{command: [%q, %s, %q]}", self(t), itemserver.Arg, journal)
				items = func() int { created, _ := itemserver.Journal(t, journal); return len(created) }
			}
			hs := runSource(t, `
name: seed chat fault_on, forwarded
request: {endpoint: chat}
mcp: `+server+`
model: [{call: create_item, arguments: {name: "{{entry}}"}}, {say: done}]
faults:
  upstream: [{on: follow_up, respond: {status: 500}, times: always}]
expect: {rules: [no-replay-after-dispatch]}
`, tt.target, 1)
			h := hs[0]
			if got := items(); got != tt.wantItems || len(h.Writes()) != got {
				t.Errorf("server created %d items, history has %d writes: want %d and %d", got, len(h.Writes()), tt.wantItems, tt.wantItems)
			}
			vs := rules.Check(h)
			if len(vs) != 1 || vs[0].Status != tt.want {
				t.Fatalf("verdicts %+v: want no-replay-after-dispatch %s", vs, tt.want)
			}
		})
	}
}

// TestForwardParallelCountsMatchServer runs the forwarded seed 8 times in
// parallel on naive against one shared server: every run has a ledger of
// its own, and the writes of all the runs are exactly the server's items.
func TestForwardParallelCountsMatchServer(t *testing.T) {
	is, url, _ := itemserver.ServeHTTP(t)
	hs := runSource(t, `
name: seed chat fault_on, forwarded, repeated
repeat: 8
request: {endpoint: chat}
mcp: {relay: "`+url+`"}
model: [{call: create_item, arguments: {name: "{{entry}}"}}, {say: done}]
faults:
  upstream: [{on: follow_up, respond: {status: 500}, times: always}]
expect: {rules: [no-replay-after-dispatch]}
`, "builtin:naive", 8)
	writes := 0
	for _, h := range hs {
		writes += len(h.Writes())
	}
	if len(hs) != 8 || writes != len(first(is.Record())) || writes != 8*3 {
		t.Errorf("%d runs with %d writes, the server created %d items: want 8 runs, 24 and 24", len(hs), writes, len(first(is.Record())))
	}
}

// TestForwardFaultNamesServerTool arms a fault on one of the forwarded
// server's tools by name (drop_after_execute on create_item, once): the
// server runs the call once, guarded does not send it again, and
// no-replay-ambiguous-mcp judges (it would be unknown had the fault not
// fired).
func TestForwardFaultNamesServerTool(t *testing.T) {
	is, url, _ := itemserver.ServeHTTP(t)
	hs := runSource(t, `
name: drop after execute on the server's tool
request: {endpoint: chat}
mcp: {relay: "`+url+`"}
model: [{call: create_item, arguments: {name: "{{entry}}"}}, {say: done}]
faults:
  mcp: [{tool: create_item, drop_after_execute: {}, times: once}]
expect: {rules: [no-replay-ambiguous-mcp]}
`, "builtin:guarded", 1)
	h := hs[0]
	if len(first(is.Record())) != 1 || len(h.Writes()) != 1 {
		t.Errorf("server created %d items, history has %d writes: want 1 and 1", len(first(is.Record())), len(h.Writes()))
	}
	vs := rules.Check(h)
	if len(vs) != 1 || vs[0].Status != rules.Pass {
		t.Fatalf("verdicts %+v: want no-replay-ambiguous-mcp pass", vs)
	}
}

// first returns the first of two values.
func first[A, B any](a A, _ B) A { return a }

// TestForwardCommandInScenarioDir: a scenario's mcp.command runs in the
// scenario file's directory, as its cassette resolves: a server program and
// a journal named relative to the file are found there, whatever the
// working directory.
func TestForwardCommandInScenarioDir(t *testing.T) {
	dir := t.TempDir()
	if err := os.Symlink(self(t), filepath.Join(dir, "server")); err != nil {
		t.Fatal(err)
	}
	path := filepath.Join(dir, "scenario.yaml")
	src := `name: forwarded, server next to the scenario
request: {endpoint: chat}
mcp: {command: [./server, ` + itemserver.Arg + `, items.log]}
model: [{call: create_item, arguments: {name: "{{entry}}"}}, {say: done}]
expect: {writes: 1, rules: [no-replay-after-dispatch]}
`
	if err := os.WriteFile(path, []byte(src), 0o644); err != nil {
		t.Fatal(err)
	}
	ss, err := scenario.Load(path)
	if err != nil {
		t.Fatal(err)
	}
	tg, err := target.ParseTarget("builtin:guarded")
	if err != nil {
		t.Fatal(err)
	}
	hs, err := Run(ctxFor(t), ss, Options{Targets: []target.Target{tg}, Parallel: 1})
	if err != nil {
		t.Fatal(err)
	}
	if created, _ := itemserver.Journal(t, filepath.Join(dir, "items.log")); len(created) != 1 {
		t.Errorf("the server's journal next to the scenario has %d items, want 1", len(created))
	}
	if vs := rules.Check(hs[0]); rules.Overall(vs) != rules.Pass {
		t.Errorf("verdicts %+v: want pass", vs)
	}
}
