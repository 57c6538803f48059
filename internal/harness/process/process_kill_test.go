//go:build unix

package process_test

import (
	"bufio"
	"context"
	"errors"
	"io/fs"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/replaycheck/replaycheck/internal/harness/process"
)

// TestKilledHarnessTakesItsProcessesAlong SIGKILLs a harness that started a
// target process: a proxy's (which started a child of its own) and a
// client's (a shell that started a sleep in the background). The watchdog
// kills the whole group and removes what the run left (a rendered config,
// the client's run directory), so nothing the harness started outlives it.
func TestKilledHarnessTakesItsProcessesAlong(t *testing.T) {
	for _, kind := range []string{"proxy", "client"} {
		t.Run(kind, func(t *testing.T) {
			ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
			defer cancel()
			h := exec.CommandContext(ctx, os.Args[0], "-test.run=^$")
			h.Env = append(os.Environ(), starterEnv+"="+kind, starterPidFile+"="+filepath.Join(t.TempDir(), "pid"))
			out, err := h.StdoutPipe()
			if err != nil {
				t.Fatal(err)
			}
			if err := h.Start(); err != nil {
				t.Fatal(err)
			}
			pgid, leftovers := readStarter(t, bufio.NewScanner(out))
			t.Cleanup(func() { _ = syscall.Kill(-pgid, syscall.SIGKILL) })
			if !process.GroupAlive(pgid) {
				t.Fatalf("group %d is not running before the kill", pgid)
			}
			for _, l := range leftovers {
				if _, err := os.Stat(l); err != nil {
					t.Fatalf("leftover %s is not there before the kill: %v", l, err)
				}
			}
			if err := h.Process.Kill(); err != nil {
				t.Fatal(err)
			}
			_ = h.Wait()
			tick := time.NewTicker(20 * time.Millisecond)
			defer tick.Stop()
			for process.GroupAlive(pgid) || anyExists(leftovers) {
				select {
				case <-ctx.Done():
					t.Fatalf("process group %d (alive: %v) or leftovers %v outlived the harness killed with SIGKILL", pgid, process.GroupAlive(pgid), leftovers)
				case <-tick.C:
				}
			}
		})
	}
}

// readStarter reads what the starter printed up to "ready": the group's id
// and the leftovers.
func readStarter(t *testing.T, sc *bufio.Scanner) (int, []string) {
	t.Helper()
	pgid := 0
	var leftovers []string
	for sc.Scan() {
		line := sc.Text()
		switch {
		case line == "ready":
			if pgid == 0 {
				t.Fatal("the harness printed no group")
			}
			return pgid, leftovers
		case strings.HasPrefix(line, "pgid "):
			n, err := strconv.Atoi(strings.TrimPrefix(line, "pgid "))
			if err != nil {
				t.Fatalf("the harness printed %q", line)
			}
			pgid = n
		case strings.HasPrefix(line, "leftover "):
			leftovers = append(leftovers, strings.TrimPrefix(line, "leftover "))
		default:
			t.Fatalf("the harness printed %q", line)
		}
	}
	t.Fatalf("the harness ended before it was ready: %v", sc.Err())
	return 0, nil
}

// anyExists reports whether any of paths is still there.
func anyExists(paths []string) bool {
	for _, p := range paths {
		if _, err := os.Stat(p); !errors.Is(err, fs.ErrNotExist) {
			return true
		}
	}
	return false
}

// TestExitDescriptionNamesTheSignal says a process stopped with SIGKILL
// was killed by SIGKILL (not "by killed", the signal's String).
func TestExitDescriptionNamesTheSignal(t *testing.T) {
	p, err := process.Start(process.Command{Argv: []string{"sleep", "600"}, Env: os.Environ()})
	if err != nil {
		t.Fatal(err)
	}
	if err := p.Stop(0); err != nil {
		t.Fatal(err)
	}
	<-p.Done()
	if got, want := p.ExitDescription(), "was killed by SIGKILL"; got != want {
		t.Errorf("ExitDescription() = %q, want %q", got, want)
	}
}
