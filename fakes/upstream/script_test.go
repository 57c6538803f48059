package upstream

import (
	"encoding/json"
	"errors"
	"math"
	"reflect"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"

	api "github.com/replaycheck/replaycheck/internal/dialect"
)

func TestParseScript(t *testing.T) {
	tests := []struct {
		name    string
		in      string
		want    Script
		wantErr string
	}{
		{"flow", `[{call: commit_write, arguments: {entry: "alpha-rc0123456789"}}, {say: done}]`,
			Script{Steps: []Step{{Call: "commit_write", Arguments: map[string]any{"entry": "alpha-rc0123456789"}}, {Say: "done"}}}, ""},
		{"block", "- call: read_ledger\n- say: ok\n", Script{Steps: []Step{{Call: "read_ledger"}, {Say: "ok"}}}, ""},
		{"json", `[{"say":"hi"}]`, Script{Steps: []Step{{Say: "hi"}}}, ""},
		{"unknown field has line:col", "- say: ok\n- cal: commit_write\n", Script{}, "[2:3]"},
		{"not a list", "say: done", Script{}, "parsing script"},
		{"empty step", "[{}]", Script{}, "steps[0]: want call or say"},
		{"call and say", "[{call: a, say: b}]", Script{}, "steps[0]: call and say are exclusive"},
		{"say with arguments", "[{say: b, arguments: {x: 1}}]", Script{}, "steps[0].arguments"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := ParseScript([]byte(tt.in))
			if tt.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), tt.wantErr) {
					t.Fatalf("err = %v, want one containing %q", err, tt.wantErr)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			diff(t, "script", tt.want, got)
			b, err := json.Marshal(got)
			if err != nil {
				t.Fatal(err)
			}
			var back Script
			if err := json.Unmarshal(b, &back); err != nil {
				t.Fatal(err)
			}
			diff(t, "JSON round trip", got, back)
		})
	}
}

func TestScriptTurn(t *testing.T) {
	s := Script{Steps: []Step{{Call: "a"}, {Call: "b"}, {Say: "mid"}, {Call: "c"}, {Say: "end"}}}
	tests := []struct {
		rounds    int
		wantCalls []string
		wantSay   string
	}{
		{0, []string{"a", "b"}, "end"},
		{1, []string{"c"}, "end"},
		{2, nil, "end"},
		{7, nil, "end"},
	}
	for _, tt := range tests {
		calls, _, say := s.turn(tt.rounds)
		var names []string
		for _, c := range calls {
			names = append(names, c.Call)
		}
		diff(t, "calls", tt.wantCalls, names)
		diff(t, "say", tt.wantSay, say)
	}
	var zero Script
	calls, _, say := zero.turn(0)
	diff(t, "default call", "commit_write", calls[0].Call)
	diff(t, "default say", "done", say)
}

func TestPromptEntry(t *testing.T) {
	tests := []struct{ in, want string }{
		{"Call the commit_write tool exactly once with entry alpha, then reply done.", "alpha"},
		{"Call commit_write once with entry alpha-rc0123456789, then reply done.", "alpha-rc0123456789"},
		{`record entry "beta_2" please`, "beta_2"},
		{"no such thing", ""},
	}
	for _, tt := range tests {
		diff(t, tt.in, tt.want, promptEntry(tt.in))
	}
}

func TestMatchTool(t *testing.T) {
	tools := []api.Tool{{Name: "ledger-read_ledger"}, {Name: "ledger-commit_write"}, {Name: "xcommit_write"}, {Name: "mcp__ledger__delete"}, {Name: "srv.lookup"}}
	tests := []struct {
		call string
		want string
		ok   bool
	}{
		{"commit_write", "ledger-commit_write", true},
		{"read_ledger", "ledger-read_ledger", true},
		{"write", "", false},
		{"xcommit_write", "xcommit_write", true},
		{"delete", "mcp__ledger__delete", true},
		{"lookup", "srv.lookup", true},
		{"ledger__delete", "mcp__ledger__delete", true},
		{"other", "", false},
	}
	for _, tt := range tests {
		got, ok, _ := matchTool(tools, tt.call)
		diff(t, tt.call, tt.want+" "+boolStr(tt.ok), got.Name+" "+boolStr(ok))
	}
}

