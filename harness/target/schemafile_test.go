package target

import (
	"bytes"
	"flag"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/goccy/go-yaml"
	"github.com/santhosh-tekuri/jsonschema/v6"

	"github.com/replaycheck/replaycheck/harness/scenario"
	"github.com/replaycheck/replaycheck/internal/targettest"
)

var update = flag.Bool("update", false, "rewrite the published schemas in schemas/")

// The published schemas, kept equal to scenario.Schema() and TargetSchema().
const (
	scenarioSchemaFile = "../../schemas/scenario.schema.json"
	targetSchemaFile   = "../../schemas/target.schema.json"
)

// TestSchemaFilesCurrent checks that the published schemas are what
// replaycheck schema and replaycheck schema --target print; go test
// ./harness/target -update rewrites them.
func TestSchemaFilesCurrent(t *testing.T) {
	for file, schema := range map[string]func() ([]byte, error){
		scenarioSchemaFile: scenario.Schema,
		targetSchemaFile:   TargetSchema,
	} {
		want, err := schema()
		if err != nil {
			t.Fatal(err)
		}
		if *update {
			if err := os.WriteFile(file, want, 0o644); err != nil {
				t.Fatal(err)
			}
		}
		got, err := os.ReadFile(file)
		if err != nil {
			t.Fatalf("%v (run go test ./harness/target -update)", err)
		}
		if !bytes.Equal(got, want) {
			t.Errorf("%s is stale; run go test ./harness/target -update", file)
		}
	}
}

// TestShippedYAMLNamesItsSchema checks that every shipped scenario and
// target file starts with the YAML language server's modeline naming its
// published schema by a path that resolves from the file, and that each
// target file is valid under that schema (the scenario files are checked
// against theirs in package scenario).
func TestShippedYAMLNamesItsSchema(t *testing.T) {
	const modeline = "# yaml-language-server: $schema="
	b, err := TargetSchema()
	if err != nil {
		t.Fatal(err)
	}
	doc, err := jsonschema.UnmarshalJSON(bytes.NewReader(b))
	if err != nil {
		t.Fatal(err)
	}
	c := jsonschema.NewCompiler()
	if err := c.AddResource("target.schema.json", doc); err != nil {
		t.Fatal(err)
	}
	targetSchema, err := c.Compile("target.schema.json")
	if err != nil {
		t.Fatal(err)
	}
	for _, set := range []struct{ glob, schema string }{
		{"../../scenarios/*/*.yaml", scenarioSchemaFile},
		{"../../targets/*.yaml", targetSchemaFile},
	} {
		files := targettest.Shipped(t, set.glob)
		if len(files) == 0 {
			t.Fatalf("%s: no files", set.glob)
		}
		for _, f := range files {
			src, err := os.ReadFile(f)
			if err != nil {
				t.Fatal(err)
			}
			first, _, _ := strings.Cut(string(src), "\n")
			rel, ok := strings.CutPrefix(first, modeline)
			if !ok {
				t.Errorf("%s: first line %q, want %s%s", f, first, modeline, "<path of its schema>")
				continue
			}
			if got := filepath.Join(filepath.Dir(f), rel); got != filepath.Clean(set.schema) {
				t.Errorf("%s: the modeline names %s, which is %s from here; want %s", f, rel, got, set.schema)
			}
			if set.schema != targetSchemaFile {
				continue
			}
			j, err := yaml.YAMLToJSON(src)
			if err != nil {
				t.Fatalf("%s: %v", f, err)
			}
			v, err := jsonschema.UnmarshalJSON(bytes.NewReader(j))
			if err != nil {
				t.Fatalf("%s: %v", f, err)
			}
			if err := targetSchema.Validate(v); err != nil {
				t.Errorf("%s: not valid under the target schema: %v", f, err)
			}
		}
	}
}
