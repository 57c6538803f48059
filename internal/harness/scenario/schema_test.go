package scenario

import (
	"bytes"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/goccy/go-yaml"
	"github.com/google/go-cmp/cmp"
	"github.com/santhosh-tekuri/jsonschema/v6"

	"github.com/replaycheck/replaycheck/internal/wire"
	"github.com/replaycheck/replaycheck/internal/yamlfile"
)

// compileSchema compiles Schema() with santhosh-tekuri/jsonschema, the
// judge of what the schema accepts.
func compileSchema(t *testing.T) *jsonschema.Schema {
	t.Helper()
	b, err := Schema()
	if err != nil {
		t.Fatal(err)
	}
	sch, err := yamlfile.CompileSchema(SchemaID, b)
	if err != nil {
		t.Fatalf("schema does not compile: %v", err)
	}
	return sch
}

// yamlToJSONValue reads the YAML file at path as the JSON value a schema
// validator sees.
func yamlToJSONValue(t *testing.T, path string) any {
	t.Helper()
	src, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	j, err := yaml.YAMLToJSON(src)
	if err != nil {
		t.Fatalf("%s: %v", path, err)
	}
	x, err := jsonschema.UnmarshalJSON(bytes.NewReader(j))
	if err != nil {
		t.Fatalf("%s: %v", path, err)
	}
	return x
}

// shippedScenarios are the example files and every scenario shipped in
// scenarios/.
func shippedScenarios(t *testing.T) []string {
	t.Helper()
	var files []string
	for _, dir := range []string{"testdata/good", "../../../scenarios"} {
		err := filepath.WalkDir(dir, func(p string, d os.DirEntry, err error) error {
			if err == nil && !d.IsDir() && strings.HasSuffix(p, ".yaml") {
				files = append(files, p)
			}
			return err
		})
		if err != nil {
			t.Fatal(err)
		}
	}
	if len(files) < 2 {
		t.Fatalf("found only %d scenario files", len(files))
	}
	return files
}

// TestLoaderAndSchemaAgree feeds the same documents to the loader and to
// the schema: both must accept every shipped scenario and reject each bad
// file the schema can judge (not those whose fault is outside the document,
// such as a missing cassette).
func TestLoaderAndSchemaAgree(t *testing.T) {
	sch := compileSchema(t)
	type doc struct {
		name   string
		file   string
		wantOK bool
	}
	var tests []doc
	for _, f := range shippedScenarios(t) {
		tests = append(tests, doc{name: f, file: f, wantOK: true})
	}
	for _, f := range []string{"unknown-field", "wrong-type", "bad-duration", "bad-fault-duration", "unknown-endpoint", "unknown-rule", "unknown-fault", "bad-times", "upstream-key", "not-a-mapping", "unknown-tool",
		"count-negative", "count-fraction", "count-unknown-bound", "count-bound-twice", "count-no-bound", "count-per-tool",
		"targets-upstream-key", "targets-rules", "mcp-method-tool", "mcp-method-drop", "mcp-method-unknown", "mcp-drop-after",
		"mcp-change-tools-none", "mcp-change-tools-rename", "mcp-change-tools-name", "mcp-expire-after", "mcp-unauthorized-setting",
		"status-string", "status-range", "targets-status-range", "step-call-and-say", "step-say-arguments", "no-request", "request-and-requests",
		// Strict typing (issue 18 item 16): a quoted number is a string, a
		// number is no string; and a fault has one action.
		"fault-status-string", "mcp-status-string", "name-number", "tag-number", "step-say-number",
		"fault-two-actions", "fault-no-action", "fault-reset-false", "fault-delay-reset", "fault-drop-not-streamed", "empty-fault",
		"mcp-protocol-unknown"} {
		tests = append(tests, doc{name: f, file: "testdata/bad/" + f + ".yaml"})
	}
	tests = append(tests, doc{name: "protocol", file: "testdata/protocol.yaml", wantOK: true})
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, loadErr := Load(tt.file)
			schemaErr := sch.Validate(yamlToJSONValue(t, tt.file))
			if got := loadErr == nil; got != tt.wantOK {
				t.Errorf("loader accepts %s: %v, want %v (%v)", tt.file, got, tt.wantOK, loadErr)
			}
			if got := schemaErr == nil; got != tt.wantOK {
				t.Errorf("schema accepts %s: %v, want %v (%v)", tt.file, got, tt.wantOK, schemaErr)
			}
		})
	}
}

