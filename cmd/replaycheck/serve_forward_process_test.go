//go:build linux

package main

import (
	"bufio"
	"context"
	"os"
	"os/exec"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/replaycheck/replaycheck/internal/itemserver"
)

// TestServeStopsForwardedServer: serve --mcp-command whose server ignores
// EOF and SIGTERM and started a grandchild holding its stdout leaves no
// process behind when serve gets SIGINT (within a second or two), or is
// killed with SIGKILL (the watchdog).
func TestServeStopsForwardedServer(t *testing.T) {
	bin := releaseBinary(t)
	for _, tt := range []struct {
		name string
		sig  syscall.Signal
	}{{"SIGINT", syscall.SIGINT}, {"SIGKILL", syscall.SIGKILL}} {
		t.Run(tt.name, func(t *testing.T) {
			dir := t.TempDir()
			ctx, cancel := context.WithTimeout(t.Context(), time.Minute)
			defer cancel()
			cmd := exec.CommandContext(ctx, bin, "serve", "--upstream-addr", "127.0.0.1:0", "--mcp-addr", "127.0.0.1:0",
				"--mcp-command", strings.Join([]string{os.Args[0], itemserver.StubbornArg, dir, "stay"}, " "))
			stdout, err := cmd.StdoutPipe()
			if err != nil {
				t.Fatal(err)
			}
			var stderr strings.Builder
			cmd.Stderr = &stderr
			if err := cmd.Start(); err != nil {
				t.Fatal(err)
			}
			defer cmd.Process.Kill()
			ready := make(chan bool, 1)
			go func() {
				sc := bufio.NewScanner(stdout)
				for sc.Scan() {
					if strings.Contains(sc.Text(), "control API:") {
						ready <- true
						break
					}
				}
				for sc.Scan() { // drain, so serve never blocks writing
				}
				close(ready)
			}()
			select {
			case ok := <-ready:
				if !ok {
					t.Fatalf("serve ended before it was ready: %s", stderr.String())
				}
			case <-ctx.Done():
				t.Fatal("serve was not ready within a minute")
			}
			pids := itemserver.StubbornPids(t, dir)
			begin := time.Now()
			if err := cmd.Process.Signal(tt.sig); err != nil {
				t.Fatal(err)
			}
			_ = cmd.Wait()
			alive := itemserver.WaitGone(pids, 5*time.Second)
			t.Logf("serve and its server %v gone in %v", pids, time.Since(begin))
			if len(alive) > 0 {
				t.Errorf("processes %v of the forwarded server %v outlived serve (%s)", alive, pids, tt.name)
			}
		})
	}
}
