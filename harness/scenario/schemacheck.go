package scenario

import (
	"bytes"
	"errors"
	"fmt"
	"slices"
	"strconv"
	"strings"
	"sync"

	"github.com/goccy/go-yaml"
	"github.com/goccy/go-yaml/ast"
	"github.com/santhosh-tekuri/jsonschema/v6"
	"github.com/santhosh-tekuri/jsonschema/v6/kind"

	"github.com/replaycheck/replaycheck/internal/yamlfile"
)

// compiledSchema is Schema() compiled, for checkSchema.
var compiledSchema = sync.OnceValues(func() (*jsonschema.Schema, error) {
	b, err := Schema()
	if err != nil {
		return nil, err
	}
	doc, err := jsonschema.UnmarshalJSON(bytes.NewReader(b))
	if err != nil {
		return nil, fmt.Errorf("schema: %w", err)
	}
	c := jsonschema.NewCompiler()
	if err := c.AddResource(SchemaID, doc); err != nil {
		return nil, fmt.Errorf("schema: %w", err)
	}
	return c.Compile(SchemaID)
})

// checkSchema checks scenario n, which decoded and passed validate, against
// the published schema (Schema), so that a file the schema refuses is refused
// here too, at the value it is about: the decoder takes a quoted "500" as a
// number and 123 as a name, the schema (and every editor) does not. Each
// error not under a choice of the schema (oneOf, anyOf) is reported; when
// all are, the deepest.
func checkSchema(file string, src []byte, n ast.Node) ErrorList {
	sch, err := compiledSchema()
	if err != nil {
		return ErrorList{{File: file, Msg: err.Error()}}
	}
	var v any
	if err := yaml.NodeToValue(n, &v); err != nil {
		return ErrorList{yamlfile.ErrorAt(file, src, n, "%v", err)}
	}
	err = sch.Validate(v)
	var ve *jsonschema.ValidationError
	if !errors.As(err, &ve) {
		if err != nil {
			return ErrorList{{File: file, Msg: err.Error()}}
		}
		return nil
	}
	var direct, all []*jsonschema.ValidationError
	var walk func(e *jsonschema.ValidationError, chosen bool)
	walk = func(e *jsonschema.ValidationError, chosen bool) {
		switch e.ErrorKind.(type) {
		case *kind.AnyOf, *kind.OneOf:
			chosen = true
		}
		if len(e.Causes) == 0 {
			all = append(all, e)
			if !chosen {
				direct = append(direct, e)
			}
		}
		for _, c := range e.Causes {
			walk(c, chosen)
		}
	}
	walk(ve, false)
	if len(direct) == 0 {
		deepest := slices.MaxFunc(all, func(a, b *jsonschema.ValidationError) int {
			return len(a.InstanceLocation) - len(b.InstanceLocation)
		})
		direct = append(direct, deepest)
	}
	var errs ErrorList
	for _, e := range direct {
		at, label := n, ""
		for _, tok := range e.InstanceLocation {
			if _, ok := yamlfile.Unwrap(at).(*ast.SequenceNode); ok {
				i, _ := strconv.Atoi(tok)
				at, label = yamlfile.At(at, i), fmt.Sprintf("%s[%s]", label, tok)
				continue
			}
			at, label = yamlfile.At(at, tok), strings.TrimPrefix(label+"."+tok, ".")
		}
		msg := e.BasicOutput().Error.String()
		if t, ok := e.ErrorKind.(*kind.Type); ok {
			msg = fmt.Sprintf("want %s, got %s %s", strings.Join(t.Want, " or "), t.Got, strings.TrimSpace(at.String()))
		}
		if label != "" {
			msg = label + ": " + msg
		}
		errs = append(errs, yamlfile.ErrorAt(file, src, at, "%s (the scenario schema)", msg))
	}
	return errs
}
