package control

import (
	"reflect"
	"slices"
	"strings"
	"testing"

	"github.com/goccy/go-yaml"

	"github.com/replaycheck/replaycheck/internal/wire"
)

// TestSpecCountsMatchWire: openapi.yaml's RunCounts names every field of
// wire.UpstreamCounts and wire.MCPCounts, and no other, so a count added to
// the fakes is described (the validator refuses an undescribed one only
// where a test happens to produce it).
func TestSpecCountsMatchWire(t *testing.T) {
	var spec struct {
		Components struct {
			Schemas struct {
				RunCounts struct {
					Properties map[string]struct {
						Properties map[string]any `yaml:"properties"`
					} `yaml:"properties"`
				} `yaml:"RunCounts"`
			} `yaml:"schemas"`
		} `yaml:"components"`
	}
	if err := yaml.Unmarshal(Spec, &spec); err != nil {
		t.Fatal(err)
	}
	for side, v := range map[string]any{"upstream": wire.UpstreamCounts{}, "mcp": wire.MCPCounts{}} {
		var want []string
		rt := reflect.TypeOf(v)
		for i := range rt.NumField() {
			name, _, _ := strings.Cut(rt.Field(i).Tag.Get("json"), ",")
			if name != "" && name != "-" {
				want = append(want, name)
			}
		}
		var got []string
		for name := range spec.Components.Schemas.RunCounts.Properties[side].Properties {
			got = append(got, name)
		}
		slices.Sort(want)
		slices.Sort(got)
		if !slices.Equal(got, want) {
			t.Errorf("openapi.yaml RunCounts.%s properties %q; wire's JSON fields %q", side, got, want)
		}
	}
}

// TestSpecMCPEventMatchesWire: openapi.yaml's MCPEvent names every JSON
// field of wire.MCPEvent, and no other, so a field added to the event is
// described (the schema refuses an undescribed one).
func TestSpecMCPEventMatchesWire(t *testing.T) {
	var spec struct {
		Components struct {
			Schemas struct {
				MCPEvent struct {
					Properties map[string]any `yaml:"properties"`
				} `yaml:"MCPEvent"`
			} `yaml:"schemas"`
		} `yaml:"components"`
	}
	if err := yaml.Unmarshal(Spec, &spec); err != nil {
		t.Fatal(err)
	}
	var want []string
	rt := reflect.TypeOf(wire.MCPEvent{})
	for i := range rt.NumField() {
		name, _, _ := strings.Cut(rt.Field(i).Tag.Get("json"), ",")
		if name != "" && name != "-" {
			want = append(want, name)
		}
	}
	var got []string
	for name := range spec.Components.Schemas.MCPEvent.Properties {
		got = append(got, name)
	}
	slices.Sort(want)
	slices.Sort(got)
	if !slices.Equal(got, want) {
		t.Errorf("openapi.yaml MCPEvent properties %q; wire.MCPEvent's JSON fields %q", got, want)
	}
}
