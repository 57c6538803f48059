package cassette

import (
	"bytes"
	"errors"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/replaycheck/replaycheck/internal/fulldisk"
	"github.com/replaycheck/replaycheck/internal/jsonl"
)

func req(model string, messages ...string) Request {
	return Request{Dialect: "chat", Kind: "initial", Model: model, Stream: true, Tools: []string{"commit_write"}, ToolsHash: "t1", Messages: messages}
}

// Entries with the same request are served in cassette order, then the
// last again: a retried request gets the next recorded answer.
func TestPlayerOrder(t *testing.T) {
	r := req("m", "user:a")
	p := NewPlayer([]Entry{
		{Request: r, Answer: Answer{Status: 500}},
		{Request: req("m", "user:b"), Answer: Answer{Status: 201}},
		{Request: r, Answer: Answer{Status: 200}},
	}, []Source{{"c", 1}, {"c", 2}, {"c", 3}})
	var got []int
	for range 4 {
		e, _, err := p.Find(r)
		if err != nil {
			t.Fatal(err)
		}
		got = append(got, e.Answer.Status)
	}
	if d := cmp.Diff([]int{500, 200, 200, 200}, got); d != "" {
		t.Errorf("statuses (-want +got):\n%s", d)
	}
}

// A miss names the closest entry and each difference.
func TestMiss(t *testing.T) {
	entries := []Entry{
		{Request: req("m", "system:s", "user:a")},
		{Request: Request{Dialect: "messages", Kind: "initial", Model: "m", Stream: true, Messages: []string{"user:a"}}},
		{Request: req("m", "system:s", "user:a", "assistant:b", "tool:c")},
	}
	sources := []Source{{"c.jsonl", 1}, {"c.jsonl", 2}, {"c.jsonl", 3}}
	other := req("m", "system:s", "user:x")
	other.ToolsHash = "t2"
	tests := []struct {
		name        string
		req         Request
		wantClosest Source
		wantDiffs   []string
	}{
		{"other prompt", req("m", "system:s", "user:x"), sources[0], []string{"messages: item 2 of 2 (user) differs"}},
		{"other model", req("n", "system:s", "user:a"), sources[0], []string{`model: "n", recorded "m"`}},
		{"one more turn", req("m", "system:s", "user:a", "assistant:b", "tool:d"), sources[2], []string{"messages: item 4 of 4 (tool) differs"}},
		{"follow-up missing", req("m", "system:s", "user:a", "assistant:b"), sources[0],
			[]string{"messages: 3, recorded 2; the first to differ is item 3 (assistant, recorded none)"}},
		{"tool definitions", other, sources[0], []string{"tools: the same names, other definitions (hash t2, recorded t1)", "messages: item 2 of 2 (user) differs"}},
		{"other dialect", Request{Dialect: "responses", Kind: "initial", Model: "m", Stream: true, Messages: []string{"user:a"}}, sources[1],
			[]string{"dialect: responses, recorded messages"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, _, err := NewPlayer(entries, sources).Find(tt.req)
			var miss *MissError
			if !errors.As(err, &miss) {
				t.Fatalf("err = %v, want a *MissError", err)
			}
			if d := cmp.Diff(tt.wantClosest, miss.Closest); d != "" {
				t.Errorf("closest (-want +got):\n%s", d)
			}
			if d := cmp.Diff(tt.wantDiffs, miss.Differences); d != "" {
				t.Errorf("differences (-want +got):\n%s", d)
			}
			if !strings.Contains(err.Error(), "closest is "+tt.wantClosest.String()) {
				t.Errorf("message %q does not name the closest entry", err)
			}
		})
	}
	_, _, err := NewPlayer(nil, nil).Find(req("m"))
	if err == nil || !strings.Contains(err.Error(), "the cassette is empty") {
		t.Errorf("empty cassette: err = %v", err)
	}
}

func TestScrub(t *testing.T) {
	h := http.Header{}
	h.Set("Authorization", "Bearer sk-abc123secret")
	h.Set("Cookie", "a=cookieval1; b=cookieval2")
	h.Set("Api-Key", "azure-key-9")
	secrets := Secrets(h, "api-version=2024-01-01&key=querykey1&sig=zz")
	tests := []struct {
		name, in, want string
	}{
		{"bearer token", `{"error":"bad key sk-abc123secret"}`, `{"error":"bad key [REDACTED]"}`},
		{"header value", "Bearer sk-abc123secret", "[REDACTED]"},
		{"cookie values", "cookieval1 cookieval2", "[REDACTED] [REDACTED]"},
		{"azure key", "azure-key-9", "[REDACTED]"},
		{"query key", "querykey1", "[REDACTED]"},
		{"short values stay", "zz", "zz"},
		{"api version stays", "2024-01-01", "2024-01-01"},
		{"masked key", "Incorrect API key provided: sk-proj-****************wxyz.", "Incorrect API key provided: [REDACTED]."},
		{"other key", "sk-ant-api03-AbCdEf0123456789", "[REDACTED]"},
		{"gemini key", "AIzaSyA1234567890abcdefghijklmnopqrstu", "[REDACTED]"},
		{"a word is no key", "use sk-learn-compatible pipelines", "use sk-learn-compatible pipelines"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := Scrub(tt.in, secrets); got != tt.want {
				t.Errorf("Scrub(%q) = %q, want %q", tt.in, got, tt.want)
			}
		})
	}
}

