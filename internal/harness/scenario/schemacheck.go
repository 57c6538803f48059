package scenario

import (
	"sync"

	"github.com/goccy/go-yaml/ast"
	"github.com/santhosh-tekuri/jsonschema/v6"

	"github.com/replaycheck/replaycheck/internal/yamlfile"
)

// compiledSchema is Schema() compiled, for checkSchema.
var compiledSchema = sync.OnceValues(func() (*jsonschema.Schema, error) {
	b, err := Schema()
	if err != nil {
		return nil, err
	}
	return yamlfile.CompileSchema(SchemaID, b)
})

// checkSchema checks scenario n, which decoded and passed validate, against
// the published schema (Schema), so that a file the schema refuses is
// refused here too, at the value it is about (see yamlfile.SchemaErrors).
func checkSchema(file string, src []byte, n ast.Node) ErrorList {
	sch, err := compiledSchema()
	if err != nil {
		return ErrorList{{File: file, Msg: err.Error()}}
	}
	return yamlfile.SchemaErrors(file, src, n, sch, "the scenario schema")
}
