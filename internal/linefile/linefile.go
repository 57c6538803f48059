// Package linefile appends lines to a file so that each append lands whole
// or not at all: an append the file system refuses part-way (a full disk, a
// file size limit, a failed sync) is cut back off, so the file holds exactly
// the lines whose appends succeeded, each on its own line. A File counts the
// lines it wrote and lost, so a program can tell its user what a failing
// disk cost instead of losing lines in silence.
package linefile

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"os"
	"strings"
	"sync"
)

// Options say how a File is opened and written.
type Options struct {
	// Sync syncs every append; an append counts as written only once synced.
	Sync bool
	// New requires the file not to exist yet.
	New bool
	// MaxLine, when above 0, is the longest line an append may write, its
	// line break not counted: an append with a longer line writes nothing
	// and fails with a *LineTooLongError, its lines counted as lost.
	MaxLine int
}

// LineTooLongError is a line longer than the limit of its file: refused by
// an append (Line 0, Len its length) or met by a reader (Line its number
// from 1, Len 0: how far it goes was not read).
type LineTooLongError struct {
	Path string
	Line int
	Len  int
	Max  int
}

func (e *LineTooLongError) Error() string {
	if e.Line > 0 {
		return fmt.Sprintf("%s:%d: the line is longer than %s, the most a line may have", e.Path, e.Line, size(e.Max))
	}
	return fmt.Sprintf("%s: a line of %s was not written: it is longer than %s, the most a line may have", e.Path, size(e.Len), size(e.Max))
}

// size says n bytes for a person: "75.5 MiB (79167890 bytes)", or "512
// bytes" below a KiB.
func size(n int) string {
	const kib = 1 << 10
	v, unit := float64(n), ""
	for _, u := range []string{"KiB", "MiB", "GiB"} {
		if v < kib {
			break
		}
		v, unit = v/kib, u
	}
	if unit == "" {
		return fmt.Sprintf("%d bytes", n)
	}
	return strings.TrimSuffix(fmt.Sprintf("%.1f", v), ".0") + " " + unit + fmt.Sprintf(" (%d bytes)", n)
}

// File is a file opened for appending whole lines. Its methods are safe for
// concurrent use.
type File struct {
	path    string
	f       *os.File
	sync    bool
	maxLine int  // Options.MaxLine
	regular bool // only a regular file can be cut back

	mu sync.Mutex
	// good is the size of the file before the append that failed to be cut
	// back, when cut is set; that is tried again before the next append.
	good int64
	cut  bool
	// open says the file does not end with a line break (a line torn by
	// someone else), so the next append starts a line of its own first.
	open    bool
	written int
	lost    int
	err     error         // the first failed append
	failed  chan struct{} // closed at the first failed append
	closed  bool
}

// Open opens path for appending lines, creating it if missing (0644). An
// existing file keeps its lines.
func Open(path string, o Options) (*File, error) {
	flag := os.O_WRONLY | os.O_APPEND | os.O_CREATE
	if o.New {
		flag |= os.O_EXCL
	}
	f, err := os.OpenFile(path, flag, 0o644)
	if err != nil {
		return nil, err
	}
	lf := &File{path: path, f: f, sync: o.Sync, maxLine: o.MaxLine, failed: make(chan struct{})}
	fi, err := f.Stat()
	if err != nil {
		f.Close()
		return nil, fmt.Errorf("%s: %w", path, err)
	}
	if lf.regular = fi.Mode().IsRegular(); lf.regular && fi.Size() > 0 {
		last, err := lastByte(path, fi.Size())
		if err != nil {
			f.Close()
			return nil, err
		}
		lf.open = last != '\n'
	}
	return lf, nil
}

func lastByte(path string, size int64) (byte, error) {
	r, err := os.Open(path)
	if err != nil {
		return 0, err
	}
	defer r.Close()
	b := make([]byte, 1)
	if _, err := r.ReadAt(b, size-1); err != nil {
		return 0, fmt.Errorf("%s: reading its last byte: %w", path, err)
	}
	return b[0], nil
}

