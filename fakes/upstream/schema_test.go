package upstream

import (
	"encoding/json"
	"strings"
	"testing"

	"github.com/invopop/jsonschema"
)

// The script is a list of steps in the schema, and a fault's fields carry
// their YAML names and descriptions.
func TestSchema(t *testing.T) {
	r := &jsonschema.Reflector{DoNotReference: true}
	b, err := json.Marshal(r.Reflect(&struct {
		Model  Script  `json:"model"`
		Faults []Fault `json:"faults"`
	}{}))
	if err != nil {
		t.Fatal(err)
	}
	s := string(b)
	for _, want := range []string{
		`"model":{"items":{"properties":{"call"`,
		`"additionalProperties":false,"type":"object"},"type":"array"},"faults"`,
		`"on":{"type":"string","enum":["initial","follow_up","any"]`,
		`"after":{"type":"string","enum":["headers","tool_call","events"]`,
		`"after":{"type":"string","enum":["headers","tool_call","events","elapsed"]`,
		`"delay":{"type":"string"`,
		`"dribble":{"type":"string"`,
		`"stream_error":{"properties":{"after"`,
		`"type":{"type":"string","pattern":"^[a-z][a-z0-9_]*$"`,
		`"event":{"type":"string","enum":["response.failed","error"]`,
		`"stall":{"properties":{"after"`,
		`"for":{"type":"string"`,
		`"forever":{"type":"boolean"`,
	} {
		if !strings.Contains(s, want) {
			t.Errorf("schema lacks %s:\n%s", want, s)
		}
	}
}
