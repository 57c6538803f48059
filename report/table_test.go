package report

import (
	"bytes"
	"strings"
	"testing"
	"unicode/utf8"

	"github.com/replaycheck/replaycheck/internal/harness/rules"
)

// bigSuite is n passing results and one failing one.
func bigSuite(n int) Suite {
	s := Suite{Wall: ms(40)}
	for range n {
		s.Results = append(s.Results, rules.Evaluate(seedRun("builtin:guarded", 1)))
	}
	s.Results = append(s.Results, rules.Evaluate(seedRun("builtin:naive", 3)))
	return s
}

// TestTableOutputGrows checks how many lines each verbosity writes for a
// suite of 1,000 passing results and one failure: quiet and the default
// grow with the failures (quiet without the table), -v by one line per
// pass, -vv by every timeline.
func TestTableOutputGrows(t *testing.T) {
	tests := []struct {
		name     string
		opts     TableOptions
		min, max int
	}{
		{name: "quiet", opts: TableOptions{Quiet: true}, min: 2, max: 10},
		{name: "default", opts: TableOptions{}, min: 1000, max: 1040},
		{name: "verbose", opts: TableOptions{Verbose: true}, min: 2000, max: 2050},
		{name: "timelines", opts: TableOptions{Timelines: true}, min: 10000, max: 1 << 20},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var b bytes.Buffer
			if err := WriteTable(&b, bigSuite(1000), tt.opts); err != nil {
				t.Fatal(err)
			}
			out := b.String()
			lines := strings.Count(out, "\n")
			if lines < tt.min || lines > tt.max {
				t.Errorf("%d lines, want %d to %d:\n%.2000s", lines, tt.min, tt.max, out)
			}
			if !strings.Contains(out, "1001 scenarios on builtin:guarded, builtin:naive: 1000 pass, 1 fail") {
				t.Errorf("no total line:\n%.2000s", out)
			}
			if !strings.Contains(out, "FAIL chat follow-up 500 after tool ran on builtin:naive") {
				t.Errorf("the failure is not shown:\n%.2000s", out)
			}
		})
	}
}

// TestTableFitsWidth checks that the table is cut to the terminal's width
// when it can be, and left whole when the width is unknown.
func TestTableFitsWidth(t *testing.T) {
	long := fixture()
	long.Results[1].History.Scenario = strings.Repeat("a very long scenario name ", 6)
	tests := []struct {
		name     string
		width    int
		maxWidth int
		wantCut  bool
	}{
		{name: "unknown width", width: 0, maxWidth: 400},
		{name: "120 columns", width: 120, maxWidth: 120, wantCut: true},
		{name: "too narrow to fit", width: 20, maxWidth: 130, wantCut: true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var b bytes.Buffer
			if err := WriteTable(&b, long, TableOptions{Width: tt.width}); err != nil {
				t.Fatal(err)
			}
			widest := 0
			for _, l := range strings.Split(b.String(), "\n") {
				if strings.HasPrefix(l, "│") || strings.HasPrefix(l, "┌") {
					widest = max(widest, utf8.RuneCountInString(l))
				}
			}
			if widest > tt.maxWidth {
				t.Errorf("table %d columns wide, want at most %d:\n%s", widest, tt.maxWidth, b.String())
			}
			if cut := strings.Contains(b.String(), "…"); cut != tt.wantCut {
				t.Errorf("cells cut: %v, want %v:\n%s", cut, tt.wantCut, b.String())
			}
		})
	}
}

// TestNamesSanitized checks that a scenario name with a newline, escape
// sequences and markup reaches neither the terminal nor the Markdown raw.
func TestNamesSanitized(t *testing.T) {
	evil := "evil\nname\x1b[2J\x1b]0;pwned\x07\r\u202e *bold* <img src=x> | [link](x) `code`"
	s := fixture()
	s.Results[1].History.Scenario = evil
	s.Results[1].History.Target = "tgt\x1b[31m"
	tests := []struct {
		name    string
		write   func(*bytes.Buffer, Suite) error
		want    []string
		notWant []string
	}{
		{
			name:    "table",
			write:   func(b *bytes.Buffer, s Suite) error { return WriteTable(b, s, TableOptions{Verbose: true}) },
			want:    []string{`evil\nname\x1b[2J\x1b]0;pwned\a\r\u202e *bold*`, `tgt\x1b[31m`},
			notWant: []string{"\x1b", "\r", "\a", "\u202e", "evil\nname"},
		},
		{
			name:    "quiet table",
			write:   func(b *bytes.Buffer, s Suite) error { return WriteTable(b, s, TableOptions{Quiet: true}) },
			want:    []string{`FAIL evil\nname\x1b[2J`},
			notWant: []string{"\x1b", "\r", "\a", "\u202e"},
		},
		{
			name:  "markdown",
			write: func(b *bytes.Buffer, s Suite) error { return WriteMarkdown(b, s) },
			want: []string{
				"### evil\\\\nname\\\\x1b\\[2J", `\*bold\* \<img src=x\> \| \[link\](x) \` + "`code\\`",
				"| evil\\\\nname",
			},
			notWant: []string{"\x1b", "\r", "\a", "\u202e", " <img", "*bold*", "evil\nname"},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var b bytes.Buffer
			if err := tt.write(&b, s); err != nil {
				t.Fatal(err)
			}
			out := b.String()
			for _, w := range tt.want {
				if !strings.Contains(out, w) {
					t.Errorf("output lacks %q:\n%s", w, out)
				}
			}
			for _, w := range tt.notWant {
				if strings.Contains(out, w) {
					t.Errorf("output holds %q raw:\n%q", w, out)
				}
			}
		})
	}
}

func TestTerminalText(t *testing.T) {
	tests := []struct{ name, in, want string }{
		{name: "plain", in: "seed chat fault_on · ünïcode", want: "seed chat fault_on · ünïcode"},
		{name: "newline and tab", in: "a\nb\tc", want: `a\nb\tc`},
		{name: "escape sequence", in: "\x1b[2Jx", want: `\x1b[2Jx`},
		{name: "C1 control", in: "a\u009bb", want: `a\u009bb`},
		{name: "bidi override", in: "a\u202eb", want: `a\u202eb`},
		{name: "invalid UTF-8", in: "a\xffb", want: `a\xffb`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := TerminalText(tt.in); got != tt.want {
				t.Errorf("TerminalText(%q) = %q, want %q", tt.in, got, tt.want)
			}
		})
	}
}

func TestMDName(t *testing.T) {
	tests := []struct{ name, in, want string }{
		{name: "underscore inside a word", in: "seed chat fault_on", want: "seed chat fault_on"},
		{name: "emphasis", in: "_a_ *b*", want: `\_a\_ \*b\*`},
		{name: "html and links", in: "<b>[x](y)", want: `\<b\>\[x\](y)`},
		{name: "pipe and newline", in: "a|b\nc", want: `a\|b\\nc`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := mdName(tt.in); got != tt.want {
				t.Errorf("mdName(%q) = %q, want %q", tt.in, got, tt.want)
			}
		})
	}
}
