//go:build !unix

package process

import (
	"os"
	"os/exec"
	"syscall"
	"time"
)

// On systems without Unix process groups (Windows), the harness stops the
// process it started itself and nothing else: there is no group to signal,
// no graceful SIGTERM (stop_grace is not waited for), and processes the
// command started in turn are left to it. A proxy or client that spawns
// children should be wrapped so that they end with it.

// guardGroup has no group to guard and no watchdog to remove leftovers;
// release does nothing.
func guardGroup(int, []string) (release func()) { return func() {} }

// newGroup does nothing: there are no process groups here.
func newGroup(*exec.Cmd) {}

// terminateGroup has no graceful stop to send; it reports false.
func terminateGroup(int) bool { return false }

// killGroup kills proc itself.
func killGroup(_ int, proc *os.Process) error { return proc.Kill() }

// waitGroupGone has no group to wait for: the process itself is reaped by
// the caller's Wait.
func waitGroupGone(int, time.Duration) error { return nil }

// signalName is sig's description: Windows has no signal names.
func signalName(sig syscall.Signal) string { return sig.String() }
