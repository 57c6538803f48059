package atomicfile

import (
	"bytes"
	"errors"
	"os"
	"path/filepath"
	"syscall"
	"testing"

	"github.com/replaycheck/replaycheck/internal/fulldisk"
)

func TestReplace(t *testing.T) {
	path := filepath.Join(t.TempDir(), "report.json")
	for _, data := range [][]byte{[]byte("first\n"), []byte("second, longer\n"), nil} {
		if err := Replace(path, data); err != nil {
			t.Fatal(err)
		}
		got, err := os.ReadFile(path)
		if err != nil {
			t.Fatal(err)
		}
		if !bytes.Equal(got, data) {
			t.Fatalf("file holds %q, want %q", got, data)
		}
	}
	if fi, err := os.Stat(path); err != nil || fi.Mode().Perm() != 0o644 {
		t.Fatalf("mode %v (%v), want 0644", fi.Mode(), err)
	}
}

// TestReplaceOnAFullDisk: a replacement the disk cannot hold leaves the old
// file whole and no temporary file behind.
func TestReplaceOnAFullDisk(t *testing.T) {
	if !fulldisk.Child(t, 1024) {
		return
	}
	dir := t.TempDir()
	path := filepath.Join(dir, "finding.yaml")
	old := []byte("name: the old finding\n")
	if err := Replace(path, old); err != nil {
		t.Fatal(err)
	}
	err := Replace(path, bytes.Repeat([]byte("x"), 4096))
	if !errors.Is(err, syscall.EFBIG) {
		t.Fatalf("Replace past the limit: %v, want EFBIG", err)
	}
	got, _ := os.ReadFile(path)
	if !bytes.Equal(got, old) {
		t.Fatalf("after the failed replace the file holds %d bytes %.40q…, want the old %q", len(got), got, old)
	}
	entries, _ := os.ReadDir(dir)
	if len(entries) != 1 {
		t.Fatalf("files left in the directory: %v, want only finding.yaml", entries)
	}
	fulldisk.Free(t)
}
