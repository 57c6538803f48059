package itemserver

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"os"
	"os/exec"
	"os/signal"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// StubbornArg makes a test binary a stubborn item server over stdio (see
// Main): os.Args[0] StubbornArg DIR MODE. It writes its environment to
// DIR/env, starts a grandchild that holds its stdout and ignores SIGTERM,
// writes both pids to DIR/pids, ignores SIGTERM itself and serves; MODE
// "stay" keeps running after stdin's EOF, "exit9" exits with code 9 right
// after its first answer, "fatal" prints "fatal: MY_SERVER_DB_URL is not
// set" on stderr and exits 1 before serving.
const StubbornArg = "forward-stubborn-server"

// grandchildArg makes a test binary a stubborn server's grandchild.
const grandchildArg = "forward-stubborn-grandchild"

// stubbornLife bounds how long a stubborn server or its grandchild lives,
// should nothing kill it.
const stubbornLife = 2 * time.Minute

// stubbornMain runs a stubborn server (StubbornArg) or its grandchild.
func stubbornMain(args []string) (int, bool) {
	switch {
	case len(args) == 1 && args[0] == grandchildArg:
		signal.Ignore(syscall.SIGTERM)
		time.Sleep(stubbornLife)
		return 0, true
	case len(args) != 3 || args[0] != StubbornArg:
		return 0, false
	}
	dir, mode := args[1], args[2]
	if mode == "fatal" {
		fmt.Fprintln(os.Stderr, "fatal: MY_SERVER_DB_URL is not set")
		return 1, true
	}
	signal.Ignore(syscall.SIGTERM)
	if err := os.WriteFile(filepath.Join(dir, "env"), []byte(strings.Join(os.Environ(), "\n")), 0o644); err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 2, true
	}
	gc := exec.Command(os.Args[0], grandchildArg)
	gc.Stdout = os.Stdout // holds the pipe to the ledger open
	if err := gc.Start(); err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 2, true
	}
	pids := fmt.Sprintf("%d %d", os.Getpid(), gc.Process.Pid)
	if err := os.WriteFile(filepath.Join(dir, "pids"), []byte(pids), 0o644); err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 2, true
	}
	var out io.WriteCloser = os.Stdout
	if mode == "exit9" {
		out = exitAfterAnswer{os.Stdout}
	}
	err := (&Server{}).MCPServer().Run(context.Background(), &mcp.IOTransport{Reader: os.Stdin, Writer: out})
	fmt.Fprintln(os.Stderr, "stdin closed:", err)
	time.Sleep(stubbornLife)
	return 0, true
}

// exitAfterAnswer writes to its file and exits with code 9 after writing a
// tool's answer.
type exitAfterAnswer struct{ *os.File }

func (w exitAfterAnswer) Write(p []byte) (int, error) {
	n, err := w.File.Write(p)
	if bytes.Contains(p, []byte(`"created `)) {
		fmt.Fprintln(os.Stderr, "answered once; exiting")
		os.Exit(9)
	}
	return n, err
}

// StubbornPids returns the pids a stubborn server wrote to dir: its own
// and its grandchild's.
func StubbornPids(t testing.TB, dir string) []int {
	t.Helper()
	b, err := os.ReadFile(filepath.Join(dir, "pids"))
	if err != nil {
		t.Fatal(err)
	}
	var pids []int
	for _, f := range strings.Fields(string(b)) {
		pid, err := strconv.Atoi(f)
		if err != nil {
			t.Fatal(err)
		}
		pids = append(pids, pid)
	}
	return pids
}

// Alive reports whether process pid runs (exists and is not a zombie).
func Alive(pid int) bool {
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	if err != nil {
		return syscall.Kill(pid, 0) == nil
	}
	i := bytes.LastIndexByte(b, ')')
	f := strings.Fields(string(b[i+1:]))
	return len(f) > 0 && f[0] != "Z" && f[0] != "X"
}

// WaitGone waits up to limit until none of pids runs, and returns those
// still running.
func WaitGone(pids []int, limit time.Duration) []int {
	deadline := time.Now().Add(limit)
	for {
		var alive []int
		for _, pid := range pids {
			if Alive(pid) {
				alive = append(alive, pid)
			}
		}
		if len(alive) == 0 || time.Now().After(deadline) {
			return alive
		}
		time.Sleep(10 * time.Millisecond)
	}
}
