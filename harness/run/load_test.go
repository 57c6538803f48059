package run

import (
	"os/exec"
	"syscall"
	"testing"
)

// busyLoops is how many spinning processes TestVerdictsUnderLoad starts:
// four per core of this project's 2-core CI machine and then some.
const busyLoops = 8

// TestVerdictsUnderLoad: the suite gives the same verdict per scenario on a
// saturated CPU as without load, on the guarded and the naive gateway. A
// timing rule must judge what the target decided, not how fast the machine
// ran. The load is real processes spinning beside the test, killed when it
// ends; the test is skipped in -short mode.
func TestVerdictsUnderLoad(t *testing.T) {
	if testing.Short() {
		t.Skip("starts busy processes; skipped in -short mode")
	}
	ss := loadSuite(t)
	for _, name := range []string{"builtin:guarded", "builtin:naive"} {
		idle := runSuite(t, ss, name, 4)
		stop := saturate(t)
		loaded := runSuite(t, ss, name, 16)
		stop()
		for scen, r := range idle {
			if got := loaded[scen].Verdict; got != r.Verdict {
				t.Errorf("%s on %s: %s idle, %s under load%s", scen, name, r.Verdict, got, describe(loaded[scen]))
			}
		}
	}
}

// saturate starts busyLoops spinning processes, each in its own process
// group, and returns a func that kills them (also run at cleanup).
func saturate(t *testing.T) func() {
	t.Helper()
	var cmds []*exec.Cmd
	for range busyLoops {
		c := exec.Command("sh", "-c", "while :; do :; done")
		c.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
		if err := c.Start(); err != nil {
			t.Skipf("cannot start a busy loop: %v", err)
		}
		cmds = append(cmds, c)
	}
	stopped := false
	stop := func() {
		if stopped {
			return
		}
		stopped = true
		for _, c := range cmds {
			_ = syscall.Kill(-c.Process.Pid, syscall.SIGKILL)
			_ = c.Wait()
		}
	}
	t.Cleanup(stop)
	return stop
}
