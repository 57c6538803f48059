package jsonl

import (
	"bytes"
	"encoding/json"
	"errors"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"

	"github.com/replaycheck/replaycheck/internal/linefile"
)

// TestWriter: values added at once from many goroutines are whole lines,
// numbered 1..n once each, and read back as written; a file that exists
// is not created again.
func TestWriter(t *testing.T) {
	path := filepath.Join(t.TempDir(), "sub", "f.jsonl")
	w, err := Create[map[string]string](path)
	if err != nil {
		t.Fatal(err)
	}
	const n = 50
	lines := make([]int, n)
	var wg sync.WaitGroup
	for i := range n {
		wg.Go(func() {
			line, err := w.Add(map[string]string{"v": strings.Repeat("x<&>", i)})
			if err != nil {
				t.Error(err)
			}
			lines[i] = line
		})
	}
	wg.Wait()
	if err := w.Close(); err != nil {
		t.Fatal(err)
	}
	slices.Sort(lines)
	for i, l := range lines {
		if l != i+1 {
			t.Fatalf("line numbers %v, want 1..%d once each", lines, n)
		}
	}
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	got := strings.Split(strings.TrimSuffix(string(b), "\n"), "\n")
	if len(got) != n {
		t.Fatalf("%d lines, want %d", len(got), n)
	}
	for _, l := range got {
		var v map[string]string
		if err := json.Unmarshal([]byte(l), &v); err != nil || strings.Contains(l, `\u003c`) {
			t.Fatalf("line %q: %v (want JSON with < > & as they are)", l, err)
		}
	}
	if _, err := Create[int](path); !errors.Is(err, os.ErrExist) {
		t.Errorf("Create of an existing file: %v, want os.ErrExist", err)
	}
}

// marshaler encodes itself with json.Marshal, as the MCP SDK's content
// types do: its <, > and & come out escaped whatever the Encoder says.
type marshaler struct{ Text string }

func (m marshaler) MarshalJSON() ([]byte, error) {
	return json.Marshal(map[string]string{"text": m.Text})
}

// TestAddKeepsHTML: <, > and & are written as they are, also where a
// nested json.Marshaler escaped them, and every string reads back as it
// was (a backslash before "u003c" in the text included).
func TestAddKeepsHTML(t *testing.T) {
	texts := []string{"<html>&amp;</html>", `\u003c is "<"`, `\\u003e`, "\\", "a\u2028b", "\x01<\x1f", "é<"}
	path := filepath.Join(t.TempDir(), "f.jsonl")
	w, err := Create[[]marshaler](path)
	if err != nil {
		t.Fatal(err)
	}
	var v []marshaler
	for _, s := range texts {
		v = append(v, marshaler{s})
	}
	if _, err := w.Add(v); err != nil {
		t.Fatal(err)
	}
	if err := w.Close(); err != nil {
		t.Fatal(err)
	}
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	if strings.Contains(string(b), `\u003c`) && !strings.Contains(string(b), `\\u003c`) || strings.Contains(string(b), `\u0026`) {
		t.Errorf("line %s: want < > & as they are", b)
	}
	if want := `{"text":"<html>&amp;</html>"}`; !strings.Contains(string(b), want) {
		t.Errorf("line %s: want %s in it", b, want)
	}
	var got []map[string]string
	if err := json.Unmarshal(b, &got); err != nil {
		t.Fatalf("line %s: %v", b, err)
	}
	for i, s := range texts {
		if got[i]["text"] != s {
			t.Errorf("text %d read back %q, want %q", i, got[i]["text"], s)
		}
	}
}

// TestLineLimit: a line of the limit's length is written and read; a
// value whose line would be longer is not written, fails naming the file,
// its size and the limit, and counts as lost, and the next value takes the
// next line; reading a longer line fails naming the file, the line and the
// limit, also at the end of the file.
func TestLineLimit(t *testing.T) {
	const max = 100
	path := filepath.Join(t.TempDir(), "f.jsonl")
	w, err := create[string](path, max)
	if err != nil {
		t.Fatal(err)
	}
	longest := strings.Repeat("x", max-2) // quoted: max bytes
	if n, err := w.Add(longest); err != nil || n != 1 {
		t.Fatalf("Add of a line of %d bytes: line %d, %v; want line 1", max, n, err)
	}
	_, err = w.Add(longest + "<")
	var le *linefile.LineTooLongError
	if !errors.As(err, &le) || le.Len != max+1 || le.Max != max {
		t.Fatalf("Add of a line of %d bytes: %v; want a *linefile.LineTooLongError", max+1, err)
	}
	if want := path + ": a line of 101 bytes was not written: it is longer than 100 bytes, the most a line may have"; err.Error() != want {
		t.Errorf("error %q, want %q", err, want)
	}
	if n, err := w.Add("y"); err != nil || n != 2 {
		t.Fatalf("Add after the refused line: line %d, %v; want line 2", n, err)
	}
	if l := w.File().Loss(); l.Written != 2 || l.Lost != 1 {
		t.Errorf("Loss %+v, want 2 written and 1 lost", l)
	}
	if err := w.Close(); err != nil {
		t.Fatal(err)
	}
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	lens, err := scan(t, path, b, max)
	if err != nil || !slices.Equal(lens, []int{max, 3}) {
		t.Fatalf("read lines of %v bytes, %v; want [%d 3], nil", lens, err, max)
	}

	long := strings.Repeat("x", max+1)
	for _, content := range []string{"{}\n" + long + "\n{}\n", "{}\n" + long, "{}\r\n" + long + "\r\n"} {
		lens, err := scan(t, "over.jsonl", []byte(content), max)
		if !errors.As(err, &le) || le.Line != 2 || len(lens) != 1 {
			t.Fatalf("reading %q: lines of %v bytes, %v; want 1 line, then a *linefile.LineTooLongError at line 2", content, lens, err)
		}
		if want := "over.jsonl:2: the line is longer than 100 bytes, the most a line may have"; err.Error() != want {
			t.Errorf("error %q, want %q", err, want)
		}
	}
}

// scan returns the lengths of the lines of b, the file name, read with
// lines of at most max bytes, and the scanner's error; it checks the line
// numbers.
func scan(t *testing.T, name string, b []byte, max int) ([]int, error) {
	t.Helper()
	sc := newScanner(bytes.NewReader(b), name, max)
	var lens []int
	for sc.Scan() {
		n, line := sc.Line()
		if n != len(lens)+1 {
			t.Errorf("line number %d, want %d", n, len(lens)+1)
		}
		lens = append(lens, len(line))
	}
	return lens, sc.Err()
}
