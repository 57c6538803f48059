//go:build !unix

package procgone

import (
	"os"
	"testing"
)

// AssertGone fails t for every pid that is still a process (without Unix
// process groups the harness kills only the process it started).
func AssertGone(t testing.TB, pids []int) {
	t.Helper()
	for _, pid := range pids {
		if p, err := os.FindProcess(pid); err == nil {
			p.Release()
			t.Errorf("process %d is still running", pid)
		}
	}
}
