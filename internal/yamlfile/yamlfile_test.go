package yamlfile

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
)

// laughs is a billion-laughs document: levels anchors, each a list of nine
// aliases of the one before, under key.
func laughs(key string, levels int) string {
	var b strings.Builder
	fmt.Fprintf(&b, "%s:\n  l0: &l0 [lol, lol, lol, lol, lol, lol, lol, lol, lol]\n", key)
	for i := 1; i < levels; i++ {
		fmt.Fprintf(&b, "  l%d: &l%d [%s]\n", i, i, strings.TrimSuffix(strings.Repeat(fmt.Sprintf("*l%d, ", i-1), 9), ", "))
	}
	return b.String()
}

func TestDecodeAliases(t *testing.T) {
	big := strings.Repeat("x", 1<<20)
	tests := []struct {
		name    string
		src     string
		want    any
		wantErr string
	}{
		{
			name: "anchor in one list item, alias in a later one",
			src:  "- {name: one, request: &req {endpoint: chat}}\n- {name: two, request: *req}\n",
			want: []any{
				map[string]any{"name": "one", "request": map[string]any{"endpoint": "chat"}},
				map[string]any{"name": "two", "request": map[string]any{"endpoint": "chat"}},
			},
		},
		{
			name: "merge of an anchor of an earlier item",
			src:  "- &base {a: 1, b: 2}\n- {<<: *base, b: 3}\n",
			want: []any{map[string]any{"a": uint64(1), "b": uint64(2)}, map[string]any{"a": uint64(1), "b": uint64(3)}},
		},
		{
			name: "an anchor defined again: later aliases take the new value",
			src:  "a: &x 1\nb: *x\nc: &x 2\nd: *x\n",
			want: map[string]any{"a": uint64(1), "b": uint64(1), "c": uint64(2), "d": uint64(2)},
		},
		{
			name: "a few laughs are fine",
			src:  laughs("body", 3),
			want: map[string]any{"body": map[string]any{
				"l0": laughList(0), "l1": laughList(1), "l2": laughList(2),
			}},
		},
		{
			name:    "alias before its anchor",
			src:     "a: *x\nb: &x 1\n",
			wantErr: "f.yaml:1:4: could not find alias \"x\": an anchor &x must come before it in the same document",
		},
		{
			name:    "alias inside its own anchor",
			src:     "a: &x [1, *x]\n",
			wantErr: "f.yaml:1:11: alias *x is inside its own anchor &x: it would never end",
		},
		{
			name:    "billion laughs",
			src:     laughs("body", 9),
			wantErr: "f.yaml:8:12: document expands to more than 1048576 nodes through its aliases",
		},
		{
			name:    "a long string aliased many times",
			src:     "a: &a " + big + "\nb: [" + strings.TrimSuffix(strings.Repeat("*a, ", 16), ", ") + "]\n",
			wantErr: "f.yaml:2:61: document expands to more than 16777216 bytes through its aliases",
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var got any
			err := Decode("f.yaml", []byte(tt.src), &got)
			if tt.wantErr != "" {
				var e *Error
				if !errors.As(err, &e) || !strings.HasPrefix(err.Error(), tt.wantErr) {
					t.Fatalf("error %.300q, want an *Error starting %q", fmt.Sprint(err), tt.wantErr)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if diff := cmp.Diff(tt.want, got); diff != "" {
				t.Errorf("decoded (-want +got):\n%s", diff)
			}
		})
	}
}

// laughList is the value of anchor l<level> of laughs.
func laughList(level int) []any {
	out := make([]any, 9)
	for i := range out {
		if level == 0 {
			out[i] = "lol"
		} else {
			out[i] = laughList(level - 1)
		}
	}
	return out
}

// TestAnchorsStayInTheirDocument: an alias does not find an anchor of an
// earlier document.
func TestAnchorsStayInTheirDocument(t *testing.T) {
	_, err := Parse("f.yaml", []byte("a: &x 1\n---\nb: *x\n"))
	if err == nil || !strings.HasPrefix(err.Error(), "f.yaml:3:4: could not find alias \"x\"") {
		t.Fatalf("error %v, want could not find alias at 3:4", err)
	}
}

// level is a value with a custom decoder that refuses "high".
type level string

func (l *level) UnmarshalYAML(b []byte) error {
	if strings.TrimSpace(string(b)) == "high" {
		return errors.New("level: want low or mid")
	}
	*l = level(b)
	return nil
}

type settings struct {
	Name   string           `yaml:"name"`
	Count  int              `yaml:"count"`
	Levels map[string]level `yaml:"levels"`
	Inner  struct {
		Depth int `yaml:"depth"`
	} `yaml:"inner"`
}

func TestDecodeErrors(t *testing.T) {
	tests := []struct {
		name    string
		src     string
		want    settings
		wantErr string
	}{
		{name: "empty", src: "# nothing\n"},
		{name: "fine", src: "name: a\ncount: 2\n", want: settings{Name: "a", Count: 2}},
		{
			name:    "syntax",
			src:     "name: [a\n",
			wantErr: "f.yaml:1:7:",
		},
		{
			name:    "unknown field names the known ones",
			src:     "name: a\ninner: {depth: 1, width: 2}\n",
			wantErr: "f.yaml:2:19: unknown field \"width\"; want one of depth\n     1 | name: a\n>    2 | inner: {depth: 1, width: 2}\n                           ^",
		},
		{
			name:    "wrong type in YAML words",
			src:     "count: many\n",
			wantErr: "f.yaml:1:8: count: want a whole number, got \"many\"",
		},
		{
			name:    "a custom decoder's error at its value",
			src:     "levels:\n  a: low\n  b: high\n",
			wantErr: "f.yaml:3:6: level: want low or mid",
		},
		{
			name:    "two documents",
			src:     "name: a\n---\nname: b\n",
			wantErr: "f.yaml:3:5: want one YAML document, got 2",
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var got settings
			err := Decode("f.yaml", []byte(tt.src), &got)
			if tt.wantErr != "" {
				var e *Error
				if !errors.As(err, &e) || !strings.HasPrefix(err.Error(), tt.wantErr) {
					t.Fatalf("error:\n%v\nwant an *Error starting:\n%s", err, tt.wantErr)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if diff := cmp.Diff(tt.want, got); diff != "" {
				t.Errorf("decoded (-want +got):\n%s", diff)
			}
		})
	}
}

func TestAt(t *testing.T) {
	src := []byte("a:\n  b: [x, &y {c: 1}]\n  \"k:*\": v\n")
	body, err := ParseDocument("f.yaml", src)
	if err != nil {
		t.Fatal(err)
	}
	tests := []struct {
		name      string
		path      []any
		wantLine  int
		wantCol   int
		wantWhole bool
	}{
		{name: "root", path: nil, wantLine: 1, wantCol: 2, wantWhole: true},
		{name: "index", path: []any{"a", "b", 0}, wantLine: 2, wantCol: 7, wantWhole: true},
		{name: "through an anchor", path: []any{"a", "b", 1, "c"}, wantLine: 2, wantCol: 17, wantWhole: true},
		{name: "a key needing quotes in a path string", path: []any{"a", "k:*"}, wantLine: 3, wantCol: 10, wantWhole: true},
		{name: "missing: the deepest node on the way", path: []any{"a", "b", 5}, wantLine: 2, wantCol: 6},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			n, whole := Lookup(body, tt.path...)
			line, col := Pos(n)
			if line != tt.wantLine || col != tt.wantCol || whole != tt.wantWhole {
				t.Errorf("Lookup(%v) at %d:%d (whole %v), want %d:%d (%v)", tt.path, line, col, whole, tt.wantLine, tt.wantCol, tt.wantWhole)
			}
		})
	}
}

