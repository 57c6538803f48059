package main

import (
	"encoding/json"
	"strings"
	"testing"

	"github.com/replaycheck/replaycheck/internal/harness/scenario"
)

// TestSchemaIDNamesTheRelease checks the $id `replaycheck schema` prints: the
// schema file at the release's tag for a release build (as goreleaser and go
// install stamp the version), on main for any other build.
func TestSchemaIDNamesTheRelease(t *testing.T) {
	tests := []struct{ version, want string }{
		{"1.2.3", "v1.2.3"},
		{"v1.2.3", "v1.2.3"},
		{"dev", "main"},
		{"v0.0.0-20261201120000-0123456789ab", "main"},
		{"1.3.0-rc.1", "main"},
	}
	for _, tt := range tests {
		if got := releaseTag(tt.version); got != tt.want {
			t.Errorf("releaseTag(%q) = %q, want %q", tt.version, got, tt.want)
		}
	}
	var out strings.Builder
	if err := runSchema(t.Context(), &schemaOptions{Out: &out}); err != nil {
		t.Fatal(err)
	}
	var s struct {
		ID string `json:"$id"`
	}
	if err := json.Unmarshal([]byte(out.String()), &s); err != nil || s.ID != scenario.SchemaURL(releaseTag(versionString())) {
		t.Errorf("replaycheck schema: $id %q (%v), want %s", s.ID, err, scenario.SchemaURL(releaseTag(versionString())))
	}
}
