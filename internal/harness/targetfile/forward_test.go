package targetfile

import (
	"os"
	"path/filepath"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/replaycheck/replaycheck/fakes/ledger"
	"github.com/replaycheck/replaycheck/fakes/upstream"
	"github.com/replaycheck/replaycheck/internal/harness/scenario"
	"github.com/replaycheck/replaycheck/internal/wire"
)

// clientHead starts a client target file; proxyHead a proxy one.
const (
	clientHead = "kind: client\ncommand: [x]\n"
	proxyHead  = "kind: proxy\nurl: http://127.0.0.1:{{port}}\nstart: {command: [x]}\n"
)

// TestTargetFileMCP checks what a target file's mcp becomes: the server of
// each run, its templates rendered with the run's token and entry and its
// command run in the file's directory, and the scenarios written for the
// ledger with their calls and faults mapped onto the server's tool.
func TestTargetFileMCP(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, "target.yaml")
	src := proxyHead + `mcp:
  command: [node, "server-{{token}}.js"]
  env: {STATE: "${STATE_DIR:-/tmp}/{{entry}}.jsonl"}
  writes: [create_item]
  connect_timeout: 90s
  calls:
    commit_write: {call: create_item, arguments: {name: "{{entry}}"}}
`
	if err := os.WriteFile(path, []byte(src), 0o644); err != nil {
		t.Fatal(err)
	}
	tg, err := Load(path, Options{Getenv: testEnv})
	if err != nil {
		t.Fatal(err)
	}
	fwd := tg.Traits().Forward
	if fwd == nil {
		t.Fatal("no Traits.Forward")
	}
	got, err := fwd.For("rc1")
	if err != nil {
		t.Fatal(err)
	}
	want := &ledger.Forward{
		Command: []string{"node", "server-rc1.js"}, Env: []string{"STATE=/tmp/alpha-rc1.jsonl"}, Dir: dir,
		Writes: []string{"create_item"}, ConnectTimeout: 90e9,
	}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("the run's server (-want +got):\n%s", diff)
	}

	ss, errs := scenario.Parse("s.yaml", []byte("name: seed\nrequest: {endpoint: chat}\nfaults:\n  mcp: [{tool: commit_write, drop_after_execute: {}, times: once}]\nexpect: {writes: 1}\n"))
	if len(errs) > 0 {
		t.Fatal(errs)
	}
	m := fwd.Scenario(ss[0])
	if diff := cmp.Diff([]upstream.Step{{Call: "create_item", Arguments: map[string]any{"name": "{{entry}}"}}, {Say: "done"}}, m.Script().Steps); diff != "" {
		t.Errorf("the mapped script (-want +got):\n%s", diff)
	}
	if m.Faults.MCP[0].Tool != "create_item" || ss[0].Faults.MCP[0].Tool != "commit_write" {
		t.Errorf("fault tools %q (mapped) and %q (the scenario's), want create_item and commit_write", m.Faults.MCP[0].Tool, ss[0].Faults.MCP[0].Tool)
	}
	own, errs := scenario.Parse("s.yaml", []byte("name: own\nrequest: {endpoint: chat}\nmcp: {relay: \"http://127.0.0.1:1/mcp\"}\nmodel: [{call: commit_write}]\nexpect: {writes: 1}\n"))
	if len(errs) > 0 {
		t.Fatal(errs)
	}
	if fwd.Scenario(own[0]) != own[0] {
		t.Error("a scenario forwarding on its own was changed")
	}
}

// TestTargetFileLedgerSettings checks that a target file's mcp.protocol and
// mcp.honour_cancellation become the target's ledger settings, alone (no
// server to forward to) and beside a forwarded server.
func TestTargetFileLedgerSettings(t *testing.T) {
	yes := true
	tests := []struct {
		name        string
		src         string
		want        scenario.LedgerSettings
		wantForward bool
	}{
		{name: "alone", src: proxyHead + "mcp: {protocol: 2026-07-28, honour_cancellation: true}\n",
			want: scenario.LedgerSettings{Protocol: wire.MCPProtocol20260728, HonourCancellation: &yes}},
		{name: "beside a server", src: clientHead + "mcp: {relay: \"http://127.0.0.1:1/mcp\", protocol: 2025-06-18}\n",
			want: scenario.LedgerSettings{Protocol: wire.MCPProtocol20250618}, wantForward: true},
		{name: "none", src: clientHead},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			tg, err := Parse("target.yaml", []byte(tt.src), Options{Getenv: testEnv})
			if err != nil {
				t.Fatal(err)
			}
			tr := tg.Traits()
			if diff := cmp.Diff(tt.want, tr.Ledger); diff != "" {
				t.Errorf("ledger settings (-want +got):\n%s", diff)
			}
			if got := tr.Forward != nil; got != tt.wantForward {
				t.Errorf("forwards: %v, want %v", got, tt.wantForward)
			}
		})
	}
}
