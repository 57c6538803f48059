package scenario

import (
	"encoding/json"
	"fmt"
	"path"
	"reflect"

	"github.com/invopop/jsonschema"
	orderedmap "github.com/pb33f/ordered-map/v2"

	"github.com/replaycheck/replaycheck/fakes/fault"
	"github.com/replaycheck/replaycheck/fakes/upstream"
	"github.com/replaycheck/replaycheck/internal/harness/rules"
	"github.com/replaycheck/replaycheck/internal/wire"
)

// SchemaFile is where the repository keeps the scenario file schema.
const SchemaFile = "schemas/scenario.schema.json"

// SchemaID is the $id of the scenario file schema in the repository: the
// URL of SchemaFile on main (SchemaURL("main")).
const SchemaID = schemaBase + "main/" + SchemaFile

// schemaBase is the URL of the repository's files at a ref: append the ref
// and the path.
const schemaBase = "https://raw.githubusercontent.com/replaycheck/replaycheck/"

// SchemaURL returns the URL of the scenario file schema in the repository
// at ref (a release tag such as v1.2.3, or main): the file itself, which
// resolves.
func SchemaURL(ref string) string { return schemaBase + ref + "/" + SchemaFile }

// durationPattern matches a Go duration string such as "250ms" or "1m30s".
const durationPattern = `^([0-9]+(\.[0-9]+)?(ns|us|µs|ms|s|m|h))+$`

// Schema returns the JSON Schema of a scenario file (one scenario or a list
// of them), generated from the Go types, with the endpoints, rule names,
// fault kinds and fault timings as enums and patterns, so editors complete
// and check scenario files. Its $id is SchemaID.
func Schema() ([]byte, error) { return SchemaAt("main") }

// SchemaAt is Schema with the $id of the file in the repository at tag
// (SchemaURL): a release's binary names its own tag.
func SchemaAt(tag string) ([]byte, error) {
	r := &jsonschema.Reflector{Mapper: mapType, Namer: typeName}
	s := r.Reflect(&Scenario{})
	defs := s.Definitions
	exp, ok := defs["Expect"]
	if !ok {
		return nil, fmt.Errorf("schema: no Expect definition")
	}
	if rs, ok := exp.Properties.Get("rules"); ok && rs.Items != nil {
		names := rules.Names()
		rs.Items.Enum = make([]any, len(names))
		for i, n := range names {
			rs.Items.Enum[i] = n
		}
	}
	// The upstream counts of expect and of its per-target blocks.
	for _, d := range []string{"Expect", "Counts"} {
		if def, ok := defs[d]; ok {
			if up, ok := def.Properties.Get("upstream"); ok {
				up.PropertyNames = &jsonschema.Schema{Pattern: wire.CountKeyPattern()}
			}
		}
	}
	tools := make([]any, 0, 3)
	for _, t := range ledgerTools() {
		tools = append(tools, t)
	}
	if sc, ok := defs["Scenario"]; ok {
		if an, ok := sc.Properties.Get("annotations"); ok {
			an.PropertyNames = &jsonschema.Schema{Enum: tools}
		}
	}
	if cc, ok := defs["CallCount"]; ok && len(cc.OneOf) == 3 {
		cc.OneOf[2].PropertyNames = &jsonschema.Schema{Enum: tools}
	}
	if sc, ok := defs["Scenario"]; ok {
		requireRequest(sc)
	}
	ref := &jsonschema.Schema{Ref: "#/$defs/Scenario"}
	// if/then/else rather than oneOf, so that a bad scenario is reported by
	// its own errors, not as "want array".
	root := &jsonschema.Schema{
		Version:     jsonschema.Version,
		ID:          jsonschema.ID(SchemaURL(tag)),
		Title:       "replaycheck scenario file",
		Description: "One scenario, or a list of scenarios.",
		If:          &jsonschema.Schema{Type: "array"},
		Then:        &jsonschema.Schema{Items: ref},
		Else:        ref,
		Definitions: defs,
	}
	b, err := json.MarshalIndent(root, "", "  ")
	if err != nil {
		return nil, fmt.Errorf("schema: %w", err)
	}
	return append(b, '\n'), nil
}

