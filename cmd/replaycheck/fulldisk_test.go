//go:build unix

package main

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/rogpeppe/go-internal/testscript"

	"github.com/replaycheck/replaycheck/fakes/gateway"
	"github.com/replaycheck/replaycheck/fakes/ledgerstdio"
	"github.com/replaycheck/replaycheck/internal/itemserver"
)

// TestMain lets the test binary run replaycheck on a full disk
// (fullDiskEnv): a child process, so that the file size limit does not
// also fail the writes of the test binary itself (go test's log). It also
// puts replaycheck (this package's main) on PATH: testscript runs the test
// binary under that name (TestExitCodeWhenStdoutIsClosed).
func TestMain(m *testing.M) {
	if code, ok := ledgerstdio.Main(os.Args[1:]); ok {
		os.Exit(code) // the built-in gateway spawns ledger-stdio as os.Executable
	}
	if code, ok := gateway.ProcessMain(os.Args[1:]); ok {
		os.Exit(code) // the built-in gateway a resume scenario kills runs as os.Executable
	}
	if code, ok := itemserver.Main(os.Args[1:]); ok {
		os.Exit(code) // a forwarded MCP server (serve_forward_test.go)
	}
	if args := os.Getenv(fullDiskEnv); args != "" {
		os.Exit(fullDiskChild(args))
	}
	testscript.Main(removingReleaseDir{m}, map[string]func(){"replaycheck": main})
}

// removingReleaseDir runs the tests, then removes releaseBinary's
// directory.
type removingReleaseDir struct{ m *testing.M }

func (r removingReleaseDir) Run() int {
	code := r.m.Run()
	if releaseDir != "" {
		_ = os.RemoveAll(releaseDir)
	}
	return code
}

// fullDiskEnv holds the JSON arguments of a replaycheck run on a full disk.
const fullDiskEnv = "REPLAYCHECK_TEST_FULL_DISK_ARGS"

// fullDiskResult is what a run on a full disk ended with.
type fullDiskResult struct {
	Code   int
	Err    string
	Output string
}

// fullDiskChild makes every write of this process past 256 bytes of a
// regular file fail (EFBIG), as a full disk makes it fail — the Go runtime
// ignores the SIGXFSZ that comes with it — runs replaycheck with args and
// prints the fullDiskResult as JSON on stdout, a pipe.
func fullDiskChild(args string) int {
	var argv []string
	if err := json.Unmarshal([]byte(args), &argv); err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 2
	}
	var old syscall.Rlimit
	if err := syscall.Getrlimit(syscall.RLIMIT_FSIZE, &old); err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 2
	}
	if err := syscall.Setrlimit(syscall.RLIMIT_FSIZE, &syscall.Rlimit{Cur: 256, Max: old.Max}); err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 2
	}
	var out strings.Builder
	root := newRootCmd(strings.NewReader(""), &out, &out)
	root.SetArgs(argv)
	var r fullDiskResult
	if err := root.Execute(); err != nil {
		r.Code, r.Err = exitCode(err), err.Error()
		// main prints an error unless it is the bare verdict, which the
		// table already told.
		if err == errRulesBroken {
			r.Err = ""
		}
	}
	r.Output = out.String()
	if err := json.NewEncoder(os.Stdout).Encode(r); err != nil {
		return 2
	}
	return 0
}

// runOnFullDisk runs replaycheck with args in a child process on a full disk.
func runOnFullDisk(t *testing.T, args []string) fullDiskResult {
	t.Helper()
	argv, err := json.Marshal(args)
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(t.Context(), 2*time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, os.Args[0], "-test.run=^$")
	cmd.Env = append(os.Environ(), fullDiskEnv+"="+string(argv))
	var stderr strings.Builder
	cmd.Stderr = &stderr
	stdout, err := cmd.Output()
	if err != nil {
		t.Fatalf("the full-disk child: %v\n%s", err, stderr.String())
	}
	var r fullDiskResult
	if err := json.Unmarshal(stdout, &r); err != nil {
		t.Fatalf("the full-disk child printed %q: %v\n%s", stdout, err, stderr.String())
	}
	return r
}

// TestReportsOnAFullDisk: a report that cannot be written whole keeps the
// file it replaces as it was (no truncated run.json, no temporary file
// left) and does not hide the verdict: a broken rule still exits 1, with
// the write error on stderr; a run whose rules all held exits 3.
func TestReportsOnAFullDisk(t *testing.T) {
	tests := []struct {
		name string
		args []string
		want int
	}{
		{"a rule broken", []string{"run", "../../scenarios/seed/fault-on-chat.yaml", "--target", "builtin:naive"}, exitRuleBroken},
		{"every rule held", []string{"run", "../../scenarios/seed/fault-on-chat.yaml", "--target", "builtin:guarded"}, exitCannotRun},
		{"explore finds", []string{"explore", "../../scenarios/seed/no-fault-chat.yaml", "--target", "builtin:naive", "--kinds", "500", "--confirm", "1"}, exitRuleBroken},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			dir := t.TempDir()
			old := map[string]string{}
			args := slices.Clone(tt.args)
			for _, f := range []struct{ flag, name string }{{"--json", "run.json"}, {"--junit", "junit.xml"}, {"--markdown", "summary.md"}} {
				path := filepath.Join(dir, f.name)
				old[path] = "the report of the run before\n"
				if err := os.WriteFile(path, []byte(old[path]), 0o644); err != nil {
					t.Fatal(err)
				}
				args = append(args, f.flag, path)
			}
			r := runOnFullDisk(t, args)
			if r.Code != tt.want {
				t.Errorf("exit %d (%v), want %d\n%s", r.Code, r.Err, tt.want, r.Output)
			}
			if !strings.Contains(r.Err, "file too large") {
				t.Errorf("error %q, want the write error (joined to the verdict)", r.Err)
			}
			for path, want := range old {
				if b, err := os.ReadFile(path); err != nil || string(b) != want {
					t.Errorf("%s now holds %q (%v), want it as it was", filepath.Base(path), b, err)
				}
			}
			entries, err := os.ReadDir(dir)
			if err != nil || len(entries) != len(old) {
				t.Errorf("the directory holds %d entries (%v), want only the %d reports: %v", len(entries), err, len(old), entries)
			}
		})
	}
}

// TestExitCodeWhenStdoutIsClosed: "replaycheck run … | head -1" ends the
// pipe before the table is written; the write fails (EPIPE, said on stderr)
// instead of SIGPIPE killing replaycheck (exit 141 in a shell), so a broken
// rule still exits 1. It runs the replaycheck that testscript.Main puts on
// PATH, as a child whose stdout is a pipe with no reader.
func TestExitCodeWhenStdoutIsClosed(t *testing.T) {
	bin, err := exec.LookPath("replaycheck")
	if err != nil {
		t.Fatal(err)
	}
	r, w, err := os.Pipe()
	if err != nil {
		t.Fatal(err)
	}
	r.Close()
	ctx, cancel := context.WithTimeout(t.Context(), 2*time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, bin, "run", "../../scenarios/seed/fault-on-chat.yaml", "--target", "builtin:naive")
	cmd.Stdout = w
	var stderr strings.Builder
	cmd.Stderr = &stderr
	err = cmd.Run()
	w.Close()
	var exit *exec.ExitError
	if !errors.As(err, &exit) || exit.ExitCode() != exitRuleBroken || !strings.Contains(stderr.String(), "broken pipe") {
		t.Errorf("%v, want exit %d and the write error\nstderr:\n%s", err, exitRuleBroken, stderr.String())
	}
}