func boolStr(b bool) string {
	if b {
		return "true"
	}
	return "false"
}

// A bad fault or script names its cause once: the YAML error already carries
// its position and excerpt, and must not be repeated.
func TestParseErrorsSayCauseOnce(t *testing.T) {
	tests := []struct {
		name  string
		parse func() error
		cause string
	}{
		{"unknown fault field", func() error { _, err := ParseFault("{bogus: 1}"); return err }, `unknown field "bogus"`},
		{"bad fault duration", func() error { _, err := ParseFault("{delay: {d: 1}}"); return err }, "want a string"},
		{"bad fault times", func() error { _, err := ParseFault("{reset: true, times: twice}"); return err }, `times "twice"`},
		{"script not a list", func() error { _, err := ParseScript([]byte("model: [{say: done}]")); return err }, "sequence is expected"},
		{"unknown script field", func() error { _, err := ParseScript([]byte("- cal: x")); return err }, `unknown field "cal"`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			err := tt.parse()
			if err == nil {
				t.Fatal("no error")
			}
			if n := strings.Count(err.Error(), tt.cause); n != 1 {
				t.Errorf("error names %q %d times, want once:\n%v", tt.cause, n, err)
			}
		})
	}
}

// TestScriptFill: Fill carries every field of every step, applies f to each
// string (argument keys and values at any depth), leaves other values as
// they are, shares nothing with the original, and refuses an argument JSON
// cannot send.
func TestScriptFill(t *testing.T) {
	if n := reflect.TypeFor[Step]().NumField(); n != 6 {
		t.Fatalf("Step has %d fields: make Fill carry the new one, and add it here", n)
	}
	in := Script{Steps: []Step{
		{Call: "x_write", Arguments: map[string]any{"entry": "x", "x": "key", "n": uint64(9007199254740993), "ok": true, "none": nil,
			"nested": map[string]any{"list": []any{"x", -1.5, map[string]any{"deep": "x"}}, "empty": map[string]any{}}}},
		{Call: "commit_write", AgainIfFailed: 2, FailedIf: "x fail", UnknownIf: "x unknown"},
		{Say: "done x"},
	}}
	upper := func(s string) string { return strings.ReplaceAll(s, "x", "X") }
	got, err := in.Fill(upper)
	if err != nil {
		t.Fatal(err)
	}
	want := Script{Steps: []Step{
		{Call: "X_write", Arguments: map[string]any{"entry": "X", "X": "key", "n": uint64(9007199254740993), "ok": true, "none": nil,
			"nested": map[string]any{"list": []any{"X", -1.5, map[string]any{"deep": "X"}}, "empty": map[string]any{}}}},
		{Call: "commit_write", AgainIfFailed: 2, FailedIf: "x fail", UnknownIf: "x unknown"},
		{Say: "done X"},
	}}
	if d := cmp.Diff(want, got); d != "" {
		t.Errorf("Fill (-want +got):\n%s", d)
	}
	got.Steps[0].Arguments["nested"].(map[string]any)["list"].([]any)[0] = "changed"
	if in.Steps[0].Arguments["nested"].(map[string]any)["list"].([]any)[0] != "x" {
		t.Error("the filled script shares a list with the original")
	}

	_, err = Script{Steps: []Step{{Call: "c"}, {Call: "c", Arguments: map[string]any{"n": math.Inf(1)}}}}.Fill(upper)
	var unsupported *json.UnsupportedValueError
	if !errors.As(err, &unsupported) || err.Error() != "steps[1].arguments: json: unsupported value: +Inf" {
		t.Errorf("Fill of an +Inf argument: %v", err)
	}
}
