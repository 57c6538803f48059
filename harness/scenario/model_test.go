package scenario

import (
	"encoding/json"
	"path/filepath"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/replaycheck/replaycheck/fakes/upstream"
)

// A model is a list of steps or {cassette: FILE}: the loader reads the
// cassette next to the scenario, each run gets a player of its own from
// the first entry, the schema accepts both forms, and JSON round-trips.
func TestModelCassette(t *testing.T) {
	ss, err := Load("testdata/cassette/replay.yaml")
	if err != nil {
		t.Fatal(err)
	}
	m := &ss[0].Model
	if d := cmp.Diff(filepath.Join("testdata", "cassette", "session.jsonl"), m.CassetteFile()); d != "" {
		t.Errorf("cassette file (-want +got):\n%s", d)
	}
	// A retried initial request gets the second answer in one run; each
	// run starts from the first.
	for run := range 2 {
		p := m.Player()
		if p == nil || p.Len() != 3 {
			t.Fatalf("run %d: player %v", run, p)
		}
		e, src, err := p.Find(m.entries[0].Request)
		if err != nil || src.Line != 1 || e.Answer.Status != 200 {
			t.Errorf("run %d: first answer from line %d (%v)", run, src.Line, err)
		}
	}
	// The same request answered twice counts once; the calls are named as
	// the ledger's tools.
	if d := cmp.Diff([]string{"commit_write"}, m.Calls()); d != "" {
		t.Errorf("calls (-want +got):\n%s", d)
	}
	if d := cmp.Diff([]string{"commit_write"}, (&Model{}).Calls()); d != "" {
		t.Errorf("the seed's calls (-want +got):\n%s", d)
	}
	if d := cmp.Diff((&Scenario{}).Script(), ss[0].Script()); d != "" {
		t.Errorf("Script() of a cassette model is not the seed's (-want +got):\n%s", d)
	}

	sch := compileSchema(t)
	for _, f := range []string{"testdata/cassette/replay.yaml", "testdata/good/seed.yaml"} {
		if err := sch.Validate(yamlToJSONValue(t, f)); err != nil {
			t.Errorf("schema rejects %s: %v", f, err)
		}
	}
	for _, f := range []string{"model-unknown-field", "model-scalar"} {
		if err := sch.Validate(yamlToJSONValue(t, "testdata/bad/"+f+".yaml")); err == nil {
			t.Errorf("schema accepts testdata/bad/%s.yaml", f)
		}
	}

	tests := []struct {
		name, json string
		want       Model
	}{
		{"cassette", `{"cassette":"s.jsonl"}`, Model{Cassette: "s.jsonl"}},
		{"steps", `[{"say":"hi"}]`, Model{Script: upstream.Script{Steps: []upstream.Step{{Say: "hi"}}}}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var got Model
			if err := json.Unmarshal([]byte(tt.json), &got); err != nil {
				t.Fatal(err)
			}
			if d := cmp.Diff(tt.want, got, cmp.AllowUnexported(Model{})); d != "" {
				t.Errorf("decoded (-want +got):\n%s", d)
			}
			b, err := json.Marshal(got)
			if err != nil || string(b) != tt.json {
				t.Errorf("encoded %s (%v), want %s", b, err, tt.json)
			}
		})
	}
	if err := json.Unmarshal([]byte(`{"casette":"s.jsonl"}`), new(Model)); err == nil {
		t.Errorf("an unknown field decodes")
	}
}
