//go:build linux

package main

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/replaycheck/replaycheck/internal/itemserver"
	"github.com/replaycheck/replaycheck/internal/syncbuf"
)

// stubbornCommand is the --mcp-command of a stubborn item server (see
// itemserver.StubbornArg) in mode, keeping its files in a new directory,
// and that directory.
func stubbornCommand(t *testing.T, mode string) (string, string) {
	dir := t.TempDir()
	return strings.Join([]string{os.Args[0], itemserver.StubbornArg, dir, mode}, " "), dir
}

// notedWriter is a writer safe for concurrent use that signals each write.
type notedWriter struct {
	mu    sync.Mutex
	b     strings.Builder
	wrote chan struct{}
}

func (w *notedWriter) Write(p []byte) (int, error) {
	w.mu.Lock()
	defer w.mu.Unlock()
	select {
	case w.wrote <- struct{}{}:
	default:
	}
	return w.b.Write(p)
}

func (w *notedWriter) String() string {
	w.mu.Lock()
	defer w.mu.Unlock()
	return w.b.String()
}

// waitFor waits until w holds every one of want, or fails the test.
func (w *notedWriter) waitFor(t *testing.T, want ...string) {
	t.Helper()
	deadline := time.After(20 * time.Second)
	for {
		got := w.String()
		if !slices.ContainsFunc(want, func(s string) bool { return !strings.Contains(got, s) }) {
			return
		}
		select {
		case <-w.wrote:
		case <-deadline:
			t.Fatalf("stderr lacks %q:\n%s", want, got)
		}
	}
}

// TestServeForwardedServerDies: serve --mcp-command whose server exits
// with code 9 after its first answer says so on stderr at once, with the
// exit status and the last lines of the server's stderr, while serve runs;
// a later call is refused as server_gone (counted in GET counts and the
// table, none unknown); and serve exits 3 saying the same.
func TestServeForwardedServerDies(t *testing.T) {
	command, _ := stubbornCommand(t, "exit9")
	errOut := &notedWriter{wrote: make(chan struct{}, 1)}
	upURL, mcpURL, out, stop := startServe(t, &serveOptions{MCPCommand: command, ErrOut: errOut})
	ctx, cs := serveMCPClient(t, mcpURL)
	const tok = "rc0000000die"
	if res, err := cs.CallTool(ctx, &mcp.CallToolParams{Name: "create_item", Arguments: map[string]any{"name": tok + "-a"}}); err != nil || res.IsError {
		t.Fatalf("the first call: %v %+v", err, res)
	}
	said := []string{"serve: the MCP server", "exited with code 9", "answered once; exiting", "calls to it are refused from now on"}
	errOut.waitFor(t, said...) // while serve runs: stop is called below

	_, err := cs.CallTool(ctx, &mcp.CallToolParams{Name: "create_item", Arguments: map[string]any{"name": tok + "-b"}})
	var rpcErr *jsonrpc.Error
	if !errors.As(err, &rpcErr) || !strings.Contains(rpcErr.Message, "exited with code 9") {
		t.Errorf("the call after the exit: %v; want a JSON-RPC error naming the exit", err)
	}
	if c := serveCounts(t, upURL); c.Total.MCP.ServerGone != 1 || c.Total.MCP.Unknown != 0 || c.Total.MCP.Writes != 1 {
		t.Errorf("counts: server_gone %d, unknown %d, writes %d; want 1, 0, 1", c.Total.MCP.ServerGone, c.Total.MCP.Unknown, c.Total.MCP.Writes)
	}
	err = stop()
	if exitCode(err) != 3 {
		t.Errorf("serve's exit %d (%v), want 3", exitCode(err), err)
	}
	for _, want := range said[1:3] {
		if !strings.Contains(fmt.Sprint(err), want) {
			t.Errorf("serve's error %q lacks %q", err, want)
		}
	}
	if !strings.Contains(out.String(), "│ 2 (1 refused: server gone) │") {
		t.Errorf("the table does not show the call refused:\n%s", out.String())
	}
	if strings.Contains(out.String(), "serve stopped") {
		t.Errorf("serve said it stopped cleanly:\n%s", out.String())
	}
}

// TestServeMCPEnv: --mcp-env NAME=VALUE sets a variable of the forwarded
// server's environment (an empty value and one holding "=" included), NAME
// passes serve's own (one serve's environment lacks is said on stderr),
// and nothing else of serve's reaches it (its control key); a malformed --mcp-env, or one without --mcp-command, is refused
// with exit 2 naming the flag and the value.
func TestServeMCPEnv(t *testing.T) {
	t.Setenv("MY_PASSED", "passed-value")
	t.Setenv("REPLAYCHECK_CONTROL_KEY", "controlkey0123456789")
	command, dir := stubbornCommand(t, "stay")
	var errOut syncbuf.Buffer
	_, _, _, stop := startServe(t, &serveOptions{MCPCommand: command, ErrOut: &errOut,
		MCPEnv: []string{"MY_SET=set-value", "MY_EMPTY=", "MY_URL=postgres://db/x?sslmode=disable", "MY_PASSED", "MY_UNSET_IN_SERVE"}})
	b, err := os.ReadFile(filepath.Join(dir, "env"))
	if err != nil {
		t.Fatal(err)
	}
	env := strings.Split(string(b), "\n")
	for _, want := range []string{"MY_SET=set-value", "MY_EMPTY=", "MY_URL=postgres://db/x?sslmode=disable", "MY_PASSED=passed-value"} {
		if !slices.Contains(env, want) {
			t.Errorf("the server's environment lacks %s: %q", want, env)
		}
	}
	for _, kv := range env {
		if strings.HasPrefix(kv, "REPLAYCHECK_CONTROL_KEY=") {
			t.Errorf("the server got serve's %s", kv)
		}
	}
	if err := stop(); err != nil {
		t.Errorf("serve: %v", err)
	}
	if want := "serve: --mcp-env MY_UNSET_IN_SERVE: serve's environment has no MY_UNSET_IN_SERVE, so the MCP server does not get it either"; !strings.Contains(errOut.String(), want) {
		t.Errorf("serve's stderr lacks %q:\n%s", want, errOut.String())
	}
	if strings.Contains(errOut.String(), "--mcp-env MY_PASSED") {
		t.Errorf("serve warned of MY_PASSED, which its environment has:\n%s", errOut.String())
	}

	tests := []struct {
		name    string
		command string
		env     []string
		want    string
	}{
		{"empty", command, []string{""}, `--mcp-env "": want NAME=VALUE, or NAME to pass serve's own`},
		{"no name", command, []string{"=value"}, `--mcp-env "=value": want NAME=VALUE, or NAME to pass serve's own`},
		{"only =", command, []string{"="}, `--mcp-env "=": want NAME=VALUE`},
		{"NUL in the name", command, []string{"MY\x00VAR=x"}, `--mcp-env "MY\x00VAR=x": want NAME=VALUE`},
		{"second bad", command, []string{"OK=1", "=2"}, `--mcp-env "=2": want NAME=VALUE`},
		{"no command", "", []string{"MY_SET=x"}, "--mcp-env needs --mcp-command"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second) // a form taken serves until then
			defer cancel()
			err := runServe(ctx, &serveOptions{UpstreamAddr: "127.0.0.1:0", MCPAddr: "127.0.0.1:0", MCPCommand: tt.command, MCPEnv: tt.env})
			if exitCode(err) != 2 || err == nil || !strings.Contains(err.Error(), tt.want) {
				t.Errorf("serve --mcp-env %q: exit %d, %v; want exit 2 saying %q", tt.env, exitCode(err), err, tt.want)
			}
		})
	}
}
