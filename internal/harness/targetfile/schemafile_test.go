package targetfile

import (
	"bytes"
	"encoding/json"
	"flag"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/goccy/go-yaml"
	"github.com/santhosh-tekuri/jsonschema/v6"

	"github.com/replaycheck/replaycheck/internal/harness/scenario"
	"github.com/replaycheck/replaycheck/internal/targettest"
	"github.com/replaycheck/replaycheck/internal/yamlfile"
)

var update = flag.Bool("update", false, "rewrite the published schemas in schemas/")

// The published schemas, kept equal to scenario.Schema() and Schema().
const (
	scenarioSchemaFile = "../../../schemas/scenario.schema.json"
	targetSchemaFile   = "../../../schemas/target.schema.json"
)

// TestSchemaFilesCurrent checks that the published schemas are what
// replaycheck schema and replaycheck schema --target print (the scenario
// schema with the $id of the ref its file names: main, or a release's tag at
// that tag, see scripts/release.sh); go test ./internal/harness/targetfile -update
// rewrites them (on main).
func TestSchemaFilesCurrent(t *testing.T) {
	for file, schema := range map[string]func() ([]byte, error){
		scenarioSchemaFile: func() ([]byte, error) { return scenario.SchemaAt(schemaRef(t, scenarioSchemaFile)) },
		targetSchemaFile:   Schema,
	} {
		if *update {
			b, err := scenario.Schema()
			if file == targetSchemaFile {
				b, err = Schema()
			}
			if err != nil {
				t.Fatal(err)
			}
			if err := os.WriteFile(file, b, 0o644); err != nil {
				t.Fatal(err)
			}
		}
		want, err := schema()
		if err != nil {
			t.Fatal(err)
		}
		got, err := os.ReadFile(file)
		if err != nil {
			t.Fatalf("%v (run go test ./internal/harness/targetfile -update)", err)
		}
		if !bytes.Equal(got, want) {
			t.Errorf("%s is stale; run go test ./internal/harness/targetfile -update", file)
		}
	}
}

// schemaRef is the ref (main or a release tag) in the $id of the scenario
// schema file, "main" when the file is missing or names no ref.
func schemaRef(t *testing.T, file string) string {
	t.Helper()
	b, err := os.ReadFile(file)
	if err != nil {
		return "main"
	}
	var s struct {
		ID string `json:"$id"`
	}
	if err := json.Unmarshal(b, &s); err != nil {
		t.Fatalf("%s: %v", file, err)
	}
	base := strings.TrimSuffix(scenario.SchemaID, "main/"+scenario.SchemaFile)
	ref, ok := strings.CutPrefix(s.ID, base)
	if ok {
		ref, ok = strings.CutSuffix(ref, "/"+scenario.SchemaFile)
	}
	if !ok || ref == "" || strings.Contains(ref, "/") {
		t.Fatalf("%s: $id %s is not the file's URL at a ref", file, s.ID)
	}
	return ref
}

// TestShippedYAMLNamesItsSchema checks that every shipped scenario and
// target file starts with the YAML language server's modeline naming its
// published schema by a path that resolves from the file, and that each
// target file is valid under that schema (the scenario files are checked
// against theirs in package scenario).
func TestShippedYAMLNamesItsSchema(t *testing.T) {
	const modeline = "# yaml-language-server: $schema="
	b, err := Schema()
	if err != nil {
		t.Fatal(err)
	}
	targetSchema, err := yamlfile.CompileSchema(SchemaID, b)
	if err != nil {
		t.Fatal(err)
	}
	for _, set := range []struct{ glob, schema string }{
		{"../../../scenarios/*/*.yaml", scenarioSchemaFile},
		{"../../../targets/*.yaml", targetSchemaFile},
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
			if err := targetSchema.Validate(jsonValue(t, f, src)); err != nil {
				t.Errorf("%s: not valid under the target schema: %v", f, err)
			}
		}
	}
}

// jsonValue reads the YAML src of file as the JSON value a schema validator
// sees.
func jsonValue(t *testing.T, file string, src []byte) any {
	t.Helper()
	j, err := yaml.YAMLToJSON(src)
	if err != nil {
		t.Fatalf("%s: %v", file, err)
	}
	v, err := jsonschema.UnmarshalJSON(bytes.NewReader(j))
	if err != nil {
		t.Fatalf("%s: %v", file, err)
	}
	return v
}

// TestTargetLoaderAndSchemaAgree feeds target files to the loader and to the
// published schema: a value of the wrong type that the decoder would convert
// (a number for a name, a quoted number for a count) is refused by both, at
// the value; a ${NAME} where a number goes is accepted by both; an empty
// file is refused by both, without a panic.
func TestTargetLoaderAndSchemaAgree(t *testing.T) {
	sch, err := compiledSchema()
	if err != nil {
		t.Fatal(err)
	}
	tests := []struct {
		name, src, err string
	}{
		{"ok", "kind: client\ncommand: [sh, -c, 'true']\nnum_retries: ${RETRIES:-2}\n", ""},
		{"name a number", "kind: client\nname: 123\ncommand: [sh, -c, 'true']\n",
			"t.yaml:2:7: name: want string, got number 123 (the target schema)"},
		{"count a string", "kind: client\ncommand: [sh, -c, 'true']\nnum_retries: \"2\"\n",
			`t.yaml:3:14: num_retries: want integer, got string "2" (the target schema)`},
		{"argument a number", "kind: client\ncommand: [sleep, 1]\n",
			"t.yaml:2:18: command[1]: want string, got number 1 (the target schema)"},
		{"empty", "# nothing\n", "t.yaml: a target file needs a kind: "},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, loadErr := Parse("t.yaml", []byte(tt.src), Options{Getenv: func(string) string { return "" }, Replaycheck: "/bin/false"})
			schemaErr := sch.Validate(jsonValue(t, "t.yaml", []byte(tt.src)))
			if tt.err == "" {
				if loadErr != nil || schemaErr != nil {
					t.Fatalf("loader: %v; schema: %v; want both to accept it", loadErr, schemaErr)
				}
				return
			}
			if loadErr == nil || schemaErr == nil {
				t.Fatalf("loader: %v; schema: %v; want both to refuse it", loadErr, schemaErr)
			}
			if first, _, _ := strings.Cut(loadErr.Error(), "\n"); !strings.HasPrefix(first, tt.err) {
				t.Errorf("loader error %q, want %q", first, tt.err)
			}
		})
	}
}
