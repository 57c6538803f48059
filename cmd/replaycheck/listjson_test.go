package main

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

func TestListJSON(t *testing.T) {
	code, out, errOut := execute(t, "list", "../../scenarios", "--tag", "bug:mcp-resend-on-disconnect", "--json")
	if code != exitOK {
		t.Fatalf("exit %d\n%s", code, errOut)
	}
	var got []listedScenario
	if err := json.Unmarshal([]byte(out), &got); err != nil {
		t.Fatalf("not JSON: %v\n%s", err, out)
	}
	if len(got) == 0 {
		t.Fatal("no scenario listed")
	}
	for _, s := range got {
		if s.Name == "" || !strings.HasPrefix(s.File, "../../scenarios/mcp/") && !strings.HasPrefix(s.File, "../../scenarios/mcp2026/") || s.Line < 1 || !s.OwnTarget || len(s.Rules) == 0 {
			t.Errorf("listed %+v", s)
		}
	}
	code, out, _ = execute(t, "list", "../../scenarios", "--tag", "no-such-tag", "--json")
	if code != exitOK || strings.TrimSpace(out) != "[]" {
		t.Errorf("an empty selection: exit %d, %q, want []", code, out)
	}
}

// TestListMCPSide: list names the MCP server a scenario's runs use on the
// --target targets: the ledger, a real server a target file forwards every
// run to (which also gives each run a target of its own), or the
// scenario's own server, which wins over the target's.
func TestListMCPSide(t *testing.T) {
	t.Setenv("EVERYTHING_URL", "http://127.0.0.1:3001/mcp")
	t.Setenv("REPLAYCHECK_GATEWAY_MODE", "guarded")
	tests := []struct {
		name    string
		args    []string
		wantMCP string
		wantOwn bool
	}{
		{"the ledger", []string{"../../scenarios/seed", "--filter", "^seed chat fault_on$"}, "ledger", false},
		{"forwarded by the target", []string{"../../scenarios/seed", "--filter", "^seed chat fault_on$", "--target", "../../targets/gateway-everything.yaml"},
			"forwarded to http://127.0.0.1:3001/mcp (gateway-everything-guarded)", true},
		{"forwarded by the target, and a target that does not", []string{"../../scenarios/seed", "--filter", "^seed chat fault_on$", "--target", "../../targets/gateway-everything.yaml", "--target", "builtin:naive"},
			"forwarded to http://127.0.0.1:3001/mcp (gateway-everything-guarded); ledger (builtin:naive)", true},
		{"the scenario's own server wins", []string{"../../targets/testdata/forward-memory.yaml", "--target", "../../targets/gateway-everything.yaml"},
			"forwarded to command node ../clients/node_modules/@modelcontextprotocol/server-memory/dist/index.js", true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, table := listOne(t, tt.args...)
			if got.MCP != tt.wantMCP || got.OwnTarget != tt.wantOwn {
				t.Errorf("mcp %q own_target %v, want %q %v", got.MCP, got.OwnTarget, tt.wantMCP, tt.wantOwn)
			}
			if !strings.Contains(table, tt.wantMCP) {
				t.Errorf("the table does not show %q:\n%s", tt.wantMCP, table)
			}
		})
	}
}

// TestListProtocol: list says which MCP protocol version a scenario's runs
// speak: negotiated, the scenario's mcp.protocol, or a target file's
// (which also gives each run a target of its own), the scenario's winning.
func TestListProtocol(t *testing.T) {
	pinning := filepath.Join(t.TempDir(), "pinning.yaml")
	if err := os.WriteFile(pinning, []byte("kind: proxy\nurl: http://127.0.0.1:{{port}}\nstart: {command: [x]}\nmcp: {protocol: 2025-06-18}\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	const seed, own = "../../scenarios/seed", "../../internal/harness/scenario/testdata/protocol.yaml"
	tests := []struct {
		name    string
		args    []string
		want    string
		wantOwn bool
	}{
		{"negotiated", []string{seed, "--filter", "^seed chat fault_on$"}, "negotiated", false},
		{"the scenario's", []string{own}, "2026-07-28", true},
		{"the target's", []string{seed, "--filter", "^seed chat fault_on$", "--target", pinning}, "2025-06-18 (pinning)", true},
		{"the target's, and a target that does not pin", []string{seed, "--filter", "^seed chat fault_on$", "--target", pinning, "--target", "builtin:naive"},
			"2025-06-18 (pinning); negotiated (builtin:naive)", true},
		{"the scenario's wins", []string{own, "--target", pinning}, "2026-07-28", true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, table := listOne(t, tt.args...)
			if got.Protocol != tt.want || got.OwnTarget != tt.wantOwn {
				t.Errorf("protocol %q own_target %v, want %q %v", got.Protocol, got.OwnTarget, tt.want, tt.wantOwn)
			}
			if !strings.Contains(table, "PROTOCOL") || !strings.Contains(table, tt.want) {
				t.Errorf("the table does not show %q:\n%s", tt.want, table)
			}
		})
	}
}

// listOne runs list --json and list with args, which select one scenario,
// and returns it and the table.
func listOne(t *testing.T, args ...string) (listedScenario, string) {
	t.Helper()
	code, out, errOut := execute(t, append([]string{"list", "--json"}, args...)...)
	if code != exitOK {
		t.Fatalf("exit %d\n%s", code, errOut)
	}
	var got []listedScenario
	if err := json.Unmarshal([]byte(out), &got); err != nil {
		t.Fatalf("not JSON: %v\n%s", err, out)
	}
	if len(got) != 1 {
		t.Fatalf("%d scenarios listed, want 1: %s", len(got), out)
	}
	code, table, errOut := execute(t, append([]string{"list"}, args...)...)
	if code != exitOK {
		t.Fatalf("list: exit %d\n%s", code, errOut)
	}
	return got[0], table
}
