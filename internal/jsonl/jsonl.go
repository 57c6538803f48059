// Package jsonl appends JSON values to a file, one per line (JSON Lines),
// each line whole or not at all: the writer of the model side's and the MCP
// side's cassettes.
package jsonl

import (
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"sync"

	"github.com/replaycheck/replaycheck/internal/linefile"
)

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
func Create[T any](path string) (*Writer[T], error) {
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		return nil, err
	}
	f, err := linefile.Open(path, linefile.Options{New: true})
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
// write loses v only; a later Add is tried anew.
func (w *Writer[T]) Add(v T) (int, error) {
	var buf bytes.Buffer
	if err := Encoder(&buf).Encode(&v); err != nil {
		return 0, fmt.Errorf("%s: encoding a line: %w", w.Path(), err)
	}
	w.mu.Lock()
	defer w.mu.Unlock()
	if err := w.f.Append(buf.Bytes()); err != nil {
		return 0, err
	}
	w.line++
	return w.line, nil
}

// Close syncs and closes the file. The lines lost to failed writes are not
// its error: each Add returned its own, and File().Loss() counts them.
func (w *Writer[T]) Close() error { return w.f.Close() }

// Encoder returns an encoder writing one value per line, leaving <, > and &
// as they are (the bytes read back the same either way; these read better).
func Encoder(w io.Writer) *json.Encoder {
	enc := json.NewEncoder(w)
	enc.SetEscapeHTML(false)
	return enc
}
