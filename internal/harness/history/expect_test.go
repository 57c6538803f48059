package history

import (
	"encoding/json"
	"errors"
	"testing"

	"github.com/goccy/go-yaml"
	"github.com/google/go-cmp/cmp"

	"github.com/replaycheck/replaycheck/internal/wire"
)

func TestCountForms(t *testing.T) {
	tests := []struct {
		name      string
		yaml      string
		want      string // String
		unit      string // Describe(write)
		match     []int
		miss      []int
		wantBound string // CountError.Bound
		wantErr   string
	}{
		{name: "exact", yaml: "1", want: "1", unit: "1 write", match: []int{1}, miss: []int{0, 2}},
		{name: "exact zero", yaml: "0", want: "0", unit: "0 writes", match: []int{0}, miss: []int{1}},
		{name: "max", yaml: "{max: 1}", want: "at most 1", unit: "at most 1 write", match: []int{0, 1}, miss: []int{2}},
		{name: "at_most", yaml: "{at_most: 2}", want: "at most 2", unit: "at most 2 writes", match: []int{2}, miss: []int{3}},
		{name: "min", yaml: "{min: 1}", want: "at least 1", unit: "at least 1 write", match: []int{1, 9}, miss: []int{0}},
		{name: "at_least", yaml: "{at_least: 2}", want: "at least 2", unit: "at least 2 writes", match: []int{2}, miss: []int{1}},
		{name: "range", yaml: "{min: 1, max: 3}", want: "1–3", unit: "1–3 writes", match: []int{1, 2, 3}, miss: []int{0, 4}},
		{name: "range of one", yaml: "{min: 2, max: 2}", want: "2", unit: "2 writes", match: []int{2}, miss: []int{1, 3}},
		{name: "block mapping", yaml: "\n  at_least: 1\n  at_most: 3\n", want: "1–3", unit: "1–3 writes", match: []int{3}, miss: []int{4}},
		{name: "negative", yaml: "-1", wantErr: "want a count of at least 0, got -1"},
		{name: "fraction", yaml: "1.5", wantErr: "want a count of at least 0, got 1.5"},
		{name: "word", yaml: "three", wantErr: `want a whole number or bounds such as {min: 1, max: 3}, got "three"`},
		{name: "list", yaml: "[1, 2]", wantErr: "want a whole number or bounds such as {min: 1, max: 3}, got a list"},
		{name: "no bound", yaml: "{}", wantErr: "want min, max or both (or at_least, at_most), got {}"},
		{name: "unknown bound", yaml: "{max: 1, most: 2}", wantBound: "most", wantErr: `unknown bound "most"; want min, max, at_least or at_most`},
		{name: "negative bound", yaml: "{max: -1}", wantBound: "max", wantErr: "max: want a whole number of at least 0, got -1"},
		{name: "min above max", yaml: "{min: 3, max: 1}", wantBound: "min", wantErr: "min 3 is more than max 1"},
		{name: "min above at_most", yaml: "{at_least: 3, at_most: 1}", wantBound: "at_least", wantErr: "at_least 3 is more than at_most 1"},
		{name: "a bound twice", yaml: "{max: 1, at_most: 2}", wantBound: "max", wantErr: "at_most and max are the same bound; set one"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var v struct {
				Writes *Count `yaml:"writes"`
			}
			err := yaml.Unmarshal([]byte("writes: "+tt.yaml), &v)
			if tt.wantErr != "" {
				var ce *CountError
				if !errors.As(err, &ce) {
					t.Fatalf("error %v (%T), want a *CountError", err, err)
				}
				if ce.Msg != tt.wantErr || ce.Bound != tt.wantBound {
					t.Errorf("error (-want +got):\n-%q at %q\n+%q at %q", tt.wantErr, tt.wantBound, ce.Msg, ce.Bound)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			c := *v.Writes
			if got := c.String(); got != tt.want {
				t.Errorf("String (-want +got):\n-%s\n+%s", tt.want, got)
			}
			if got := c.Describe("write"); got != tt.unit {
				t.Errorf("Describe (-want +got):\n-%s\n+%s", tt.unit, got)
			}
			for _, n := range tt.match {
				if !c.Match(n) {
					t.Errorf("Match(%d) = false, want true", n)
				}
			}
			for _, n := range tt.miss {
				if c.Match(n) {
					t.Errorf("Match(%d) = true, want false", n)
				}
			}
			b, err := json.Marshal(c)
			if err != nil {
				t.Fatal(err)
			}
			var back Count
			if err := json.Unmarshal(b, &back); err != nil || back.String() != tt.want {
				t.Errorf("JSON round trip of %s: %v, %v", b, back, err)
			}
		})
	}
}

func TestExpectFor(t *testing.T) {
	e := Expect{
		Counts: Counts{
			Writes:   Exactly(1),
			Upstream: map[wire.CountKey]Count{{Kind: wire.KindInitial}: *atLeast(1), {Kind: wire.KindFollowUp}: *atLeast(1)},
			MCP:      &MCPExpect{Calls: &CallCount{PerTool: map[string]Count{"commit_write": *Exactly(1)}}},
		},
		Targets: map[string]Counts{
			"builtin:*":       {Status: ptr(500), Upstream: map[wire.CountKey]Count{{Kind: wire.KindInitial}: *Exactly(1), {Kind: wire.KindFollowUp, Outcome: wire.Injected(500)}: *Exactly(1)}},
			"builtin:naive":   {Writes: Exactly(3)},
			"litellm":         {Upstream: map[wire.CountKey]Count{{Kind: wire.KindInitial}: *between(1, 2)}, MCP: &MCPExpect{Calls: &CallCount{Total: *Exactly(2)}}},
			"agent":           {MCP: &MCPExpect{UnknownToolCalls: Exactly(0)}},
			"builtin:[broken": {Writes: Exactly(9)},
		},
	}
	tests := []struct {
		name   string
		target string
		want   Counts
	}{
		{"no pattern matches", "claude", e.Counts},
		{"mcp.unknown_tool_calls is laid over mcp.calls", "agent", Counts{
			Writes: Exactly(1), Upstream: e.Upstream,
			MCP: &MCPExpect{Calls: e.MCP.Calls, UnknownToolCalls: Exactly(0)},
		}},
		{"builtin:* lays its counts over the general ones, key by key", "builtin:guarded", Counts{
			Status: ptr(500), Writes: Exactly(1), MCP: e.MCP,
			Upstream: map[wire.CountKey]Count{{Kind: wire.KindInitial}: *Exactly(1), {Kind: wire.KindFollowUp}: *atLeast(1), {Kind: wire.KindFollowUp, Outcome: wire.Injected(500)}: *Exactly(1)},
		}},
		{"a later pattern wins", "builtin:naive", Counts{
			Status: ptr(500), Writes: Exactly(3), MCP: e.MCP,
			Upstream: map[wire.CountKey]Count{{Kind: wire.KindInitial}: *Exactly(1), {Kind: wire.KindFollowUp}: *atLeast(1), {Kind: wire.KindFollowUp, Outcome: wire.Injected(500)}: *Exactly(1)},
		}},
		{"mcp calls are replaced as a whole", "litellm", Counts{
			Writes: Exactly(1), MCP: &MCPExpect{Calls: &CallCount{Total: *Exactly(2)}},
			Upstream: map[wire.CountKey]Count{{Kind: wire.KindInitial}: *between(1, 2), {Kind: wire.KindFollowUp}: *atLeast(1)},
		}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if diff := cmp.Diff(tt.want, e.For(tt.target)); diff != "" {
				t.Errorf("For(%q) (-want +got):\n%s", tt.target, diff)
			}
		})
	}
	if got := e.Upstream[wire.CountKey{Kind: wire.KindInitial}]; got.String() != "at least 1" {
		t.Errorf("For changed the general counts: initial is %s", got)
	}
}

