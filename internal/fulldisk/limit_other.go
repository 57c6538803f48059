//go:build !unix

package fulldisk

import "testing"

// Limit skips the test: there is no file size limit here.
func Limit(t *testing.T, _ uint64) {
	t.Helper()
	t.Skip("no file size limit (RLIMIT_FSIZE) here")
}