// TestSchemaClientNeedsNoRequest checks that the schema, like the loader,
// lets a client scenario (expect.client) go without a request.
func TestSchemaClientNeedsNoRequest(t *testing.T) {
	src := []byte("name: client only\nexpect:\n  client: {exit: 0}\n")
	if _, errs := Parse("client.yaml", src); len(errs) > 0 {
		t.Fatalf("loader rejects a client scenario without a request: %v", errs)
	}
	j, err := yaml.YAMLToJSON(src)
	if err != nil {
		t.Fatal(err)
	}
	x, err := jsonschema.UnmarshalJSON(bytes.NewReader(j))
	if err != nil {
		t.Fatal(err)
	}
	if err := compileSchema(t).Validate(x); err != nil {
		t.Errorf("schema rejects a client scenario without a request: %v", err)
	}
}

// TestSchemaErrorsName checks that the schema's error for a bad single
// scenario names what is wrong in it, not that it is not a list.
func TestSchemaErrorsName(t *testing.T) {
	tests := []struct {
		name string
		file string
		want string
	}{
		{"status string", "status-string", "/expect/status"},
		{"unknown field", "unknown-field", "additional properties"},
		{"list item", "", "/0/expect/status"},
	}
	sch := compileSchema(t)
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var x any
			if tt.file != "" {
				x = yamlToJSONValue(t, "testdata/bad/"+tt.file+".yaml")
			} else {
				var err error
				x, err = jsonschema.UnmarshalJSON(strings.NewReader(`[{"name": "a", "request": {"endpoint": "chat"}, "expect": {"status": "500"}}]`))
				if err != nil {
					t.Fatal(err)
				}
			}
			err := sch.Validate(x)
			if err == nil {
				t.Fatal("schema accepts it")
			}
			got := err.Error()
			if !strings.Contains(got, tt.want) || strings.Contains(got, "want array") || strings.Contains(got, "want object") {
				t.Errorf("schema error does not name the problem (want %q):\n%s", tt.want, got)
			}
		})
	}
}

func TestSchemaEnums(t *testing.T) {
	b, err := Schema()
	if err != nil {
		t.Fatal(err)
	}
	var root map[string]any
	if err := json.Unmarshal(b, &root); err != nil {
		t.Fatal(err)
	}
	s := string(b)
	for _, want := range []string{`"chat"`, `"responses"`, `"messages"`, `"no-replay-after-dispatch"`, `"cancel-propagates"`,
		`"follow_up"`, `"tool_call"`, `"commit_write_keyed"`, `"tools/list"`, `"LedgerFault"`, `"UpstreamFault"`, `"readOnlyHint"`} {
		if !strings.Contains(s, want) {
			t.Errorf("schema lacks %s", want)
		}
	}
}

// TestSchemaProtocolEnum checks that the schema's mcp.protocol lists
// exactly the versions the loader accepts (wire.MCPProtocols), newest first.
func TestSchemaProtocolEnum(t *testing.T) {
	b, err := Schema()
	if err != nil {
		t.Fatal(err)
	}
	var root struct {
		Defs map[string]struct {
			Properties map[string]struct {
				Enum []wire.MCPProtocol `json:"enum"`
			} `json:"properties"`
		} `json:"$defs"`
	}
	if err := json.Unmarshal(b, &root); err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff(wire.MCPProtocols(), root.Defs["MCP"].Properties["protocol"].Enum); diff != "" {
		t.Errorf("mcp.protocol enum (-want +got):\n%s", diff)
	}
}