func TestExpectJSONRoundTrip(t *testing.T) {
	src := "writes: {max: 1}\nupstream: {initial: {min: 1}, follow_up: 2}\nrules: [no-replay-after-dispatch]\n" +
		"targets: {\"builtin:*\": {status: 500, upstream: {initial: 1}}}\n"
	var e Expect
	if err := yaml.UnmarshalWithOptions([]byte(src), &e, yaml.Strict(), yaml.DisallowUnknownField()); err != nil {
		t.Fatal(err)
	}
	b, err := json.Marshal(e)
	if err != nil {
		t.Fatal(err)
	}
	const want = `{"writes":{"max":1},"upstream":{"follow_up":2,"initial":{"min":1}},"rules":["no-replay-after-dispatch"],"targets":{"builtin:*":{"status":500,"upstream":{"initial":1}}}}`
	if string(b) != want {
		t.Errorf("JSON (-want +got):\n-%s\n+%s", want, b)
	}
	var back Expect
	if err := json.Unmarshal(b, &back); err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff(e, back); diff != "" {
		t.Errorf("round trip (-want +got):\n%s", diff)
	}
}

// atLeast returns a Count of n or more.
func atLeast(n int) *Count { return &Count{Min: n} }

// between returns a Count from min to max, both included.
func between(min, max int) *Count { return &Count{Min: min, Max: &max} }
