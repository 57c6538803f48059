package target_test

import (
	"path/filepath"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/replaycheck/replaycheck/internal/harness/target"
	"github.com/replaycheck/replaycheck/internal/harness/targetfile"
)

// TestLedgerStdioVariables runs a client whose command and env print the
// stdio ledger's variables, rendered for its run's ledger, as the README
// documents them.
func TestLedgerStdioVariables(t *testing.T) {
	const rc, mcpURL = "/opt/rc/replaycheck", "http://127.0.0.1:1/mcp"
	tests := []struct {
		name string
		arg  string // the argument printed, as written in the file
		want string
	}{
		{"the command as a JSON array", "{{ledger_stdio_json}}", `["/opt/rc/replaycheck","ledger-stdio","http://127.0.0.1:1/mcp"]`},
		{"the binary", "{{ledger_stdio_command}}", rc},
		{"the arguments as a JSON array", "{{ledger_stdio_args_json}}", `["ledger-stdio","http://127.0.0.1:1/mcp"]`},
		{"in a JSON config", `{"mcpServers": {"ledger": {"command": "{{ledger_stdio_command}}", "args": {{ledger_stdio_args_json}}}}}`,
			`{"mcpServers": {"ledger": {"command": "/opt/rc/replaycheck", "args": ["ledger-stdio","http://127.0.0.1:1/mcp"]}}}`},
		{"the binary and its arguments apart", "{{replaycheck}} ledger-stdio {{mcp_url}}", rc + " ledger-stdio " + mcpURL},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			src := "kind: client\ncommand: [sh, -c, 'printf %s \"$1\"; printf \" %s\" \"$MCP_SERVER\" >&2', sh, '" + tt.arg + "']\nenv: {MCP_SERVER: '" + tt.arg + "'}\n"
			tg, err := targetfile.Parse(filepath.Join(t.TempDir(), "t.yaml"), []byte(src), targetfile.Options{Replaycheck: rc})
			if err != nil {
				t.Fatal(err)
			}
			inst, err := tg.Start(ctxFor(t), target.Fakes{Upstream: "http://127.0.0.1:1/v1", MCP: mcpURL}, nil)
			if err != nil {
				t.Fatal(err)
			}
			t.Cleanup(func() { _ = inst.Close() })
			x := inst.Send(ctxFor(t), target.Request{Token: "rc0000000001"})
			if diff := cmp.Diff(tt.want, x.Client.Stdout); diff != "" {
				t.Errorf("in the command (-want +got):\n%s", diff)
			}
			if diff := cmp.Diff(" "+tt.want, x.Client.Stderr); diff != "" {
				t.Errorf("in env (-want +got):\n%s", diff)
			}
		})
	}
}

// TestLedgerStdioVariablesWhere checks which parts of a target file offer
// the stdio ledger's variables: a client's command and env and a proxy's
// config, not a proxy's bodies (sent to the proxy, which spawns nothing).
func TestLedgerStdioVariablesWhere(t *testing.T) {
	tests := []struct {
		name    string
		vars    target.Vars
		wantErr string
	}{
		{"client", target.ClientVars, ""},
		{"proxy config", target.ProxyVars, ""},
		{"proxy start", target.StartVars, ""},
		{"proxy bodies", target.FakeVars, "unknown template variable {{ledger_stdio_json}}"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			err := target.CheckTemplate("{{ledger_stdio_json}} {{ledger_stdio_command}} {{ledger_stdio_args_json}}", tt.vars)
			if tt.wantErr == "" && err != nil || tt.wantErr != "" && (err == nil || !strings.Contains(err.Error(), tt.wantErr)) {
				t.Errorf("CheckTemplate: %v, want %q", err, tt.wantErr)
			}
		})
	}
	if err := target.CheckTemplate("{{ledger_stdio}}", target.ClientVars); err == nil || !strings.Contains(err.Error(), "ledger_stdio_json") {
		t.Errorf("CheckTemplate of an unknown variable: %v, want the error listing ledger_stdio_json", err)
	}
}
