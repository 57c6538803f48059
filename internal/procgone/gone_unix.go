//go:build unix

package procgone

import (
	"errors"
	"fmt"
	"os"
	"strings"
	"syscall"
	"testing"
)

// AssertGone fails t for every pid that is still a live process (a zombie
// waiting for a parent that is not ours does not count).
func AssertGone(t testing.TB, pids []int) {
	t.Helper()
	for _, pid := range pids {
		if err := syscall.Kill(pid, 0); errors.Is(err, syscall.ESRCH) {
			continue
		}
		b, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
		if err != nil {
			continue
		}
		if i := strings.LastIndexByte(string(b), ')'); i >= 0 {
			if f := strings.Fields(string(b[i+1:])); len(f) > 0 && (f[0] == "Z" || f[0] == "X") {
				continue
			}
		}
		t.Errorf("process %d is still running: %s", pid, b)
	}
}
