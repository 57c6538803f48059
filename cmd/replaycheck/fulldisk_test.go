//go:build unix

package main

import (
	"os"
	"path/filepath"
	"slices"
	"strings"
	"syscall"
	"testing"
)

// limitFileSize makes every write of this process past max bytes of a
// regular file fail (EFBIG), as a full disk makes it fail, until the test
// ends; the Go runtime ignores the SIGXFSZ that comes with it. No test runs
// in parallel with the caller.
func limitFileSize(t *testing.T, max uint64) {
	t.Helper()
	var old syscall.Rlimit
	if err := syscall.Getrlimit(syscall.RLIMIT_FSIZE, &old); err != nil {
		t.Skipf("getrlimit: %v", err)
	}
	limit := syscall.Rlimit{Cur: max, Max: old.Max}
	if err := syscall.Setrlimit(syscall.RLIMIT_FSIZE, &limit); err != nil {
		t.Skipf("setrlimit: %v", err)
	}
	t.Cleanup(func() {
		if err := syscall.Setrlimit(syscall.RLIMIT_FSIZE, &old); err != nil {
			t.Errorf("restoring the file size limit: %v", err)
		}
	})
}

// TestReportsOnAFullDisk: a report that cannot be written whole keeps the
// file it replaces as it was (no truncated run.json, no temporary file
// left) and does not hide the verdict: a broken rule still exits 1, with
// the write error on stderr; a run whose rules all held exits 3.
func TestReportsOnAFullDisk(t *testing.T) {
	tests := []struct {
		name string
		args []string
		want int
	}{
		{"a rule broken", []string{"run", "../../scenarios/seed/fault-on-chat.yaml", "--target", "builtin:naive"}, exitRuleBroken},
		{"every rule held", []string{"run", "../../scenarios/seed/fault-on-chat.yaml", "--target", "builtin:guarded"}, exitCannotRun},
		{"explore finds", []string{"explore", "../../scenarios/seed/no-fault-chat.yaml", "--target", "builtin:naive", "--kinds", "500", "--confirm", "1"}, exitRuleBroken},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			dir := t.TempDir()
			old := map[string]string{}
			args := slices.Clone(tt.args)
			for _, f := range []struct{ flag, name string }{{"--json", "run.json"}, {"--junit", "junit.xml"}, {"--markdown", "summary.md"}} {
				path := filepath.Join(dir, f.name)
				old[path] = "the report of the run before\n"
				if err := os.WriteFile(path, []byte(old[path]), 0o644); err != nil {
					t.Fatal(err)
				}
				args = append(args, f.flag, path)
			}
			limitFileSize(t, 256)
			var out strings.Builder
			root := newRootCmd(strings.NewReader(""), &out, &out)
			root.SetArgs(args)
			err := root.Execute()
			if code := exitCode(err); code != tt.want {
				t.Errorf("exit %d (%v), want %d\n%s", code, err, tt.want, out.String())
			}
			// main prints an error unless it is the bare verdict, which the
			// table already told.
			if err == nil || err == errRulesBroken || !strings.Contains(err.Error(), "file too large") {
				t.Errorf("error %v, want the write error (joined to the verdict)", err)
			}
			for path, want := range old {
				if b, err := os.ReadFile(path); err != nil || string(b) != want {
					t.Errorf("%s now holds %q (%v), want it as it was", filepath.Base(path), b, err)
				}
			}
			entries, err := os.ReadDir(dir)
			if err != nil || len(entries) != len(old) {
				t.Errorf("the directory holds %d entries (%v), want only the %d reports: %v", len(entries), err, len(old), entries)
			}
		})
	}
}
