package nesting

import (
	"encoding/json"
	"strings"
	"testing"

	"github.com/goccy/go-yaml/ast"
	"github.com/goccy/go-yaml/parser"
	"github.com/google/go-cmp/cmp"
)

// scanned is the depth the scan finds: the least limit src stays within.
func scanned(t testing.TB, scan func([]byte, int) *Error, src []byte) int {
	t.Helper()
	for limit := 0; ; limit++ {
		if scan(src, limit) == nil {
			return limit
		}
	}
}

// parsedDepth is the depth of the tree goccy/go-yaml builds of src, and
// whether it parses.
func parsedDepth(src []byte) (depth int, ok bool) {
	defer func() {
		if recover() != nil {
			ok = false
		}
	}()
	f, err := parser.ParseBytes(src, 0)
	if err != nil {
		return 0, false
	}
	for _, d := range f.Docs {
		depth = max(depth, treeDepth(d.Body))
	}
	return depth, true
}

func treeDepth(n ast.Node) int {
	switch v := n.(type) {
	case *ast.DocumentNode:
		return treeDepth(v.Body)
	case *ast.MappingNode:
		d := 0
		for _, p := range v.Values {
			d = max(d, treeDepth(p.Key), treeDepth(p.Value))
		}
		return 1 + d
	case *ast.MappingValueNode:
		return 1 + max(treeDepth(v.Key), treeDepth(v.Value))
	case *ast.SequenceNode:
		d := 0
		for _, e := range v.Values {
			d = max(d, treeDepth(e))
		}
		return 1 + d
	case *ast.AnchorNode:
		return treeDepth(v.Value)
	case *ast.TagNode:
		return treeDepth(v.Value)
	case *ast.MappingKeyNode:
		return treeDepth(v.Value)
	}
	return 0
}

// jsonDepth is the depth of a JSON value decoded by encoding/json.
func jsonDepth(v any) int {
	d := 0
	switch v := v.(type) {
	case []any:
		for _, e := range v {
			d = max(d, jsonDepth(e))
		}
		return 1 + d
	case map[string]any:
		for _, e := range v {
			d = max(d, jsonDepth(e))
		}
		return 1 + d
	}
	return 0
}

// yamlCases are documents with the depth goccy/go-yaml gives them.
var yamlCases = []struct {
	name string
	src  string
	want int
}{
	{name: "scalar", src: "x", want: 0},
	{name: "mapping", src: "a: 1\nb: 2\n", want: 1},
	{name: "flow lists", src: "[[1], [[2]]]", want: 3},
	{name: "block mappings", src: "a:\n  b:\n    c: 1\nd: 2\n", want: 3},
	{name: "compact sequences", src: "- - - x\n- y\n", want: 3},
	{name: "sequence at its key's column", src: "key:\n- a\n- b\nother: c\n", want: 2},
	{name: "mappings in a sequence", src: "- a: 1\n  b:\n    - c\n- d: {e: [f]}\n", want: 4},
	{name: "brackets in quotes", src: "prompt: 'it''s [[[[ {{{{'\nother: \"a \\\" [[[[\"\n", want: 1},
	{name: "brackets in a plain scalar", src: "prompt: don't [[ stop {\nnext: [a]\n", want: 2},
	{name: "brackets in a block scalar", src: "text: |\n  - - - - [[[[\n\n  {{{{\nnext: 1\n", want: 1},
	{name: "folded block scalar in a list", src: "- >-\n  [[[[\n- |2\n   - - -\n", want: 1},
	{name: "brackets in comments", src: "# [[[[\na: 1 # {{{{\n", want: 1},
	{name: "documents", src: "---\na: [1]\n---\n- - x\n...\n", want: 2},
	{name: "multi-line plain scalar", src: "a: b\n  c [[[ d\n", want: 1},
	{name: "multi-line flow", src: "a: [\n  [1,\n   {b: 'x,\n  ]'}]\n]\n", want: 4},
	{name: "pretty JSON", src: "{\n  \"a\": {\n    \"b\": [1]\n  }\n}\n", want: 3},
	{name: "JSON-like key", src: "{\"a\":[1]}", want: 2},
	{name: "pairs in a flow sequence", src: "[a: [b: c], d]", want: 4},
	{name: "anchors and tags", src: "a: &x !!seq\n  - &y [1]\nb: *x\n", want: 3},
}

