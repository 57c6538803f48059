package scenario

import (
	"reflect"

	"github.com/goccy/go-yaml"
	"github.com/goccy/go-yaml/ast"
	"github.com/goccy/go-yaml/parser"
)

// DecodeStrict decodes the one YAML document in src, read from file, into v
// (a pointer) strictly: a syntax error, an unknown field or a value of the
// wrong type is an *Error at its line and column with the source excerpt. An
// empty document, or one of comments only, leaves v as it is. Other YAML file
// formats (target files, baselines) decode with it so that their errors read
// like a scenario's.
func DecodeStrict(file string, src []byte, v any) error {
	body, err := ParseDocument(file, src)
	if err != nil {
		return err
	}
	return DecodeNode(file, src, body, v)
}

// ParseDocument parses the one YAML document in src, read from file, and
// returns its body, nil for an empty document or one of comments only. A
// syntax error or a second document is an *Error at its line and column.
// With DecodeNode it lets a format edit the tree before decoding it (target
// files expand ${NAME} in it).
func ParseDocument(file string, src []byte) (ast.Node, error) {
	var f *ast.File
	if err := guard(func() (err error) { f, err = parser.ParseBytes(src, 0); return err }); err != nil {
		return nil, yamlError(file, src, err, nil)
	}
	var docs []ast.Node
	for _, d := range f.Docs {
		if body := unwrap(d.Body); body != nil {
			docs = append(docs, body)
		}
	}
	switch len(docs) {
	case 0:
		return nil, nil
	case 1:
		return docs[0], nil
	default:
		line, col := tokenPos(docs[1])
		return nil, newError(file, src, line, col, "want one YAML document, got %d", len(docs))
	}
}

// DecodeNode decodes body, a document body from ParseDocument(file, src),
// into v strictly, with DecodeStrict's errors (their excerpts taken from
// src). A nil body leaves v as it is.
func DecodeNode(file string, src []byte, body ast.Node, v any) error {
	if body == nil {
		return nil
	}
	err := guard(func() error { return yaml.NodeToValue(body, v, yaml.Strict(), yaml.DisallowUnknownField()) })
	if err != nil {
		return yamlErrorOf(file, src, err, body, reflect.TypeOf(v))
	}
	return nil
}