func TestReadFile(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, "f.yaml")
	if err := os.WriteFile(path, []byte("12345"), 0o644); err != nil {
		t.Fatal(err)
	}
	tests := []struct {
		name    string
		path    string
		limit   int
		want    string
		wantErr string
	}{
		{name: "within the limit", path: path, limit: 5, want: "12345"},
		{name: "over the limit", path: path, limit: 4, wantErr: "larger than 4 bytes"},
		{name: "missing", path: filepath.Join(dir, "none.yaml"), limit: 5, wantErr: "no such file or directory"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := ReadFile(tt.path, tt.limit)
			if tt.wantErr != "" {
				if err == nil || ReadError(tt.path, err).Msg != tt.wantErr {
					t.Fatalf("error %v, want %q", err, tt.wantErr)
				}
				return
			}
			if err != nil || string(got) != tt.want {
				t.Fatalf("ReadFile = %q, %v; want %q", got, err, tt.want)
			}
		})
	}
}

func TestExcerpt(t *testing.T) {
	long := strings.Repeat("a", 100) + "X" + strings.Repeat("b", 300)
	tests := []struct {
		name      string
		src       string
		line, col int
		want      string
	}{
		{name: "first line", src: "a: 1\n", line: 1, col: 4, want: ">    1 | a: 1\n            ^"},
		{name: "with the line before", src: "a: 1\nb: x\n", line: 2, col: 4, want: "     1 | a: 1\n>    2 | b: x\n            ^"},
		{name: "no column", src: "a: 1\n", line: 1, want: ">    1 | a: 1"},
		{name: "no line", src: "a: 1\n", want: ""},
		{
			name: "a long line is cut around the column", src: long + "\n", line: 1, col: 101,
			want: ">    1 | …" + strings.Repeat("a", 80) + "X" + strings.Repeat("b", 79) + "…\n" + strings.Repeat(" ", 9) + strings.Repeat(" ", 81) + "^",
		},
		{
			name: "a long line before is cut to its start", src: long + "\nc: 1\n", line: 2, col: 1,
			want: "     1 | " + long[:160] + "…\n>    2 | c: 1\n         ^",
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if diff := cmp.Diff(tt.want, excerpt([]byte(tt.src), tt.line, tt.col)); diff != "" {
				t.Errorf("excerpt (-want +got):\n%s", diff)
			}
		})
	}
}

