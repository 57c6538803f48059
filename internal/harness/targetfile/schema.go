package targetfile

import (
	"encoding/json"
	"fmt"
	"reflect"
	"sync"

	"github.com/goccy/go-yaml/ast"
	"github.com/invopop/jsonschema"
	validator "github.com/santhosh-tekuri/jsonschema/v6"

	"github.com/replaycheck/replaycheck/fakes/fault"
	"github.com/replaycheck/replaycheck/internal/yamlfile"
)

// SchemaID is the $id of the target file schema.
const SchemaID = "https://github.com/replaycheck/replaycheck/target.schema.json"

// Schema returns the JSON Schema of a target file: one of the kinds in
// fileKinds (proxy, client), generated from their Go types.
func Schema() ([]byte, error) {
	r := &jsonschema.Reflector{Mapper: targetMapType, RequiredFromJSONSchemaTags: false}
	defs := jsonschema.Definitions{}
	var oneOf []*jsonschema.Schema
	for _, k := range []struct {
		name string
		v    any
	}{{"ProxyFile", &ProxyFile{}}, {"ClientFile", &ClientFile{}}} {
		s := r.Reflect(k.v)
		for name, d := range s.Definitions {
			allowEnvRefs(d)
			defs[name] = d
		}
		oneOf = append(oneOf, &jsonschema.Schema{Ref: "#/$defs/" + k.name})
	}
	if len(oneOf) != len(fileKinds()) {
		return nil, fmt.Errorf("target schema: %d kinds in the schema, %d in the table", len(oneOf), len(fileKinds()))
	}
	root := &jsonschema.Schema{
		Version:     jsonschema.Version,
		ID:          SchemaID,
		Title:       "replaycheck target file",
		Description: "A system under test: kind proxy (a gateway at a URL, optionally started by the harness) or kind client (a command run once per scenario request). Every scalar value may use ${NAME} or ${NAME:-default} from the environment ($${ is a literal ${); a plain one that expands to a number or true/false is one.",
		OneOf:       oneOf,
		Definitions: defs,
	}
	b, err := json.MarshalIndent(root, "", "  ")
	if err != nil {
		return nil, fmt.Errorf("target schema: %w", err)
	}
	return append(b, '\n'), nil
}

// schemaOnce holds Schema() compiled, for checkSchema (a function
// rather than a sync.OnceValues variable: loading a target file is part of
// what Schema reflects on).
var schemaOnce struct {
	sync.Once
	sch *validator.Schema
	err error
}

func compiledSchema() (*validator.Schema, error) {
	schemaOnce.Do(func() {
		b, err := Schema()
		if err != nil {
			schemaOnce.err = err
			return
		}
		schemaOnce.sch, schemaOnce.err = yamlfile.CompileSchema(SchemaID, b)
	})
	return schemaOnce.sch, schemaOnce.err
}

// checkSchema checks the body n of a target file that loaded against
// the published schema, so that what the schema refuses (name: 123, a
// quoted "2" for num_retries) the loader refuses too, at the value.
func checkSchema(file string, src []byte, n ast.Node) yamlfile.ErrorList {
	sch, err := compiledSchema()
	if err != nil {
		return yamlfile.ErrorList{{File: file, Msg: err.Error()}}
	}
	return yamlfile.SchemaErrors(file, src, n, sch, "the target schema")
}

// envRefPattern matches a string with a ${NAME} or ${NAME:-default}
// reference (see envRef).
const envRefPattern = `\$\{[A-Za-z_][A-Za-z0-9_]*(:-[^}]*)?\}`

// allowEnvRefs lets every property of def that takes a number, true/false
// or a patterned string (a duration) take a ${NAME} reference instead, since
// the file is expanded before it is decoded.
func allowEnvRefs(def *jsonschema.Schema) {
	if def.Properties == nil {
		return
	}
	for p := def.Properties.Oldest(); p != nil; p = p.Next() {
		s := p.Value
		if s.Type != "integer" && s.Type != "number" && s.Type != "boolean" && s.Pattern == "" {
			continue
		}
		typed := *s
		typed.Description = ""
		*s = jsonschema.Schema{Description: s.Description, AnyOf: []*jsonschema.Schema{
			&typed,
			{Type: "string", Pattern: envRefPattern, Description: "a ${NAME} or ${NAME:-default} reference"},
		}}
	}
}

func targetMapType(t reflect.Type) *jsonschema.Schema {
	if t == reflect.TypeFor[fault.Duration]() {
		return &jsonschema.Schema{Type: "string", Pattern: `^([0-9]+(\.[0-9]+)?(ns|us|µs|ms|s|m|h))+$`, Description: `a Go duration such as "250ms" or "2s"`}
	}
	return nil
}
