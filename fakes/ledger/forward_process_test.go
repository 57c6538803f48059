//go:build linux

package ledger

import (
	"errors"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/jsonrpc"

	"github.com/replaycheck/replaycheck/internal/itemserver"
	"github.com/replaycheck/replaycheck/internal/wire"
)

// stubborn returns the command of a stubborn item server (see
// itemserver.StubbornArg) keeping its files in a new directory, and that
// directory.
func stubborn(t *testing.T, mode string) ([]string, string) {
	dir := t.TempDir()
	return []string{os.Args[0], itemserver.StubbornArg, dir, mode}, dir
}

// TestForwardServerStopsWithItsGroup: a forwarded server that ignores EOF
// and SIGTERM, and its grandchild holding its stdout, are both gone when
// the ledger closes — also behind a wrapper shell (sh -c "…; true", the
// shape of npx and uv run), which alone used to be killed.
func TestForwardServerStopsWithItsGroup(t *testing.T) {
	for _, wrapped := range []bool{false, true} {
		t.Run(map[bool]string{false: "direct", true: "wrapped"}[wrapped], func(t *testing.T) {
			argv, dir := stubborn(t, "stay")
			if wrapped {
				argv = []string{"/bin/sh", "-c", `"$0" "$@"; true`, argv[0], argv[1], argv[2], argv[3]}
			}
			s, err := New(Config{Forward: &Forward{Command: argv}})
			if err != nil {
				t.Fatal(err)
			}
			pids := itemserver.StubbornPids(t, dir)
			begin := time.Now()
			_ = s.Close()
			t.Logf("closed in %v", time.Since(begin))
			if alive := itemserver.WaitGone(pids, 5*time.Second); len(alive) > 0 {
				t.Errorf("processes %v of the server %v outlived the ledger", alive, pids)
			}
		})
	}
}

// TestForwardServerEnv: a forwarded server gets the scrubbed environment a
// client target gets, the variables Env sets and those PassEnv names — none
// of replaycheck's credentials.
func TestForwardServerEnv(t *testing.T) {
	t.Setenv("GITHUB_TOKEN", "ghp_notarealtoken0123456789")
	t.Setenv("REPLAYCHECK_CONTROL_KEY", "controlkey0123456789")
	t.Setenv("MY_PASSED", "passed-value")
	argv, dir := stubborn(t, "stay")
	newLedger(t, Config{Forward: &Forward{Command: argv, Env: []string{"MY_SET=set-value"}, PassEnv: []string{"MY_PASSED"}}})
	b, err := os.ReadFile(filepath.Join(dir, "env"))
	if err != nil {
		t.Fatal(err)
	}
	env := strings.Split(string(b), "\n")
	for _, want := range []string{"MY_SET=set-value", "MY_PASSED=passed-value", "PATH=" + os.Getenv("PATH")} {
		if !slices.Contains(env, want) {
			t.Errorf("the server's environment lacks %s: %q", want, env)
		}
	}
	for _, kv := range env {
		if k, _, _ := strings.Cut(kv, "="); k == "GITHUB_TOKEN" || k == "REPLAYCHECK_CONTROL_KEY" {
			t.Errorf("the server got %s", k)
		}
	}
}

// TestForwardServerDeath: a forwarded server that exits after its first
// answer is said at once (Exited, ForwardExit) with its exit status and
// stderr, and a later call is refused and counted as such, not as a call
// that may have run.
func TestForwardServerDeath(t *testing.T) {
	const token = "rcfwddeath01"
	argv, _ := stubborn(t, "exit9")
	died := make(chan error, 1)
	s, url := newLedger(t, Config{Forward: &Forward{Command: argv, Exited: func(err error) { died <- err }}})
	cs := connect(t, url, "")
	if _, err := callTool(t, cs, "create_item", map[string]any{"name": token + "-a"}); err != nil {
		t.Fatal(err)
	}
	var err error
	select {
	case err = <-died:
	case <-time.After(testTimeout):
		t.Fatal("the server's exit was not said")
	}
	for _, want := range []string{"exited with code 9", "answered once; exiting"} {
		if !strings.Contains(err.Error(), want) {
			t.Errorf("Exited(%q), want it to say %q", err, want)
		}
	}
	if got := s.ForwardExit(); got == nil || got.Error() != err.Error() {
		t.Errorf("ForwardExit() = %v, want %v", got, err)
	}
	_, err = callTool(t, cs, "create_item", map[string]any{"name": token + "-b"})
	var rpcErr *jsonrpc.Error
	if !errors.As(err, &rpcErr) || rpcErr.Code != codeServerGone || !strings.Contains(rpcErr.Message, "exited with code 9") {
		t.Errorf("call after the exit: %v, want a JSON-RPC error %d naming the exit", err, codeServerGone)
	}
	c := waitCounts(t, s, token, func(c wire.MCPCounts) bool { return c.ServerGone == 1 })
	if c.Unknown != 0 || c.Writes != 1 {
		t.Errorf("counts %+v, want 1 write, 1 refused as gone, none unknown", c)
	}
}

// TestForwardServerCannotStart: a server that exits before serving is
// reported with its stderr and exit status; one that is not found with the
// install hint.
func TestForwardServerCannotStart(t *testing.T) {
	fatal, _ := stubborn(t, "fatal")
	tests := []struct {
		name string
		fwd  Forward
		want []string
	}{
		{"exits", Forward{Command: fatal}, []string{"exited with code 1", "fatal: MY_SERVER_DB_URL is not set"}},
		{"not found", Forward{Command: []string{"replaycheck-no-such-server"}, Install: "pip install my-server"}, []string{"not found", "install it with: pip install my-server"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, err := New(Config{Forward: &tt.fwd})
			if err == nil {
				t.Fatal("New succeeded")
			}
			for _, w := range tt.want {
				if !strings.Contains(err.Error(), w) {
					t.Errorf("New: %v\nwant it to say %q", err, w)
				}
			}
		})
	}
}
