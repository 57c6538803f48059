package run

import (
	"encoding/json"
	"fmt"
	"reflect"

	"github.com/invopop/jsonschema"

	"github.com/replaycheck/replaycheck/fakes/fault"
)

// TargetSchemaID is the $id of the target file schema.
const TargetSchemaID = "https://github.com/replaycheck/replaycheck/target.schema.json"

// TargetSchema returns the JSON Schema of a target file: one of the kinds in
// fileKinds (proxy, client), generated from their Go types.
func TargetSchema() ([]byte, error) {
	r := &jsonschema.Reflector{Mapper: targetMapType, RequiredFromJSONSchemaTags: false}
	defs := jsonschema.Definitions{}
	var oneOf []*jsonschema.Schema
	for _, k := range []struct {
		name string
		v    any
	}{{"ProxyFile", &ProxyFile{}}, {"ClientFile", &ClientFile{}}} {
		s := r.Reflect(k.v)
		for name, d := range s.Definitions {
			defs[name] = d
		}
		oneOf = append(oneOf, &jsonschema.Schema{Ref: "#/$defs/" + k.name})
	}
	if len(oneOf) != len(fileKinds()) {
		return nil, fmt.Errorf("target schema: %d kinds in the schema, %d in the table", len(oneOf), len(fileKinds()))
	}
	root := &jsonschema.Schema{
		Version:     jsonschema.Version,
		ID:          TargetSchemaID,
		Title:       "replaycheck target file",
		Description: "A system under test: kind proxy (a gateway at a URL, optionally started by the harness) or kind client (a command run once per scenario request).",
		OneOf:       oneOf,
		Definitions: defs,
	}
	b, err := json.MarshalIndent(root, "", "  ")
	if err != nil {
		return nil, fmt.Errorf("target schema: %w", err)
	}
	return append(b, '\n'), nil
}

func targetMapType(t reflect.Type) *jsonschema.Schema {
	if t == reflect.TypeFor[fault.Duration]() {
		return &jsonschema.Schema{Type: "string", Pattern: `^([0-9]+(\.[0-9]+)?(ns|us|µs|ms|s|m|h))+$`, Description: `a Go duration such as "250ms" or "2s"`}
	}
	return nil
}