// What a recorder writes loads back byte for byte, whatever the strings
// hold; a bad line is named by file and line.
func TestRoundTrip(t *testing.T) {
	dir := t.TempDir()
	r, err := Create(filepath.Join(dir, "s.jsonl"))
	if err != nil {
		t.Fatal(err)
	}
	want := []Entry{
		{Request: req("m", "user:a"), Answer: Answer{Status: 200, Headers: map[string]string{"Content-Type": "application/json"},
			Body: "{\n  \"id\": \"x\",  \"t\": \"<&>\\u00e9\\t\" \n}\n"}},
		{Request: req("m", "user:b"), Answer: Answer{Status: 200, HeadersMS: 12, Events: []Event{
			{Name: "message_start", Data: `{"type":"message_start"}`, AtMS: 1},
			{Data: "line one  \nline two\t\x01", AtMS: 2},
			{Data: "", AtMS: 3},
		}}},
	}
	for i, e := range want {
		src, err := r.Add(e)
		if err != nil {
			t.Fatal(err)
		}
		if src.Line != i+1 {
			t.Errorf("entry %d written at line %d", i, src.Line)
		}
	}
	if err := r.Close(); err != nil {
		t.Fatal(err)
	}
	if _, err := Create(r.Path()); err == nil {
		t.Errorf("Create over an existing cassette succeeded")
	}
	got, sources, err := Load(dir)
	if err != nil {
		t.Fatal(err)
	}
	if d := cmp.Diff(want, got); d != "" {
		t.Errorf("entries (-want +got):\n%s", d)
	}
	if d := cmp.Diff([]Source{{r.Path(), 1}, {r.Path(), 2}}, sources); d != "" {
		t.Errorf("sources (-want +got):\n%s", d)
	}
	raw, _ := os.ReadFile(r.Path())
	if !bytes.Contains(raw, []byte(`<&>`)) {
		t.Errorf("HTML characters escaped in %s", raw)
	}

	bad := filepath.Join(dir, "t.jsonl")
	for _, tt := range []struct{ line, want string }{
		{`{"request":{"dialect":"chat"},"answer":{"status":200},"extra":1}`, `unknown field "extra"`},
		{`{"request":{"dialect":"chat"},"answer":{"status":0}}`, "answer.status: 0 is not an HTTP status"},
		{`{"request":{"dialect":"chat"},"answer":{"status":500,"events":[]}}`, "a stream must have status 200"},
		{`{"request":{},"answer":{"status":200}}`, "request.dialect: missing"},
	} {
		if err := os.WriteFile(bad, []byte("\n"+tt.line+"\n"), 0o644); err != nil {
			t.Fatal(err)
		}
		_, _, err := Load(bad)
		if err == nil || !strings.Contains(err.Error(), bad+":2: ") || !strings.Contains(err.Error(), tt.want) {
			t.Errorf("Load(%s) = %v, want %s:2 and %q", tt.line, err, bad, tt.want)
		}
	}
}

// TestRecorderOnAFullDisk: an entry the disk cannot take whole is lost
// alone — the cassette still loads, with no torn line — and Close names the
// loss; once space comes back the next entry is recorded on its own line.
func TestRecorderOnAFullDisk(t *testing.T) {
	if !fulldisk.Child(t, 1024) {
		return
	}
	dir := t.TempDir()
	r, err := Create(filepath.Join(dir, "s.jsonl"))
	if err != nil {
		t.Fatal(err)
	}
	small := Entry{Request: req("m", "user:a"), Answer: Answer{Status: 200, Body: "ok"}}
	big := Entry{Request: req("m", "user:b"), Answer: Answer{Status: 200, Body: strings.Repeat("x", 2000)}}
	if _, err := r.Add(small); err != nil {
		t.Fatal(err)
	}
	if _, err := r.Add(big); err == nil || !strings.Contains(err.Error(), "file too large") {
		t.Errorf("adding past the limit: %v, want the write error", err)
	}
	if got, _, err := Load(dir); err != nil || len(got) != 1 {
		t.Errorf("after the lost entry the cassette loads %d entries (%v), want the first alone", len(got), err)
	}
	fulldisk.Free(t)
	later := Entry{Request: req("m", "user:c"), Answer: Answer{Status: 200, Body: "later"}}
	src, err := r.Add(later)
	if err != nil || src.Line != 2 {
		t.Errorf("adding once space came back: line %d, %v; want line 2", src.Line, err)
	}
	if l := r.File().Loss(); l.Written != 2 || l.Lost != 1 {
		t.Errorf("loss %+v, want 2 entries written, 1 lost", l)
	}
	if err := r.Close(); err != nil {
		t.Fatal(err)
	}
	got, _, err := Load(dir)
	if err != nil {
		t.Fatal(err)
	}
	if d := cmp.Diff([]Entry{small, later}, got); d != "" {
		t.Errorf("entries (-want +got):\n%s", d)
	}
}

// TestLoadLineTooLong: a line over jsonl.MaxLine is an error naming the
// file, the line and the limit.
func TestLoadLineTooLong(t *testing.T) {
	path := filepath.Join(t.TempDir(), "c.jsonl")
	line := `{"request":{"dialect":"chat","kind":"initial","stream":false,"messages":[]},"answer":{"status":200,"headers_ms":0,"body":"<b>"}}` + "\n"
	if err := os.WriteFile(path, []byte(line), 0o644); err != nil {
		t.Fatal(err)
	}
	// A second line of MaxLine+1 zero bytes, sparse on disk.
	if err := os.Truncate(path, int64(len(line)+jsonl.MaxLine+1)); err != nil {
		t.Fatal(err)
	}
	_, _, err := Load(path)
	if want := "cassette " + path + ":2: the line is longer than 64 MiB (67108864 bytes), the most a line may have"; err == nil || err.Error() != want {
		t.Errorf("Load: %v, want %q", err, want)
	}
}
