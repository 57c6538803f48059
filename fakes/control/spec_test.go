package control

import (
	"bytes"
	"encoding/json"
	"flag"
	"os"
	"regexp"
	"slices"
	"strings"
	"testing"

	"github.com/goccy/go-yaml"
)

var update = flag.Bool("update", false, "rewrite the fault schemas of openapi.yaml from schemas/scenario.schema.json")

// specMarker ends the hand-written part of openapi.yaml; below it are the
// fault schemas, copied from the scenario schema.
const specMarker = "    # Generated from schemas/scenario.schema.json by go test ./fakes/control -run TestSpecFaultSchemas -update; do not edit below.\n"

// TestSpecFaultSchemas: the fault schemas of openapi.yaml are the scenario
// schema's (UpstreamFault, LedgerFault and what they refer to), so the
// control API and scenario files take the same faults.
func TestSpecFaultSchemas(t *testing.T) {
	src, err := os.ReadFile("../../schemas/scenario.schema.json")
	if err != nil {
		t.Fatal(err)
	}
	var scenario struct {
		Defs map[string]json.RawMessage `json:"$defs"`
	}
	if err := json.Unmarshal(src, &scenario); err != nil {
		t.Fatal(err)
	}
	ref := regexp.MustCompile(`"#/\$defs/([A-Za-z0-9]+)"`)
	want := map[string]any{}
	for todo := []string{"UpstreamFault", "LedgerFault"}; len(todo) > 0; {
		name := todo[0]
		todo = todo[1:]
		if _, done := want[name]; done {
			continue
		}
		def, ok := scenario.Defs[name]
		if !ok {
			t.Fatalf("scenario schema: no $defs/%s", name)
		}
		for _, m := range ref.FindAllSubmatch(def, -1) {
			todo = append(todo, string(m[1]))
		}
		var v map[string]any
		if err := json.Unmarshal(ref.ReplaceAll(def, []byte(`"#/components/schemas/$1"`)), &v); err != nil {
			t.Fatal(err)
		}
		want[name] = constraintsUnderAllOf(v)
	}
	js, err := json.Marshal(want)
	if err != nil {
		t.Fatal(err)
	}
	y, err := yaml.JSONToYAML(js)
	if err != nil {
		t.Fatal(err)
	}
	var gen strings.Builder
	for _, l := range strings.SplitAfter(string(y), "\n") {
		if l != "" {
			gen.WriteString("    " + l)
		}
	}
	hand, _, found := strings.Cut(string(Spec), specMarker)
	if !found {
		hand = strings.TrimRight(hand, "\n") + "\n"
	}
	full := []byte(hand + specMarker + gen.String())
	if *update {
		if err := os.WriteFile("openapi.yaml", full, 0o666); err != nil {
			t.Fatal(err)
		}
		return
	}
	if !bytes.Equal(full, Spec) {
		names := slices.Sorted(func(yield func(string) bool) {
			for k := range want {
				if !yield(k) {
					return
				}
			}
		})
		t.Errorf("openapi.yaml's fault schemas (%s) differ from schemas/scenario.schema.json's; run go test ./fakes/control -run TestSpecFaultSchemas -update", strings.Join(names, ", "))
	}
}

// constraintsUnderAllOf moves a schema's anyOf, oneOf and not (which say
// which fields go together) into an allOf beside its properties: the same
// constraint, but generators such as openapi-typescript then type the
// properties instead of giving up (a union with a required-only branch
// became unknown, so a client could send anything).
func constraintsUnderAllOf(def map[string]any) map[string]any {
	var all []any
	for _, k := range []string{"anyOf", "oneOf", "not"} {
		if c, ok := def[k]; ok {
			all = append(all, map[string]any{k: c})
			delete(def, k)
		}
	}
	if all != nil {
		def["allOf"] = all
	}
	return def
}
