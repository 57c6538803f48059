//go:build unix

package process

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"strconv"
	"strings"
	"syscall"
	"time"

	"golang.org/x/sys/unix"
)

// newGroup makes cmd start in a process group of its own, whose id is its
// pid, so that it is stopped with everything it starts.
func newGroup(cmd *exec.Cmd) {
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
}

// guardGroup starts a watchdog that SIGKILLs process group pgid, and then
// removes leftovers, when this process dies without stopping it (kill -9, a
// crash): a shell, in a group of its own, that blocks reading a pipe only
// this process holds open, and acts when the read ends. The returned release
// stops the watchdog without letting it act; call it once the group is gone.
// Without a shell, there is no watchdog and release does nothing.
func guardGroup(pgid int, leftovers []string) (release func()) {
	r, w, err := os.Pipe() // close-on-exec: no other child inherits w
	if err != nil {
		return func() {}
	}
	args := append([]string{"-c", `read x; kill -s KILL -- -"$1" 2>/dev/null; shift; [ $# -eq 0 ] || rm -rf -- "$@"`,
		"replaycheck-guard", strconv.Itoa(pgid)}, leftovers...)
	cmd := exec.Command("/bin/sh", args...)
	cmd.Stdin = r
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true} // out of the group it guards
	err = cmd.Start()
	r.Close()
	if err != nil {
		w.Close()
		return func() {}
	}
	return func() {
		_ = cmd.Process.Kill() // before w closes, so the read never ends
		_ = cmd.Wait()
		w.Close()
	}
}

// terminateGroup sends SIGTERM to process group pgid; it reports true (a
// graceful stop was asked for).
func terminateGroup(pgid int) bool {
	_ = syscall.Kill(-pgid, syscall.SIGTERM)
	return true
}

// killGroup sends SIGKILL to every member of process group pgid (proc, its
// leader, among them).
func killGroup(pgid int, _ *os.Process) error {
	return syscall.Kill(-pgid, syscall.SIGKILL)
}

// waitGroupGone polls until no process is left in group pgid (killing any
// that is), up to limit.
func waitGroupGone(pgid int, limit time.Duration) error {
	ctx, cancel := context.WithTimeout(context.Background(), limit)
	defer cancel()
	tick := time.NewTicker(10 * time.Millisecond)
	defer tick.Stop()
	for {
		if !groupAlive(pgid) {
			return nil
		}
		_ = syscall.Kill(-pgid, syscall.SIGKILL)
		select {
		case <-ctx.Done():
			return fmt.Errorf("process group %d still has members after SIGKILL", pgid)
		case <-tick.C:
		}
	}
}

// groupAlive reports whether any live (not zombie) process is in group pgid.
// Without /proc (macOS) a zombie member counts until its parent reaps it.
func groupAlive(pgid int) bool {
	if err := syscall.Kill(-pgid, 0); errors.Is(err, syscall.ESRCH) {
		return false
	}
	// kill(2) also reaches zombies, which only their parent can reap; look
	// for a member that is not one.
	entries, err := os.ReadDir("/proc")
	if err != nil {
		return true
	}
	for _, e := range entries {
		b, err := os.ReadFile("/proc/" + e.Name() + "/stat")
		if err != nil {
			continue
		}
		// pid (comm) state ppid pgrp …; comm may hold spaces and parens.
		i := bytes.LastIndexByte(b, ')')
		if i < 0 {
			continue
		}
		f := strings.Fields(string(b[i+1:]))
		if len(f) >= 3 && f[2] == fmt.Sprint(pgid) && f[0] != "Z" && f[0] != "X" {
			return true
		}
	}
	return false
}

// signalName is sig's name, SIGKILL (its String is "killed").
func signalName(sig syscall.Signal) string {
	if n := unix.SignalName(sig); n != "" {
		return n
	}
	return sig.String()
}
