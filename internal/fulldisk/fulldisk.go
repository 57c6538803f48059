// Package fulldisk runs a test on a full disk: in a child process of the
// test binary in which a write that would take a regular file past a size
// fails (EFBIG, as ENOSPC does on a full disk; RLIMIT_FSIZE, whose SIGXFSZ
// the Go runtime ignores), so that the limit does not also fail the test
// binary's own files (go test's log, profiles).
package fulldisk

import (
	"os"
	"os/exec"
	"regexp"
	"strconv"
	"strings"
	"testing"
)

// env carries the limit to the child.
const env = "REPLAYCHECK_TEST_FULL_DISK_LIMIT"

// Child runs the calling test again in a child process whose regular files
// cannot grow past limit bytes. In the parent it returns false once the
// child is done, the child's failure failing t; in the child, with the
// limit set, it returns true and the test goes on there.
func Child(t *testing.T, limit uint64) bool {
	t.Helper()
	if v := os.Getenv(env); v != "" {
		n, err := strconv.ParseUint(v, 10, 64)
		if err != nil {
			t.Fatalf("%s=%q: %v", env, v, err)
		}
		Limit(t, n)
		return true
	}
	parts := strings.Split(t.Name(), "/")
	for i, p := range parts {
		parts[i] = "^" + regexp.QuoteMeta(p) + "$"
	}
	cmd := exec.CommandContext(t.Context(), os.Args[0], "-test.run="+strings.Join(parts, "/"), "-test.count=1")
	cmd.Env = append(os.Environ(), env+"="+strconv.FormatUint(limit, 10))
	out, err := cmd.CombinedOutput()
	if err != nil {
		t.Fatalf("the full-disk child: %v\n%s", err, out)
	}
	if !strings.Contains(string(out), "PASS") {
		t.Fatalf("the full-disk child did not run the test:\n%s", out)
	}
	return false
}

// Free lifts the limit in the child: space came back.
func Free(t *testing.T) {
	t.Helper()
	Limit(t, 0)
}
