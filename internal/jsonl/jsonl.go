// Package jsonl writes and reads JSON values one per line (JSON Lines): the
// writer and the line reader of the model side's and the MCP side's
// cassettes. A line is at most MaxLine bytes both ways, so what a Writer
// writes a Scanner reads.
package jsonl

import (
	"bufio"
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"sync"

	"github.com/replaycheck/replaycheck/internal/linefile"
)

// MaxLine is the longest line, its line break not counted, that a Writer
// writes and a Scanner reads: 64 MiB.
const MaxLine = 64 << 20

// Writer appends values of type T to one file, one line each, whole or not
// at all (a failed write is cut back off the file, so the file stays
// readable and a later value starts a line of its own). It is safe for
// concurrent use; File().Loss() counts the lines lost.
type Writer[T any] struct {
	mu   sync.Mutex
	f    *linefile.File
	line int
}

// Create creates a new file (it must not exist) and its directory.
func Create[T any](path string) (*Writer[T], error) { return create[T](path, MaxLine) }

// create is Create with lines of at most maxLine bytes.
func create[T any](path string, maxLine int) (*Writer[T], error) {
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		return nil, err
	}
	f, err := linefile.Open(path, linefile.Options{New: true, MaxLine: maxLine})
	if err != nil {
		return nil, err
	}
	return &Writer[T]{f: f}, nil
}

// Path returns the file the writer appends to.
func (w *Writer[T]) Path() string { return w.f.Path() }

// File returns the file, whose Loss counts the lines written and lost.
func (w *Writer[T]) File() *linefile.File { return w.f }

// Add appends v as one line and returns its line number (from 1). A failed
// write loses v only; a later Add is tried anew. A value whose line would
// be longer than MaxLine is not written: Add fails with a
// *linefile.LineTooLongError and File().Loss() counts it.
func (w *Writer[T]) Add(v T) (int, error) {
	var buf bytes.Buffer
	if err := Encoder(&buf).Encode(&v); err != nil {
		return 0, fmt.Errorf("%s: encoding a line: %w", w.Path(), err)
	}
	line := keepHTML(buf.Bytes())
	w.mu.Lock()
	defer w.mu.Unlock()
	if err := w.f.Append(line); err != nil {
		return 0, err
	}
	w.line++
	return w.line, nil
}

// Close syncs and closes the file. The lines lost to failed writes are not
// its error: each Add returned its own, and File().Loss() counts them.
func (w *Writer[T]) Close() error { return w.f.Close() }

// Encoder returns an encoder writing one value per line, leaving <, > and &
// as they are (the bytes read back the same either way; these read better
// and are a sixth as long). A value whose json.Marshaler calls json.Marshal
// (the MCP SDK's content types) still comes out escaped; Writer.Add
// undoes that too.
func Encoder(w io.Writer) *json.Encoder {
	enc := json.NewEncoder(w)
	enc.SetEscapeHTML(false)
	return enc
}

// keepHTML rewrites, in place, the escapes \u003c, \u003e and \u0026 of b,
// JSON as encoding/json writes it, as the characters <, > and & they stand
// for; every other escape stays. A backslash in JSON only ever starts an
// escape inside a string, so the escapes are found by skipping each one
// whole, with no need to track strings.
func keepHTML(b []byte) []byte {
	out := b[:0]
	for i := 0; i < len(b); {
		j := bytes.IndexByte(b[i:], '\\')
		if j < 0 {
			return append(out, b[i:]...)
		}
		out = append(out, b[i:i+j]...)
		i += j
		if c, ok := htmlEscape(b[i:]); ok {
			out = append(out, c)
			i += len(`\u003c`)
			continue
		}
		out = append(out, b[i:min(i+2, len(b))]...)
		i += 2
	}
	return out
}

// htmlEscape returns the character that b's leading escape \u003c, \u003e or
// \u0026 (as encoding/json writes them, lower case) stands for.
func htmlEscape(b []byte) (byte, bool) {
	if len(b) < 6 || string(b[:4]) != `\u00` {
		return 0, false
	}
	switch string(b[4:6]) {
	case "3c":
		return '<', true
	case "3e":
		return '>', true
	case "26":
		return '&', true
	}
	return 0, false
}

// Scanner reads the lines of a JSON Lines file, each at most MaxLine bytes
// (without its line break),
// and counts them; its errors name the file and the line. It is not safe
// for concurrent use.
type Scanner struct {
	sc      *bufio.Scanner
	path    string
	maxLine int
	line    int
	err     error
}

// NewScanner returns a Scanner of r, the file at path.
func NewScanner(r io.Reader, path string) *Scanner { return newScanner(r, path, MaxLine) }

// newScanner is NewScanner with lines of at most maxLine bytes.
func newScanner(r io.Reader, path string, maxLine int) *Scanner {
	sc := bufio.NewScanner(r)
	// Room for a line of maxLine bytes and its "\r\n"; Scan checks the line.
	sc.Buffer(make([]byte, 0, min(64<<10, maxLine+2)), maxLine+2)
	return &Scanner{sc: sc, path: path, maxLine: maxLine}
}

// Scan advances to the next line, false at the end of the file or at an
// error (see Err).
func (s *Scanner) Scan() bool {
	if s.err != nil || !s.sc.Scan() {
		return false
	}
	s.line++
	if len(s.sc.Bytes()) > s.maxLine {
		s.err = &linefile.LineTooLongError{Path: s.path, Line: s.line, Max: s.maxLine}
		return false
	}
	return true
}

// Line returns the current line's number (from 1) and its bytes without
// the line break, valid until the next Scan.
func (s *Scanner) Line() (int, []byte) { return s.line, s.sc.Bytes() }

// Err returns the error that ended Scan, nil at the end of the file: a
// *linefile.LineTooLongError naming the file, the line and MaxLine, or a
// read error naming the file and the line.
func (s *Scanner) Err() error {
	if s.err != nil {
		return s.err
	}
	err := s.sc.Err()
	switch {
	case err == nil:
		return nil
	case errors.Is(err, bufio.ErrTooLong):
		return &linefile.LineTooLongError{Path: s.path, Line: s.line + 1, Max: s.maxLine}
	}
	return fmt.Errorf("%s:%d: %w", s.path, s.line+1, err)
}
