package matrix

import (
	"context"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/replaycheck/replaycheck/internal/harness/target"
)

// builtins are the built-in gateways as agents.
func builtins(t *testing.T) []Agent {
	t.Helper()
	var out []Agent
	for _, name := range []string{"builtin:guarded", "builtin:naive"} {
		tg, err := target.ParseTarget(name)
		if err != nil {
			t.Fatal(err)
		}
		out = append(out, Agent{Target: tg})
	}
	return out
}

// verdicts are a matrix's cells as "TARGET MECHANISM" → verdict.
func verdicts(m *Matrix) map[string]Verdict {
	out := map[string]Verdict{}
	for _, r := range m.Rows {
		for _, c := range r.Cells {
			out[r.Target+" "+c.Mechanism] = c.Verdict
		}
	}
	return out
}

// testKinds are a mechanism of each family: a status (decided by the
// fingerprint), a stream cut, an MCP drop after and a refusal before the
// write, and a stdio server's death after it.
var testKinds = []string{"500", "drop", "mcp-drop", "mcp-fail", "stdio-exit-after"}

func TestMatrixSameAtParallelOne(t *testing.T) {
	ctx := context.Background()
	def, err := Build(ctx, builtins(t), Options{Kinds: testKinds})
	if err != nil {
		t.Fatal(err)
	}
	one, err := Build(ctx, builtins(t), Options{Kinds: testKinds, Parallel: 1})
	if err != nil {
		t.Fatal(err)
	}
	got := verdicts(def)
	if diff := cmp.Diff(verdicts(one), got); diff != "" {
		t.Errorf("cells at --parallel 1 (-) and at the default (+) differ:\n%s", diff)
	}
	// The seed's mechanism duplicates on naive and not on guarded; every
	// guarded cell is safe or unknown with a reason.
	want := map[string]Verdict{
		"builtin:naive 500": Duplicate, "builtin:naive drop": Duplicate, "builtin:naive mcp-drop": Duplicate, "builtin:naive stdio-exit-after": Duplicate,
		"builtin:guarded 500": Safe, "builtin:guarded drop": Safe, "builtin:guarded mcp-drop": Safe, "builtin:guarded stdio-exit-after": Safe,
	}
	for k, v := range want {
		if got[k] != v {
			t.Errorf("%s: %q, want %q", k, got[k], v)
		}
	}
	for _, r := range def.Rows {
		for _, c := range r.Cells {
			if r.Target == "builtin:guarded" && c.Verdict == Unknown && c.Reason == "" {
				t.Errorf("guarded %s: unknown without a reason", c.Mechanism)
			}
			if c.Verdict == Duplicate && c.DecidedBy == "" {
				t.Errorf("%s %s: decided by no sweep", r.Target, c.Mechanism)
			}
		}
		if c, _ := r.Cell("500"); c.DecidedBy != "fingerprint" {
			t.Errorf("%s 500 decided by %q, want the fingerprint", r.Target, c.DecidedBy)
		}
		if c, _ := r.Cell("drop"); c.DecidedBy != "sweep" {
			t.Errorf("%s drop decided by %q, want the sweep", r.Target, c.DecidedBy)
		}
	}
}

func TestMatrixDiff(t *testing.T) {
	row := func(version string, v500, vdrop Verdict) Row {
		return Row{Target: "agent", Version: version, Cells: []Cell{{Mechanism: "500", Verdict: v500}, {Mechanism: "drop", Verdict: vdrop}}}
	}
	tests := []struct {
		name      string
		old, new  Row
		want      []Change
		wantWorse int
	}{
		{"same", row("1", Safe, Safe), row("2", Safe, Safe), nil, 0},
		{"turned duplicate", row("1", Safe, Safe), row("2", Duplicate, Safe),
			[]Change{{Target: "agent", Mechanism: "500", OldVersion: "1", NewVersion: "2", Old: Safe, New: Duplicate}}, 1},
		{"turned safe", row("1", Safe, Lost), row("2", Safe, Safe),
			[]Change{{Target: "agent", Mechanism: "drop", OldVersion: "1", NewVersion: "2", Old: Lost, New: Safe}}, 0},
		{"lost stays lost", row("1", Lost, Safe), row("2", Lost, Safe), nil, 0},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got := Diff(&Matrix{Rows: []Row{tt.old}}, &Matrix{Rows: []Row{tt.new}})
			if diff := cmp.Diff(tt.want, got); diff != "" {
				t.Errorf("(-want +got)\n%s", diff)
			}
			worse := 0
			for _, c := range got {
				if c.Worse() {
					worse++
				}
			}
			if worse != tt.wantWorse {
				t.Errorf("%d worse, want %d", worse, tt.wantWorse)
			}
		})
	}
}

func TestMatrixMerge(t *testing.T) {
	a := &Matrix{Seed: "s", Rows: []Row{{Target: "a"}}}
	b := &Matrix{Seed: "s", Rows: []Row{{Target: "b"}}}
	m, err := Merge([]string{"1.json", "2.json"}, []*Matrix{a, b})
	if err != nil {
		t.Fatal(err)
	}
	if len(m.Rows) != 2 || m.Rows[0].Target != "a" || m.Rows[1].Target != "b" || m.Kind != KindMatrix {
		t.Errorf("merged %+v", m)
	}
	if _, err := Merge([]string{"1.json", "2.json"}, []*Matrix{a, a}); err == nil || !strings.Contains(err.Error(), "agent a is in 1.json and in 2.json") {
		t.Errorf("merging an agent twice: %v", err)
	}
}