// mapType gives the schema of types whose YAML form is not their Go shape.
func mapType(t reflect.Type) *jsonschema.Schema {
	switch t {
	case reflect.TypeFor[fault.Duration]():
		return &jsonschema.Schema{Type: "string", Pattern: durationPattern, Description: `a Go duration such as "250ms" or "2s"`}
	case reflect.TypeFor[fault.Times]():
		return &jsonschema.Schema{
			Description: "on which matching occurrences a fault fires: always (default), once, a count N (the first N), or {nth: K}",
			OneOf: []*jsonschema.Schema{
				{Type: "string", Enum: []any{"always", "once"}},
				{Type: "integer", Minimum: json.Number("1")},
				{Type: "object", Properties: props("nth", &jsonschema.Schema{Type: "integer", Minimum: json.Number("1")}),
					Required: []string{"nth"}, AdditionalProperties: jsonschema.FalseSchema},
			},
		}
	case reflect.TypeFor[upstream.Script]():
		return scriptSchema()
	case reflect.TypeFor[Model]():
		return &jsonschema.Schema{
			Description: "what answers the model requests: a script (a list of steps) or {cassette: FILE}",
			OneOf: []*jsonschema.Schema{
				scriptSchema(),
				{Type: "object", Properties: props("cassette", &jsonschema.Schema{Type: "string", MinLength: ptr(uint64(1)),
					Description: "a cassette file (or a directory of *.jsonl cassettes) recorded by serve --relay URL --record DIR, relative to this scenario file"}),
					Required: []string{"cassette"}, AdditionalProperties: jsonschema.FalseSchema},
			},
		}
	}
	return nil
}

// requireRequest has the scenario schema sc want what the loader wants:
// request or requests, not both, and one of them unless the scenario is a
// client one (sets expect.client).
func requireRequest(sc *jsonschema.Schema) {
	sc.Not = &jsonschema.Schema{Required: []string{"request", "requests"},
		Description: "request and requests are exclusive"}
	sc.If = &jsonschema.Schema{Properties: props("expect", &jsonschema.Schema{Not: &jsonschema.Schema{Required: []string{"client"}}})}
	sc.Then = &jsonschema.Schema{
		Description: "a scenario that is not a client one (expect.client) needs request or requests",
		AnyOf:       []*jsonschema.Schema{{Required: []string{"request"}}, {Required: []string{"requests"}}},
	}
}

// scriptSchema is the schema of a script: a list of steps.
func scriptSchema() *jsonschema.Schema {
	step := (&jsonschema.Reflector{DoNotReference: true, ExpandedStruct: true}).Reflect(&upstream.Step{})
	step.Version, step.ID = "", ""
	// As Script.Validate: a step is a call or a say, and only a call takes
	// arguments.
	step.OneOf = []*jsonschema.Schema{
		{Required: []string{"call"}, Not: &jsonschema.Schema{Required: []string{"say"}}},
		{Required: []string{"say"}, Not: &jsonschema.Schema{AnyOf: []*jsonschema.Schema{{Required: []string{"call"}}, {Required: []string{"arguments"}}}}},
	}
	return &jsonschema.Schema{Type: "array", Items: step,
		Description: "the fake model's script: tool calls ({call, arguments}) then a final {say}"}
}

func ptr[T any](v T) *T { return &v }

func props(name string, s *jsonschema.Schema) *orderedmap.OrderedMap[string, *jsonschema.Schema] {
	p := jsonschema.NewProperties()
	p.Set(name, s)
	return p
}

// typeName names definitions; the fakes' types are prefixed with their
// package, since both have a Fault.
func typeName(t reflect.Type) string {
	switch path.Base(t.PkgPath()) {
	case "upstream":
		return "Upstream" + t.Name()
	case "ledger":
		return "Ledger" + t.Name()
	}
	return t.Name()
}
