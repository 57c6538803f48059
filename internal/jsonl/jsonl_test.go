package jsonl

import (
	"encoding/json"
	"errors"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"
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
