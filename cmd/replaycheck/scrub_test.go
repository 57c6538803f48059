package main

import (
	"bytes"
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/replaycheck/replaycheck/internal/secret/secrettest"
)

// failingServer is a forwarded MCP server's command that says what it was
// started with on stderr and exits before it serves.
const failingServer = `[sh, -c, 'echo "mcp-server: cannot start with $1" >&2; exit 1', mcp-server, %s]`

// TestRunReportsScrubLeaks runs, for each credential of the shared table, a
// scenario whose forwarded MCP server fails to start with it in its
// command's arguments (a ${VAR} expanded there) and one whose relay URL
// carries it: the table, JSON, Markdown, JUnit and HTML reports and the
// progress on stderr say why each run failed, naming the command and the
// host, and show none of the credentials.
func TestRunReportsScrubLeaks(t *testing.T) {
	secrettest.Setenv(t)
	var b strings.Builder
	for i, l := range secrettest.With("arg") {
		arg := fmt.Sprintf("%q", l.Arg)
		if l.Env != "" {
			arg = `"${` + l.Env + `}"`
		}
		fmt.Fprintf(&b, "- name: command %d %s\n  request: {endpoint: chat}\n  mcp: {command: "+failingServer+"}\n  expect: {rules: [no-replay-after-dispatch]}\n", i, l.Name, arg)
	}
	for i, l := range secrettest.With("url") {
		fmt.Fprintf(&b, "- name: relay %d %s\n  request: {endpoint: chat}\n  mcp: {relay: %q }\n  expect: {rules: [no-replay-after-dispatch]}\n", i, l.Name, l.URL)
	}
	dir := t.TempDir()
	path := filepath.Join(dir, "leaks.yaml")
	if err := os.WriteFile(path, []byte(b.String()), 0o600); err != nil {
		t.Fatal(err)
	}
	files := reportFiles{
		JSON: filepath.Join(dir, "report.json"), JUnit: filepath.Join(dir, "report.xml"),
		Markdown: filepath.Join(dir, "report.md"), HTML: filepath.Join(dir, "report.html"),
		Getenv: func(string) string { return "" },
	}
	var out, errOut bytes.Buffer
	err := runRun(context.Background(), &runOptions{
		Paths: []string{path}, Targets: []string{"builtin:guarded"}, Parallel: 2, Timeout: time.Minute, Seed: "t",
		Verbose: 2, reportFiles: files, Out: &out, ErrOut: &errOut,
	})
	if err == nil {
		t.Fatalf("runRun passed, want every scenario failing:\n%s", out.String())
	}
	outputs := map[string]string{"the table": out.String(), "stderr": errOut.String()}
	for what, f := range map[string]string{"the JSON report": files.JSON, "the JUnit report": files.JUnit, "the Markdown report": files.Markdown, "the HTML report": files.HTML} {
		raw, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		outputs[what] = string(raw)
	}
	shown := secrettest.With("arg")
	for _, l := range secrettest.With("url") {
		if l.Arg == "" {
			shown = append(shown, l)
		}
	}
	for what, text := range outputs {
		if what == "stderr" {
			secrettest.NoSecret(t, what, text, shown) // the progress names the scenarios only
			continue
		}
		secrettest.Check(t, what, text, shown)
	}
	for _, want := range []string{"mcp-server: cannot start with", "127.0.0.1:1", "db.internal.test"} {
		for _, what := range []string{"the table", "the JSON report"} {
			if !strings.Contains(outputs[what], want) {
				t.Errorf("%s does not say %q:\n%s", what, want, outputs[what])
			}
		}
	}
}

// TestServeScrubsLeaks: serve --mcp-command and --mcp-relay whose server
// cannot start or be reached, with a credential of the shared table in its
// arguments or URL, say so without it, on stderr and in the log.
func TestServeScrubsLeaks(t *testing.T) {
	secrettest.Setenv(t)
	run := func(t *testing.T, opts *serveOptions) string {
		var out, errOut bytes.Buffer
		opts.UpstreamAddr, opts.MCPAddr, opts.Verbose, opts.Out, opts.ErrOut = "127.0.0.1:0", "127.0.0.1:0", true, &out, &errOut
		err := runServe(context.Background(), opts)
		if err == nil {
			t.Fatal("runServe: no error, want the forwarded server failing")
		}
		return out.String() + errOut.String() + "replaycheck: " + err.Error()
	}
	for _, l := range secrettest.With("arg") {
		t.Run("--mcp-command with "+l.Name, func(t *testing.T) {
			got := run(t, &serveOptions{MCPCommand: "/nonexistent/mcp-server " + l.Arg})
			secrettest.Check(t, "serve's output", got, []secrettest.Leak{l})
			if !strings.Contains(got, "/nonexistent/mcp-server") {
				t.Errorf("serve's output does not name the command:\n%s", got)
			}
		})
	}
	for _, l := range secrettest.With("url") {
		t.Run("--mcp-relay with "+l.Name, func(t *testing.T) {
			got := run(t, &serveOptions{MCPRelay: l.URL})
			secrettest.Check(t, "serve's output", got, []secrettest.Leak{l})
			if !strings.Contains(got, "127.0.0.1:1") {
				t.Errorf("serve's output does not name the host:\n%s", got)
			}
		})
	}
}
