package target_test

import (
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/replaycheck/replaycheck/internal/harness/process"
	"github.com/replaycheck/replaycheck/internal/harness/target"
	"github.com/replaycheck/replaycheck/internal/harness/targetfile"
)

// TestClientCannotRun runs client targets whose command cannot run, and
// some that can but fail: a command not found or not executable, at Start or
// when a run finds it (a script's interpreter missing, a shell exiting 127
// or 126 saying so), is a *process.CannotRunError with the file's install hint; an
// exit 127 that says nothing of the kind is the client's own outcome.
func TestClientCannotRun(t *testing.T) {
	dir := t.TempDir()
	for name, body := range map[string]string{"no-interpreter": "#!/no/such/interpreter\n", "not-executable": "#!/bin/sh\n"} {
		mode := os.FileMode(0o755)
		if name == "not-executable" {
			mode = 0o644
		}
		if err := os.WriteFile(filepath.Join(dir, name), []byte(body), mode); err != nil {
			t.Fatal(err)
		}
	}
	tests := []struct {
		name     string
		command  string
		atStart  bool   // Start fails, not a run
		want     string // in the error; "" for a run that is no CannotRunError
		wantExit int
	}{
		{name: "not in PATH", command: "[no-such-agent-4711]", atStart: true, want: `command "no-such-agent-4711" not found in PATH`},
		{name: "not executable", command: "[./not-executable]", atStart: true, want: "is not an executable file"},
		{name: "templated, not in PATH", command: `["no-such-{{entry}}"]`, want: "not found in PATH"},
		{name: "interpreter missing", command: "[./no-interpreter]", want: "no such file or directory"},
		{name: "shell: not found", command: `[sh, -c, 'exec ./node_modules/.bin/agent']`, want: "its command sh exited with code 127: "},
		{name: "shell: not executable", command: `[sh, -c, 'exec ./not-executable']`, want: "exited with code 126"},
		{name: "the client's own 127", command: `[sh, -c, 'echo failed >&2; exit 127']`, wantExit: 127},
		{name: "node: a package not installed", command: `[sh, -c, 'printf "%s\n" "Error [ERR_MODULE_NOT_FOUND]: Cannot find package ''ai'' imported from /x/a.mjs" "    at packageResolve (x)" "  code: ''ERR_MODULE_NOT_FOUND''" "}" "" "Node.js v20" >&2; exit 1']`,
			want: "its command sh exited with code 1: Error [ERR_MODULE_NOT_FOUND]: Cannot find package 'ai' imported from /x/a.mjs"},
		{name: "node: the client's own error", command: `[sh, -c, 'echo "Error: 500 Internal Server Error" >&2; exit 1']`, wantExit: 1},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			src := "kind: client\ncommand: " + tt.command + "\ninstall: make agents\n"
			tg, err := targetfile.Parse(filepath.Join(dir, "t.yaml"), []byte(src), targetfile.Options{Replaycheck: "/bin/false"})
			if err != nil {
				t.Fatal(err)
			}
			inst, err := tg.Start(ctxFor(t), target.Fakes{Upstream: "http://127.0.0.1:1/v1", MCP: "http://127.0.0.1:1/mcp"}, nil)
			if tt.atStart {
				var cr *process.CannotRunError
				if !errors.As(err, &cr) || !strings.Contains(err.Error(), tt.want) || !strings.Contains(err.Error(), "install it with: make agents") {
					t.Fatalf("Start: %v, want a *process.CannotRunError with %q and the install hint", err, tt.want)
				}
				return
			}
			if err != nil {
				t.Fatalf("Start: %v", err)
			}
			x := inst.Send(ctxFor(t), target.Request{Token: "rc0000000001"})
			err = inst.CannotRun()
			if tt.want == "" {
				if err != nil || x.Client.Exit != tt.wantExit {
					t.Errorf("CannotRun %v, exit %d; want none, exit %d", err, x.Client.Exit, tt.wantExit)
				}
				return
			}
			var cr *process.CannotRunError
			if !errors.As(err, &cr) || !strings.Contains(err.Error(), tt.want) || !strings.Contains(err.Error(), "install it with: make agents") {
				t.Errorf("CannotRun: %v, want a *process.CannotRunError with %q and the install hint", err, tt.want)
			}
			if x.Client.Error == "" {
				t.Errorf("the run's Error is empty: %+v", x.Client)
			}
		})
	}
}
