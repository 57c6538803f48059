package scenario

import (
	"encoding/json"
	"errors"
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

// Render gives the fake the scenario's script as typed steps: every field of
// every step kept, {{entry}} and {{token}} filled wherever they are (call,
// say, argument keys and values at any depth), numbers as written, and the
// scenario's own script left as it was.
func TestRenderScript(t *testing.T) {
	ss, errs := Parse("model.yaml", []byte(`
name: typed steps
request: {endpoint: chat}
model:
  - {call: "{{token}}_write", arguments: {entry: "{{entry}}", "{{ token }}": key, n: 9007199254740993, x: -1.5, ok: true, none: null,
      nested: {list: ["{{entry}}", 2, {deep: "{{token}}"}], empty: {}, no: []}}}
  - {call: commit_write}
  - {say: "done with {{entry}}"}
expect: {writes: 1}
`))
	if len(errs) > 0 {
		t.Fatal(errs)
	}
	const tok = "rc0123456789"
	entry := Entry(tok)
	r, err := ss[0].Render(tok)
	if err != nil {
		t.Fatal(err)
	}
	want := upstream.Script{Steps: []upstream.Step{
		{Call: tok + "_write", Arguments: map[string]any{
			"entry": entry, tok: "key", "n": uint64(9007199254740993), "x": -1.5, "ok": true, "none": nil,
			"nested": map[string]any{"list": []any{entry, uint64(2), map[string]any{"deep": tok}}, "empty": map[string]any{}, "no": []any{}},
		}},
		{Call: "commit_write"},
		{Say: "done with " + entry},
	}}
	if d := cmp.Diff(want, r.Script); d != "" {
		t.Errorf("rendered script (-want +got):\n%s", d)
	}
	if got := ss[0].Model.Script.Steps[0].Arguments["nested"].(map[string]any)["list"].([]any)[0]; got != "{{entry}}" {
		t.Errorf("Render changed the scenario's script: %v", got)
	}

	// An argument JSON cannot send fails the run's rendering, as it did
	// when the script went through JSON.
	ss, errs = Parse("inf.yaml", []byte("name: inf\nrequest: {endpoint: chat}\nmodel: [{call: commit_write, arguments: {n: .inf}}]\nexpect: {writes: 1}\n"))
	if len(errs) > 0 {
		t.Fatal(errs)
	}
	_, err = ss[0].Render(tok)
	var unsupported *json.UnsupportedValueError
	if !errors.As(err, &unsupported) || err.Error() != `rendering model of "inf": steps[0].arguments: json: unsupported value: +Inf` {
		t.Errorf("Render of an +Inf argument: %v", err)
	}
}
