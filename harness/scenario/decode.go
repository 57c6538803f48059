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
	var f *ast.File
	if err := guard(func() (err error) { f, err = parser.ParseBytes(src, 0); return err }); err != nil {
		return yamlError(file, src, err, nil)
	}
	var docs []ast.Node
	for _, d := range f.Docs {
		if body := unwrap(d.Body); body != nil {
			docs = append(docs, body)
		}
	}
	switch len(docs) {
	case 0:
		return nil
	case 1:
	default:
		line, col := tokenPos(docs[1])
		return newError(file, src, line, col, "want one YAML document, got %d", len(docs))
	}
	err := guard(func() error { return yaml.NodeToValue(docs[0], v, yaml.Strict(), yaml.DisallowUnknownField()) })
	if err != nil {
		return yamlErrorOf(file, src, err, docs[0], reflect.TypeOf(v))
	}
	return nil
}
