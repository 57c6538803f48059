package yamlfile

import (
	"bytes"
	"errors"
	"fmt"
	"slices"
	"strconv"
	"strings"

	"github.com/goccy/go-yaml"
	"github.com/goccy/go-yaml/ast"
	"github.com/santhosh-tekuri/jsonschema/v6"
	"github.com/santhosh-tekuri/jsonschema/v6/kind"
)

// CompileSchema compiles the JSON Schema b, whose $id is id
// (santhosh-tekuri/jsonschema, the validator editors' tools agree with).
func CompileSchema(id string, b []byte) (*jsonschema.Schema, error) {
	doc, err := jsonschema.UnmarshalJSON(bytes.NewReader(b))
	if err != nil {
		return nil, fmt.Errorf("schema %s is not JSON: %w", id, err)
	}
	c := jsonschema.NewCompiler()
	if err := c.AddResource(id, doc); err != nil {
		return nil, fmt.Errorf("schema %s: %w", id, err)
	}
	return c.Compile(id)
}

// SchemaErrors checks node n of file (a tree Parse returned for src) against
// sch and returns where it breaks it, each an *Error at the value it is
// about ("name: want string, got number 123 (the target schema)", with what
// naming the schema). The decoder is lenient where a schema is not (it takes
// a quoted "500" as a number and 123 as a string); a format that checks its
// files with their published schema this way refuses what the schema
// refuses. Of a choice (oneOf, anyOf) that nothing matched, the errors of
// the alternative nearest to matching are reported (see schemaLeaves).
func SchemaErrors(file string, src []byte, n ast.Node, sch *jsonschema.Schema, what string) ErrorList {
	if n == nil {
		return nil // an empty document: the format says what it wants
	}
	var v any
	if err := guard(func() error { return yaml.NodeToValue(n, &v) }); err != nil {
		return ErrorList{ErrorAt(file, src, n, "%v", err)}
	}
	err := sch.Validate(v)
	var ve *jsonschema.ValidationError
	if !errors.As(err, &ve) {
		if err != nil {
			return ErrorList{{File: file, Msg: err.Error()}}
		}
		return nil
	}
	var errs ErrorList
	for _, e := range schemaLeaves(ve) {
		at, label := n, ""
		for _, tok := range e.InstanceLocation {
			if _, ok := Unwrap(at).(*ast.SequenceNode); ok {
				i, _ := strconv.Atoi(tok)
				at, label = At(at, i), label+"["+tok+"]"
				continue
			}
			at, label = At(at, tok), strings.TrimPrefix(label+"."+tok, ".")
		}
		msg := e.BasicOutput().Error.String()
		if t, ok := e.ErrorKind.(*kind.Type); ok {
			msg = fmt.Sprintf("want %s, got %s %s", strings.Join(t.Want, " or "), t.Got, strings.TrimSpace(at.String()))
		}
		if label != "" {
			msg = label + ": " + msg
		}
		errs = append(errs, ErrorAt(file, src, at, "%s (%s)", msg, what))
	}
	return errs
}

// schemaLeaves returns the errors at the leaves of e's tree. Of a choice
// (oneOf, anyOf) it takes the alternative with the fewest errors (the one
// the value nearly matched: a client target file is not reported as a proxy
// with a wrong kind), the deeper one of two with as many.
func schemaLeaves(e *jsonschema.ValidationError) []*jsonschema.ValidationError {
	if len(e.Causes) == 0 {
		return []*jsonschema.ValidationError{e}
	}
	switch e.ErrorKind.(type) {
	case *kind.AnyOf, *kind.OneOf:
		var best []*jsonschema.ValidationError
		for _, c := range e.Causes {
			l := schemaLeaves(c)
			if best == nil || len(l) < len(best) || len(l) == len(best) && depth(l) > depth(best) {
				best = l
			}
		}
		return best
	}
	var out []*jsonschema.ValidationError
	for _, c := range e.Causes {
		out = append(out, schemaLeaves(c)...)
	}
	return out
}

// depth is how deep in the value the deepest of errs is.
func depth(errs []*jsonschema.ValidationError) int {
	return len(slices.MaxFunc(errs, func(a, b *jsonschema.ValidationError) int {
		return len(a.InstanceLocation) - len(b.InstanceLocation)
	}).InstanceLocation)
}
