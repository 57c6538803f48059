//go:build unix

package target

import (
	"bufio"
	"context"
	"os"
	"os/exec"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"
)

// TestKilledHarnessTakesItsProcessesAlong SIGKILLs a harness that started a
// target process (which started a child of its own): the watchdog kills the
// whole group, so nothing the harness started outlives it.
func TestKilledHarnessTakesItsProcessesAlong(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	h := exec.CommandContext(ctx, os.Args[0], "-test.run=^$")
	h.Env = append(os.Environ(), starterEnv+"=1")
	out, err := h.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := h.Start(); err != nil {
		t.Fatal(err)
	}
	line, err := bufio.NewReader(out).ReadString('\n')
	if err != nil {
		t.Fatalf("the harness printed no group: %v", err)
	}
	pgid, err := strconv.Atoi(strings.TrimSpace(strings.TrimPrefix(line, "pgid ")))
	if err != nil {
		t.Fatalf("the harness printed %q", line)
	}
	t.Cleanup(func() { _ = syscall.Kill(-pgid, syscall.SIGKILL) })
	if !groupAlive(pgid) {
		t.Fatalf("group %d is not running before the kill", pgid)
	}
	if err := h.Process.Kill(); err != nil {
		t.Fatal(err)
	}
	_ = h.Wait()
	tick := time.NewTicker(20 * time.Millisecond)
	defer tick.Stop()
	for groupAlive(pgid) {
		select {
		case <-ctx.Done():
			t.Fatalf("process group %d outlived the harness killed with SIGKILL", pgid)
		case <-tick.C:
		}
	}
}
