package yamlfile

import (
	"fmt"
	"reflect"
	"strings"

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
