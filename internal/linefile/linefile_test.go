package linefile

import (
	"bytes"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"

	"github.com/replaycheck/replaycheck/internal/fulldisk"
)

// line returns a line of n bytes, its break included.
func line(c byte, n int) []byte { return append(bytes.Repeat([]byte{c}, n-1), '\n') }

// TestAppendOnAFullDisk: an append the disk takes only part of leaves the
// file exactly as it was, counts its lines as lost and names the error; once
// space comes back the next append lands whole on a line of its own.
func TestAppendOnAFullDisk(t *testing.T) {
	if !fulldisk.Child(t, 256) {
		return
	}
	for _, sync := range []bool{false, true} {
		path := filepath.Join(t.TempDir(), "log")
		before := line('a', 100)
		if err := os.WriteFile(path, before, 0o644); err != nil {
			t.Fatal(err)
		}
		f, err := Open(path, Options{Sync: sync})
		if err != nil {
			t.Fatal(err)
		}
		if err := f.Append(line('b', 100)); err != nil {
			t.Fatal(err)
		}
		want := string(before) + string(line('b', 100))
		// Two lines, 100 bytes: 56 of them fit.
		err = f.Append(append(line('c', 50), line('d', 50)...))
		if !errors.Is(err, syscall.EFBIG) || !strings.Contains(err.Error(), path) {
			t.Errorf("sync=%v: append past the limit: %v, want EFBIG naming %s", sync, err, path)
		}
		if got, _ := os.ReadFile(path); string(got) != want {
			t.Errorf("sync=%v: after the failed append the file holds %q, want it as it was, %q", sync, got, want)
		}
		if l := f.Loss(); l.Written != 1 || l.Lost != 2 || !errors.Is(l.Err, syscall.EFBIG) {
			t.Errorf("sync=%v: loss %+v, want 1 written, 2 lost, EFBIG", sync, l)
		}
		select {
		case <-f.Failed():
		default:
			t.Errorf("sync=%v: Failed not closed after a failed append", sync)
		}
		fulldisk.Free(t)
		if _, err := f.Write([]byte("e\n")); err != nil {
			t.Fatal(err)
		}
		want += "e\n"
		if got, _ := os.ReadFile(path); string(got) != want {
			t.Errorf("sync=%v: once space came back the file holds %q, want %q", sync, got, want)
		}
		if err := f.Close(); err != nil {
			t.Fatal(err)
		}
		fulldisk.Limit(t, 256) // the disk full again, for the next round
	}
}

// TestAppendAfterATornLine: a file that ends inside a line (torn by someone
// else) gets the next append on a line of its own.
func TestAppendAfterATornLine(t *testing.T) {
	tests := []struct{ name, before, want string }{
		{"empty", "", "x\n"},
		{"whole lines", "a\n", "a\nx\n"},
		{"torn line", "a\nb", "a\nb\nx\n"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			path := filepath.Join(t.TempDir(), "log")
			if err := os.WriteFile(path, []byte(tt.before), 0o644); err != nil {
				t.Fatal(err)
			}
			f, err := Open(path, Options{})
			if err != nil {
				t.Fatal(err)
			}
			if err := f.Append([]byte("x")); err != nil {
				t.Fatal(err)
			}
			if err := f.Close(); err != nil {
				t.Fatal(err)
			}
			if got, _ := os.ReadFile(path); string(got) != tt.want {
				t.Errorf("file %q, want %q", got, tt.want)
			}
		})
	}
}

// TestMaxLine: an append with a line over Options.MaxLine writes none of
// its lines, counts them lost and names the file, the line's size and the
// limit; lines of the limit's length are written.
func TestMaxLine(t *testing.T) {
	path := filepath.Join(t.TempDir(), "log")
	f, err := Open(path, Options{MaxLine: 2 << 20})
	if err != nil {
		t.Fatal(err)
	}
	ok := line('a', 2<<20+1)
	if err := f.Append(ok); err != nil {
		t.Fatal(err)
	}
	err = f.Append(append(line('b', 10), line('c', 2<<20+2)...))
	var le *LineTooLongError
	if !errors.As(err, &le) {
		t.Fatalf("append of a line over the limit: %v, want a *LineTooLongError", err)
	}
	if want := path + ": a line of 2 MiB (2097153 bytes) was not written: it is longer than 2 MiB (2097152 bytes), the most a line may have"; err.Error() != want {
		t.Errorf("error %q, want %q", err, want)
	}
	if l := f.Loss(); l.Written != 1 || l.Lost != 2 {
		t.Errorf("Loss %+v, want 1 written and 2 lost", l)
	}
	if err := f.Close(); err != nil {
		t.Fatal(err)
	}
	if b, err := os.ReadFile(path); err != nil || !bytes.Equal(b, ok) {
		t.Errorf("file holds %d bytes (%v), want only the line of the limit's length", len(b), err)
	}
	for n, want := range map[int]string{512: "512 bytes", 1536: "1.5 KiB (1536 bytes)", 79167890: "75.5 MiB (79167890 bytes)"} {
		if got := size(n); got != want {
			t.Errorf("size(%d) = %q, want %q", n, got, want)
		}
	}
}
