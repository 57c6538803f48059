package yamlfile

import (
	"fmt"
	"reflect"
	"regexp"
	"strconv"
	"strings"
	"unicode"

	"github.com/goccy/go-yaml"
	"github.com/goccy/go-yaml/ast"
	"github.com/goccy/go-yaml/token"
)

// typeMessage says what a field wants in YAML terms rather than Go's.
func typeMessage(te *yaml.TypeError) string {
	want := te.DstType.String()
	switch te.DstType.Kind() {
	case reflect.Int, reflect.Int8, reflect.Int16, reflect.Int32, reflect.Int64, reflect.Uint, reflect.Uint8, reflect.Uint16, reflect.Uint32, reflect.Uint64:
		want = "a whole number"
	case reflect.Float32, reflect.Float64:
		want = "a number"
	case reflect.Bool:
		want = "true or false"
	case reflect.String:
		want = "a string"
	case reflect.Slice, reflect.Array:
		want = "a list"
	case reflect.Map, reflect.Struct:
		want = "a mapping"
	}
	msg := fmt.Sprintf("want %s, got %q", want, te.Token.Value)
	if key := te.Token.Prev; key != nil && key.Type == token.MappingValueType && key.Prev != nil {
		msg = key.Prev.Value + ": " + msg
	}
	return msg
}

// listError is the *Error of a value under n, a node of file, given where
// YAML wants a list: at the value (a block mapping's first key), it shows
// the list form, "command must be a list: command: [python3, agent.py]" (a
// string split into words as a shell does, another scalar or a flow mapping
// as the list's one item), or, for a block mapping, that a - before it makes
// it one.
func listError(file string, src []byte, n ast.Node, ue *yaml.UnexpectedNodeTypeError) *Error {
	at := nodeAt(n, ue.Token)
	line, col := ue.Token.Position.Line, ue.Token.Position.Column
	if ps := Pairs(at); len(ps) > 0 && !isFlowMapping(at) {
		line, col = Pos(ps[0].Key)
	}
	return NewError(file, src, line, col, "%s", listMessage(n, at, ue))
}

// isFlowMapping reports whether n is a mapping written in flow style, {a: b}.
func isFlowMapping(n ast.Node) bool {
	m, ok := Unwrap(n).(*ast.MappingNode)
	return ok && m.IsFlowStyle
}

// listMessage is listError's message about at, the node under n at ue.
func listMessage(n, at ast.Node, ue *yaml.UnexpectedNodeTypeError) string {
	key := ""
	if at != nil {
		if mv, ok := ast.Parent(n, at).(*ast.MappingValueNode); ok && mv.Value == at {
			key = KeyName(mv)
		}
	} else if k := ue.Token.Prev; k != nil && k.Type == token.MappingValueType && k.Prev != nil {
		key = k.Prev.Value
	}
	lead := "want a list"
	if key != "" {
		lead = key + " must be a list"
	}
	var items []string
	switch {
	case ue.Actual == ast.StringType:
		for _, w := range words(ue.Token.Value) {
			if !flowWord.MatchString(w) {
				w = strconv.Quote(w)
			}
			items = append(items, w)
		}
	case isFlowMapping(at):
		items = []string{at.String()}
	case ue.Actual == ast.MappingType || ue.Actual == ast.MappingValueType:
		return lead + ", not a mapping: a - before its first key makes it the list's one item"
	default:
		items = []string{ue.Token.Value}
	}
	list := "[" + strings.Join(items, ", ") + "]"
	if key != "" {
		list = key + ": " + list
	}
	return lead + ": " + list
}

// nodeAt returns the outermost node under n that starts at tk, nil when
// none does.
func nodeAt(n ast.Node, tk *token.Token) ast.Node {
	if n == nil {
		return nil
	}
	v := &tokenFinder{tk: tk}
	ast.Walk(v, n)
	return v.found
}

// tokenFinder is the ast.Visitor of nodeAt.
type tokenFinder struct {
	tk    *token.Token
	found ast.Node
}

func (v *tokenFinder) Visit(n ast.Node) ast.Visitor {
	if v.found != nil {
		return nil
	}
	if n.GetToken() == v.tk {
		v.found = n
		return nil
	}
	return v
}

// words splits s at white space as a shell does, a '…' or "…" group one
// word without its quotes (sh -c 'exec x' is [sh, -c, exec x]); with a quote
// left open it splits at white space alone.
func words(s string) []string {
	var out []string
	var w strings.Builder
	in, quote := false, rune(0)
	for _, r := range s {
		switch {
		case quote != 0 && r == quote:
			quote = 0
		case quote != 0:
			w.WriteRune(r)
		case r == '\'' || r == '"':
			quote, in = r, true
		case unicode.IsSpace(r):
			if in {
				out = append(out, w.String())
				w.Reset()
			}
			in = false
		default:
			w.WriteRune(r)
			in = true
		}
	}
	if quote != 0 {
		return strings.Fields(s)
	}
	if in {
		out = append(out, w.String())
	}
	return out
}

