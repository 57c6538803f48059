//go:build unix

package fulldisk

import (
	"syscall"
	"testing"
)

// Limit sets, in the child, the size past which a regular file cannot
// grow to n bytes; 0 lifts the limit.
func Limit(t *testing.T, n uint64) {
	t.Helper()
	var lim syscall.Rlimit
	if err := syscall.Getrlimit(syscall.RLIMIT_FSIZE, &lim); err != nil {
		t.Fatal(err)
	}
	lim.Cur = lim.Max
	if n > 0 {
		lim.Cur = n
	}
	if err := syscall.Setrlimit(syscall.RLIMIT_FSIZE, &lim); err != nil {
		t.Fatal(err)
	}
}
