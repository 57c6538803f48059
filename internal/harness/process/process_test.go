package process

import (
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
)

// TestOutput writes to an output in pieces: a secret split across writes is
// masked, and so is a key-shaped value; past its size the front is cut at a
// line (a secret cut with it is left out, not shown in part); Since returns
// the lines after a mark.
func TestOutput(t *testing.T) {
	const secret = "hunter2-secret"
	tests := []struct {
		name   string
		max    int
		writes []string
		want   string
		lines  []string
	}{
		{
			name:   "a secret across writes",
			max:    1 << 10,
			writes: []string{"key hun", "ter2-secret ok\n", "sk-proj-Ab12Cd34Ef56\n"},
			want:   "key *** ok\n***\n",
			lines:  []string{"key *** ok", "***"},
		},
		{
			name:   "the front cut at a line",
			max:    20,
			writes: []string{"x " + secret + "\n", "line two\n", "line 3\n"},
			want:   "…line two\nline 3\n",
			lines:  []string{"line two", "line 3"},
		},
		{
			name:   "an unfinished last line",
			max:    1 << 10,
			writes: []string{"one\r\n", "tw", "o"},
			want:   "one\r\ntwo",
			lines:  []string{"one", "two"},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			o := NewOutput(tt.max, []string{secret})
			for _, w := range tt.writes {
				o.Write([]byte(w))
			}
			if got := o.String(); got != tt.want {
				t.Errorf("String() = %q, want %q", got, tt.want)
			}
			if d := cmp.Diff(tt.lines, o.Lines()); d != "" {
				t.Errorf("Lines() (-want +got):\n%s", d)
			}
			if strings.Contains(o.String(), "ter2-secret") {
				t.Errorf("a part of the secret is shown: %q", o.String())
			}
		})
	}
}

// TestOutputSince marks an output and writes more: Since returns what came
// after the mark, with an unfinished line, at most outputLines.
func TestOutputSince(t *testing.T) {
	o := NewOutput(OutputBytes, nil)
	o.Write([]byte("before\npart"))
	seq := o.Seq()
	o.Write([]byte("ial\nafter\nunfinished"))
	if d := cmp.Diff([]string{"partial", "after", "unfinished"}, o.Since(seq)); d != "" {
		t.Errorf("Since (-want +got):\n%s", d)
	}
	seq = o.Seq()
	o.Write([]byte(strings.Repeat("x\n", 2*outputLines)))
	if got := len(o.Since(seq)); got != outputLines {
		t.Errorf("Since after %d lines: %d lines, want %d", 2*outputLines, got, outputLines)
	}
}