// flowWord matches a word a YAML flow sequence may hold unquoted.
var flowWord = regexp.MustCompile(`^[A-Za-z0-9_./~$+=@%-]+$`)

var (
	funcUnmarshaler  = reflect.TypeFor[interface{ UnmarshalYAML(func(any) error) error }]()
	bytesUnmarshaler = reflect.TypeFor[interface{ UnmarshalYAML([]byte) error }]()
)

// locate returns the deepest node under n (of Go type t) that fails to
// decode, with its error, or nil when every part decodes.
func locate(n ast.Node, t reflect.Type) (ast.Node, error) {
	n = Unwrap(n)
	for t.Kind() == reflect.Pointer {
		t = t.Elem()
	}
	custom := reflect.PointerTo(t).Implements(funcUnmarshaler) || reflect.PointerTo(t).Implements(bytesUnmarshaler)
	if custom {
		err := guard(func() error {
			return yaml.NodeToValue(n, reflect.New(t).Interface(), yaml.Strict(), yaml.DisallowUnknownField())
		})
		if err == nil {
			return nil, nil
		}
		if at, aerr := locateChildren(n, t); at != nil {
			return at, aerr
		}
		return n, err
	}
	return locateChildren(n, t)
}

func locateChildren(n ast.Node, t reflect.Type) (ast.Node, error) {
	switch t.Kind() {
	case reflect.Struct:
		for _, p := range Pairs(n) {
			f, ok := fieldByYAMLName(t, KeyName(p))
			if !ok {
				continue
			}
			if at, err := locate(p.Value, f.Type); at != nil {
				return at, err
			}
		}
	case reflect.Slice:
		if seq, ok := n.(*ast.SequenceNode); ok {
			for _, v := range seq.Values {
				if at, err := locate(v, t.Elem()); at != nil {
					return at, err
				}
			}
		}
	case reflect.Map:
		for _, p := range Pairs(n) {
			if at, err := locate(p.Value, t.Elem()); at != nil {
				return at, err
			}
		}
	}
	return nil, nil
}

// fieldsAround returns the YAML field names of the struct whose mapping under
// n (of Go type t) has a key at line:col, so an unknown field can be answered
// with the known ones; nil when no such mapping is found.
func fieldsAround(n ast.Node, t reflect.Type, line, col int) []string {
	n = Unwrap(n)
	for t.Kind() == reflect.Pointer {
		t = t.Elem()
	}
	switch t.Kind() {
	case reflect.Struct:
		for _, p := range Pairs(n) {
			if l, c := Pos(p.Key); l == line && c == col {
				return yamlNames(t)
			}
			if f, ok := fieldByYAMLName(t, KeyName(p)); ok {
				if names := fieldsAround(p.Value, f.Type, line, col); names != nil {
					return names
				}
			}
		}
	case reflect.Slice:
		if seq, ok := n.(*ast.SequenceNode); ok {
			for _, v := range seq.Values {
				if names := fieldsAround(v, t.Elem(), line, col); names != nil {
					return names
				}
			}
		}
	case reflect.Map:
		for _, p := range Pairs(n) {
			if names := fieldsAround(p.Value, t.Elem(), line, col); names != nil {
				return names
			}
		}
	}
	return nil
}

// yamlNames returns the YAML names of t's fields, in declaration order.
func yamlNames(t reflect.Type) []string {
	var out []string
	for i := range t.NumField() {
		f := t.Field(i)
		name, opts, _ := strings.Cut(f.Tag.Get("yaml"), ",")
		switch {
		case name == "-" || !f.IsExported():
		case strings.Contains(opts, "inline") && f.Type.Kind() == reflect.Struct:
			out = append(out, yamlNames(f.Type)...)
		case name != "":
			out = append(out, name)
		}
	}
	return out
}

// fieldByYAMLName finds the field of struct type t that YAML key name sets,
// looking into inline structs.
func fieldByYAMLName(t reflect.Type, name string) (reflect.StructField, bool) {
	for i := range t.NumField() {
		f := t.Field(i)
		tag, opts, _ := strings.Cut(f.Tag.Get("yaml"), ",")
		if strings.Contains(opts, "inline") && f.Type.Kind() == reflect.Struct {
			if g, ok := fieldByYAMLName(f.Type, name); ok {
				return g, true
			}
			continue
		}
		if tag == name || tag == "" && strings.EqualFold(f.Name, name) {
			return f, true
		}
	}
	return reflect.StructField{}, false
}
