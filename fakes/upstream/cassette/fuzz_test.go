package cassette

import (
	"io"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/replaycheck/replaycheck/internal/jsonl"
)

// FuzzLoad: any file either loads or is an error naming the file; nothing
// panics, and a file that loads can be written and loaded again to the same
// number of entries.
func FuzzLoad(f *testing.F) {
	f.Add([]byte("{}\n"))
	f.Add([]byte("\n\n"))
	f.Add([]byte(`{"request":{"dialect":"chat"}}` + "\n" + `{"bogus":1}`))
	dir := f.TempDir()
	f.Fuzz(func(t *testing.T, src []byte) {
		path := filepath.Join(dir, "c.jsonl")
		if err := os.WriteFile(path, src, 0o644); err != nil {
			t.Fatal(err)
		}
		entries, _, err := Load(path)
		if err != nil {
			if !strings.Contains(err.Error(), "c.jsonl") {
				t.Fatalf("error does not name the file: %v", err)
			}
			return
		}
		var b strings.Builder
		if err := writeAll(&b, entries); err != nil {
			t.Fatalf("writing loaded entries: %v", err)
		}
		if err := os.WriteFile(path, []byte(b.String()), 0o644); err != nil {
			t.Fatal(err)
		}
		again, _, err := Load(path)
		if err != nil || len(again) != len(entries) {
			t.Fatalf("round trip: %d entries, then %d (%v)", len(entries), len(again), err)
		}
	})
}

// FuzzScrub: a secret never survives scrubbing, whatever surrounds it.
func FuzzScrub(f *testing.F) {
	f.Add("Bearer sk-live-1234567890abcdef", "sk-live-1234567890abcdef")
	f.Add(`{"key":"abc"}`, "abcd")
	f.Fuzz(func(t *testing.T, s, secret string) {
		if len(secret) < 4 || strings.Contains(Redacted, secret) {
			return
		}
		if out := Scrub(s+secret+s, []string{secret}); strings.Contains(out, secret) {
			t.Fatalf("secret %q survived in %q", secret, out)
		}
	})
}

// writeAll writes entries as a cassette to w, one line each, as the recorder
// does.
func writeAll(w io.Writer, entries []Entry) error {
	enc := jsonl.Encoder(w)
	for i := range entries {
		if err := enc.Encode(&entries[i]); err != nil {
			return err
		}
	}
	return nil
}