// TestDecodeListForm: a value where a list is wanted is an *Error at the
// value that shows the list form of what was written.
func TestDecodeListForm(t *testing.T) {
	type lists struct {
		Command []string `yaml:"command"`
		Faults  []struct {
			On string `yaml:"on"`
		} `yaml:"faults"`
		Counts []int `yaml:"counts"`
		Inner  struct {
			Args []string `yaml:"args"`
		} `yaml:"inner"`
	}
	tests := []struct {
		name, src, want string
	}{
		{"a string is split into words", "command: python3 agent.py\n",
			"f.yaml:1:10: command must be a list: command: [python3, agent.py]\n>    1 | command: python3 agent.py\n                  ^"},
		{"quotes group a word", "command: sh -c 'exec agent --url \"{{url}}\"'\n",
			`f.yaml:1:10: command must be a list: command: [sh, -c, "exec agent --url \"{{url}}\""]`},
		{"one word", "command: agent\n", "f.yaml:1:10: command must be a list: command: [agent]"},
		{"a number", "counts: 5\n", "f.yaml:1:9: counts must be a list: counts: [5]"},
		{"a flow mapping", "faults: {on: follow_up}\n", "f.yaml:1:9: faults must be a list: faults: [{on: follow_up}]"},
		{"a block mapping", "faults:\n  on: follow_up\n", "f.yaml:2:3: faults must be a list, not a mapping: a - before its first key makes it the list's one item"},
		{"nested", "inner: {args: -v --json}\n", "f.yaml:1:15: args must be a list: args: [-v, --json]"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var got lists
			err := Decode("f.yaml", []byte(tt.src), &got)
			var e *Error
			if !errors.As(err, &e) || !strings.HasPrefix(err.Error(), tt.want) {
				t.Fatalf("error:\n%v\nwant an *Error starting:\n%s", err, tt.want)
			}
		})
	}
}
