package scenario

import (
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"

	"github.com/goccy/go-yaml"
)

// validator is a small JSON Schema checker for the keywords Schema uses.
type validator struct{ defs map[string]any }

func (v validator) check(s map[string]any, x any, at string) error {
	if ref, ok := s["$ref"].(string); ok {
		d, ok := v.defs[strings.TrimPrefix(ref, "#/$defs/")].(map[string]any)
		if !ok {
			return fmt.Errorf("%s: dangling $ref %s", at, ref)
		}
		return v.check(d, x, at)
	}
	if one, ok := s["oneOf"].([]any); ok {
		n := 0
		var errs []string
		for _, o := range one {
			if err := v.check(o.(map[string]any), x, at); err == nil {
				n++
			} else {
				errs = append(errs, err.Error())
			}
		}
		if n != 1 {
			return fmt.Errorf("%s: matches %d of oneOf (%s)", at, n, strings.Join(errs, "; "))
		}
	}
	if alts, ok := s["anyOf"].([]any); ok {
		n := 0
		for _, o := range alts {
			if v.check(o.(map[string]any), x, at) == nil {
				n++
			}
		}
		if n == 0 {
			return fmt.Errorf("%s: matches none of anyOf", at)
		}
	}
	if not, ok := s["not"].(map[string]any); ok && v.check(not, x, at) == nil {
		return fmt.Errorf("%s: matches what it must not", at)
	}
	if enum, ok := s["enum"].([]any); ok && !slices.Contains(enum, x) {
		return fmt.Errorf("%s: %v not in enum %v", at, x, enum)
	}
	if p, ok := s["pattern"].(string); ok {
		if str, ok := x.(string); ok && !regexp.MustCompile(p).MatchString(str) {
			return fmt.Errorf("%s: %q does not match %s", at, str, p)
		}
	}
	if obj, ok := x.(map[string]any); ok {
		if m, ok := s["minProperties"].(float64); ok && float64(len(obj)) < m {
			return fmt.Errorf("%s: fewer than %v properties", at, m)
		}
		req, _ := s["required"].([]any)
		for _, r := range req {
			if _, ok := obj[r.(string)]; !ok {
				return fmt.Errorf("%s: missing required %s", at, r)
			}
		}
	}
	switch t, _ := s["type"].(string); t {
	case "string":
		str, ok := x.(string)
		if !ok {
			return fmt.Errorf("%s: want string, got %T", at, x)
		}
		if m, ok := s["minLength"].(float64); ok && float64(len(str)) < m {
			return fmt.Errorf("%s: shorter than %v", at, m)
		}
	case "integer", "number":
		f, ok := x.(float64)
		if !ok || t == "integer" && f != float64(int64(f)) {
			return fmt.Errorf("%s: want %s, got %v", at, t, x)
		}
		if m, ok := s["minimum"].(float64); ok && f < m {
			return fmt.Errorf("%s: %v below minimum %v", at, f, m)
		}
		if m, ok := s["maximum"].(float64); ok && f > m {
			return fmt.Errorf("%s: %v above maximum %v", at, f, m)
		}
	case "boolean":
		if _, ok := x.(bool); !ok {
			return fmt.Errorf("%s: want boolean, got %T", at, x)
		}
	case "array":
		arr, ok := x.([]any)
		if !ok {
			return fmt.Errorf("%s: want array, got %T", at, x)
		}
		if items, ok := s["items"].(map[string]any); ok {
			for i, e := range arr {
				if err := v.check(items, e, fmt.Sprintf("%s[%d]", at, i)); err != nil {
					return err
				}
			}
		}
	case "object":
		obj, ok := x.(map[string]any)
		if !ok {
			return fmt.Errorf("%s: want object, got %T", at, x)
		}
		props, _ := s["properties"].(map[string]any)
		for k, e := range obj {
			if pn, ok := s["propertyNames"].(map[string]any); ok {
				if err := v.check(pn, k, at+"."+k); err != nil {
					return err
				}
			}
			if ps, ok := props[k].(map[string]any); ok {
				if err := v.check(ps, e, at+"."+k); err != nil {
					return err
				}
				continue
			}
			switch ap := s["additionalProperties"].(type) {
			case bool:
				if !ap {
					return fmt.Errorf("%s: unknown property %s", at, k)
				}
			case map[string]any:
				if err := v.check(ap, e, at+"."+k); err != nil {
					return err
				}
			}
		}
	}
	return nil
}

func loadSchema(t *testing.T) (validator, map[string]any) {
	t.Helper()
	b, err := Schema()
	if err != nil {
		t.Fatal(err)
	}
	var root map[string]any
	if err := json.Unmarshal(b, &root); err != nil {
		t.Fatalf("schema is not JSON: %v", err)
	}
	return validator{defs: root["$defs"].(map[string]any)}, root
}

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
	var x any
	if err := json.Unmarshal(j, &x); err != nil {
		t.Fatalf("%s: %v", path, err)
	}
	return x
}

// TestSchemaValidatesScenarios checks the example files and every scenario
// shipped in scenarios/ against the schema.
func TestSchemaValidatesScenarios(t *testing.T) {
	v, root := loadSchema(t)
	var files []string
	for _, dir := range []string{"testdata/good", "../../scenarios"} {
		filepath.WalkDir(dir, func(p string, d os.DirEntry, err error) error {
			if err == nil && !d.IsDir() && strings.HasSuffix(p, ".yaml") {
				files = append(files, p)
			}
			return nil
		})
	}
	if len(files) < 2 {
		t.Fatalf("found only %d scenario files", len(files))
	}
	for _, f := range files {
		if err := v.check(root, yamlToJSONValue(t, f), "$"); err != nil {
			t.Errorf("%s does not validate: %v", f, err)
		}
	}
}

func TestSchemaRejects(t *testing.T) {
	v, root := loadSchema(t)
	for _, f := range []string{"unknown-field", "wrong-type", "bad-duration", "bad-fault-duration", "unknown-endpoint", "unknown-rule", "unknown-fault", "bad-times", "upstream-key", "not-a-mapping", "unknown-tool",
		"count-negative", "count-fraction", "count-unknown-bound", "count-bound-twice", "count-no-bound", "count-per-tool",
		"targets-upstream-key", "targets-rules", "mcp-method-tool", "mcp-method-drop", "mcp-method-unknown", "mcp-drop-after"} {
		t.Run(f, func(t *testing.T) {
			if err := v.check(root, yamlToJSONValue(t, "testdata/bad/"+f+".yaml"), "$"); err == nil {
				t.Errorf("schema accepts testdata/bad/%s.yaml", f)
			}
		})
	}
}

func TestSchemaEnums(t *testing.T) {
	b, err := Schema()
	if err != nil {
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