// Path returns the file's path.
func (f *File) Path() string { return f.path }

// Append writes p, one or more lines, in one write (a missing final line
// break is added). On error nothing of p stays in the file and its lines
// count as lost; a later append is tried anew. A line longer than
// Options.MaxLine fails the append with a *LineTooLongError.
func (f *File) Append(p []byte) error {
	lines := bytes.Count(p, []byte{'\n'})
	if len(p) == 0 || p[len(p)-1] != '\n' {
		lines++
		p = append(p[:len(p):len(p)], '\n')
	}
	long := f.longestLine(p)
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.closed {
		return f.fail(lines, os.ErrClosed)
	}
	if f.maxLine > 0 && long > f.maxLine {
		return f.fail(lines, &LineTooLongError{Path: f.path, Len: long, Max: f.maxLine})
	}
	if f.cut {
		// A failed append could not be cut back: try again first.
		if err := f.f.Truncate(f.good); err != nil {
			return f.fail(lines, fmt.Errorf("cutting back a failed append: %w", err))
		}
		f.cut = false
	}
	if f.open {
		p = append([]byte{'\n'}, p...)
	}
	if f.regular {
		// The size now, not the one this File last wrote: other
		// programs may append to the file too.
		fi, err := f.f.Stat()
		if err != nil {
			return f.fail(lines, err)
		}
		f.good = fi.Size()
	}
	n, err := f.f.Write(p)
	if err == nil && f.sync {
		err = f.f.Sync()
	}
	if err != nil {
		if f.regular && n > 0 {
			if terr := f.f.Truncate(f.good); terr != nil {
				f.cut = true
				err = errors.Join(err, fmt.Errorf("cutting back the failed append: %w", terr))
			}
		}
		return f.fail(lines, err)
	}
	f.open = false
	f.written += lines
	return nil
}

// longestLine returns the length of the longest line of p, whose last byte
// is a line break, its break not counted; 0 when f has no MaxLine.
func (f *File) longestLine(p []byte) int {
	if f.maxLine <= 0 {
		return 0
	}
	long := 0
	for len(p) > 0 {
		i := bytes.IndexByte(p, '\n')
		long = max(long, i)
		p = p[i+1:]
	}
	return long
}

// fail counts lines as lost to err and returns err naming the file. f.mu
// must be held.
func (f *File) fail(lines int, err error) error {
	pe, le := (*os.PathError)(nil), (*LineTooLongError)(nil)
	if !errors.As(err, &pe) && !errors.As(err, &le) {
		err = fmt.Errorf("appending to %s: %w", f.path, err)
	}
	f.lost += lines
	if f.err == nil {
		f.err = err
		close(f.failed)
	}
	return err
}

// Write appends p, whole lines, as Append does; it makes a File an
// io.Writer for code that logs lines.
func (f *File) Write(p []byte) (int, error) {
	if err := f.Append(p); err != nil {
		return 0, err
	}
	return len(p), nil
}

// Failed returns a channel closed at the first append that fails.
func (f *File) Failed() <-chan struct{} { return f.failed }

// Loss is what a File wrote and lost so far.
type Loss struct {
	Path string
	// Written and Lost count lines appended and lines whose append failed.
	Written, Lost int
	// Err is the first failed append; nil when none failed.
	Err error
}

// Loss returns what f wrote and lost so far.
func (f *File) Loss() Loss {
	f.mu.Lock()
	defer f.mu.Unlock()
	return Loss{Path: f.path, Written: f.written, Lost: f.lost, Err: f.err}
}

// Close syncs (a regular file) and closes the file; later appends fail and
// count as lost. Closing twice returns nil.
func (f *File) Close() error {
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.closed {
		return nil
	}
	f.closed = true
	var err error
	if f.regular {
		err = f.f.Sync()
	}
	if cerr := f.f.Close(); err == nil {
		err = cerr
	}
	if err != nil {
		return fmt.Errorf("closing %s: %w", f.path, err)
	}
	return nil
}

var _ io.Writer = (*File)(nil)