func TestYAML(t *testing.T) {
	for _, tt := range yamlCases {
		t.Run(tt.name, func(t *testing.T) {
			if d, ok := parsedDepth([]byte(tt.src)); !ok || d != tt.want {
				t.Fatalf("goccy/go-yaml: depth %d (parsed %v), the case wants %d", d, ok, tt.want)
			}
			if got := scanned(t, YAML, []byte(tt.src)); got != tt.want {
				t.Errorf("scanned depth %d, want %d", got, tt.want)
			}
		})
	}
}

func TestTooDeep(t *testing.T) {
	tests := []struct {
		name string
		scan func([]byte, int) *Error
		src  string
		want *Error
	}{
		{name: "YAML flow", scan: YAML, src: "a: 1\ntags: " + strings.Repeat("[", 200), want: &Error{Line: 2, Col: 106, Max: Max}},
		{name: "YAML flow mappings", scan: YAML, src: strings.Repeat("{a: ", 200), want: &Error{Line: 1, Col: 401, Max: Max}},
		{name: "YAML compact sequences", scan: YAML, src: "a:\n" + strings.Repeat("- ", 200), want: &Error{Line: 2, Col: 199, Max: Max}},
		{name: "YAML block mappings", scan: YAML, src: staircase(200), want: &Error{Line: 101, Col: 101, Max: Max}},
		{name: "YAML after an anchor named by a quoted scalar", scan: YAML, src: "tags: &\"0 \"\n" + strings.Repeat("- ", 200), want: &Error{Line: 2, Col: 199, Max: Max}},
		{name: "JSON", scan: JSON, src: "{\"a\": \"[[[\",\n \"b\": " + strings.Repeat("[", 200), want: &Error{Line: 2, Col: 106, Max: Max}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if diff := cmp.Diff(tt.want, tt.scan([]byte(tt.src), Max)); diff != "" {
				t.Errorf("(-want +got)\n%s", diff)
			}
		})
	}
}

// staircase is a block mapping nested n deep, one space of indentation a
// level.
func staircase(n int) string {
	var b strings.Builder
	for i := range n {
		b.WriteString(strings.Repeat(" ", i) + "k:\n")
	}
	return b.String()
}

func TestJSON(t *testing.T) {
	for _, src := range []string{`1`, `[]`, `{"a": [1, {"b": "]]"}]}`, `["\"[", "\\", [[]]]`, "{\n \"a\": [\n  [2]\n ]\n}"} {
		var v any
		if err := json.Unmarshal([]byte(src), &v); err != nil {
			t.Fatal(err)
		}
		if got, want := scanned(t, JSON, []byte(src)), jsonDepth(v); got != want {
			t.Errorf("%s: scanned depth %d, want %d", src, got, want)
		}
	}
}

// FuzzYAML checks that the scan never finds a document shallower than the
// tree goccy/go-yaml parses of it: what the scan lets through is within
// the limit for the parser too.
func FuzzYAML(f *testing.F) {
	for _, tt := range yamlCases {
		f.Add(tt.src)
	}
	f.Add("a: |\n b\nc:\n- - d\n")
	f.Add("- 'a\n  b' : [c\n , d]\n")
	f.Fuzz(func(t *testing.T, src string) {
		if len(src) > 4<<10 {
			return
		}
		want, ok := parsedDepth([]byte(src))
		if !ok {
			return
		}
		if got := scanned(t, YAML, []byte(src)); got < want {
			t.Errorf("scanned depth %d, goccy/go-yaml parses depth %d of %q", got, want, src)
		}
	})
}

// FuzzJSON checks that the scan finds the depth encoding/json decodes of
// every valid JSON document.
func FuzzJSON(f *testing.F) {
	f.Add(`{"a": [1, {"b": "]]\\"[["}]}`)
	f.Add(`[[[]], {}]`)
	f.Fuzz(func(t *testing.T, src string) {
		var v any
		if json.Unmarshal([]byte(src), &v) != nil {
			return
		}
		if got, want := scanned(t, JSON, []byte(src)), jsonDepth(v); got != want {
			t.Errorf("scanned depth %d, encoding/json decodes depth %d of %q", got, want, src)
		}
	})
}
