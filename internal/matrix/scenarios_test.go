package matrix

import (
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/replaycheck/replaycheck/internal/harness/target"
	"github.com/replaycheck/replaycheck/internal/harness/targetfile"
)

// exampleAgents loads targets/agent.yaml and agent-naive.yaml on a build of
// examples/agent.
func exampleAgents(t *testing.T) []target.Target {
	t.Helper()
	bin := filepath.Join(t.TempDir(), "agent")
	if out, err := exec.Command("go", "build", "-o", bin, "../../examples/agent").CombinedOutput(); err != nil {
		t.Fatalf("building examples/agent: %v\n%s", err, out)
	}
	getenv := func(k string) string {
		if k == "REPLAYCHECK_AGENT" {
			return bin
		}
		return os.Getenv(k)
	}
	var out []target.Target
	for _, f := range []string{"agent.yaml", "agent-naive.yaml"} {
		tg, err := targetfile.Load(filepath.Join("../../targets", f), targetfile.Options{Getenv: getenv})
		if err != nil {
			t.Fatal(err)
		}
		out = append(out, tg)
	}
	return out
}

// TestClientScenarioCells runs the shipped client scenarios on the example
// agent and on its naive wrapper (which runs the whole tool loop again on
// an error): each scenario is a cell, safe on the agent, DUPLICATE on the
// wrapper where a write ran before the error (as TestAgentTargets in
// targets/ counts them), with the scenario file as its reproduction.
func TestClientScenarioCells(t *testing.T) {
	ss, err := ClientScenarios()
	if err != nil {
		t.Fatal(err)
	}
	if len(ss) != 10 {
		t.Fatalf("%d client scenarios, want the 10 of scenarios/clients", len(ss))
	}
	naiveDup := map[string]bool{
		"client follow-up 500 always": true, "client mcp session expired after the call ran": true,
		"client mcp 2026-07-28 response stream cut after its headers": true,
		"client mcp 2026-07-28 stream broken after execute":           true, "client mcp 2025-11-25 stream broken after execute": true,
	}
	want, got := map[string]Verdict{}, map[string]Verdict{}
	for _, tg := range exampleAgents(t) {
		for _, s := range ss {
			want[tg.Name()+" "+s.Name] = Safe
			if tg.Name() == "agent-naive" && naiveDup[s.Name] {
				want[tg.Name()+" "+s.Name] = Duplicate
			}
		}
		cells, pruned, runs, err := scenarioCells(context.Background(), tg, ss, Options{Seed: "replaycheck", Timeout: 60 * time.Second}, nil, nil)
		if err != nil {
			t.Fatal(err)
		}
		if len(pruned) != 0 || runs != len(ss) {
			t.Errorf("%s: %d runs, pruned %v; want %d runs, none pruned", tg.Name(), runs, pruned, len(ss))
		}
		for _, c := range cells {
			got[tg.Name()+" "+c.Mechanism] = c.Verdict
			if c.Family != FamilyClient || c.DecidedBy != "scenario" || c.Runs != 1 || c.Result == nil || c.ToldUser == "" {
				t.Errorf("%s %s: %+v", tg.Name(), c.Mechanism, c)
			}
			if c.Mechanism == "client follow-up 500 always" && c.Verdict == Duplicate &&
				(c.Reproduction != "scenarios/clients/follow-up-500-always.yaml" || c.Writes != 3 || c.LogicalCalls != 1) {
				t.Errorf("%s %s: reproduction %q, %d writes for %d calls; want the scenario's file, 3 for 1", tg.Name(), c.Mechanism, c.Reproduction, c.Writes, c.LogicalCalls)
			}
			if c.Verdict == Safe && c.Reproduction != "" {
				t.Errorf("%s %s: safe with a reproduction %q", tg.Name(), c.Mechanism, c.Reproduction)
			}
		}
	}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("client scenario cells (-want +got):\n%s", diff)
	}
}

// TestClientScenariosPrunedOnGateways: a client scenario is no column of a
// gateway; each is in Pruned with why, and nothing runs.
func TestClientScenariosPrunedOnGateways(t *testing.T) {
	ss, err := ClientScenarios()
	if err != nil {
		t.Fatal(err)
	}
	for _, a := range builtins(t) {
		cells, pruned, runs, err := scenarioCells(context.Background(), a.Target, ss, Options{}, nil, nil)
		if err != nil {
			t.Fatal(err)
		}
		if len(cells) != 0 || runs != 0 || len(pruned) != len(ss) {
			t.Fatalf("%s: %d cells, %d runs, %d pruned; want none, none, %d", a.Target.Name(), len(cells), runs, len(pruned), len(ss))
		}
		for _, p := range pruned {
			if p.Reason != "a client scenario: it runs an agent's own command, which a proxy or gateway target has not" {
				t.Errorf("%s %s pruned: %q", a.Target.Name(), p.Mechanism, p.Reason)
			}
		}
		// Build's row: pruned with every mechanism, and not at all when
		// only some fault kinds were asked for.
		for _, tt := range []struct {
			kinds      []string
			wantPruned int
		}{{nil, len(ss)}, {[]string{"500"}, 0}} {
			cells, pruned, _, err := clientColumns(context.Background(), a.Target, Options{Kinds: tt.kinds}, true, nil, nil)
			if err != nil {
				t.Fatal(err)
			}
			if len(cells) != 0 || len(pruned) != tt.wantPruned {
				t.Errorf("%s with kinds %v: %d cells, %d pruned; want none, %d", a.Target.Name(), tt.kinds, len(cells), len(pruned), tt.wantPruned)
			}
		}
	}
}

// TestKillKindsNotResumable: on a target that cannot be resumed the kill
// kinds are pruned for that reason, not for want of a point; on one that
// can, the reason stays.
func TestKillKindsNotResumable(t *testing.T) {
	agent := exampleAgents(t)[0]
	guarded := builtins(t)[0].Target
	for _, tt := range []struct {
		name string
		t    target.Target
		want string
	}{
		{"agent", agent, notResumable},
		{"builtin:guarded", guarded, "no point"},
	} {
		t.Run(tt.name, func(t *testing.T) {
			ps := []Pruned{{Mechanism: "kill-after-execute", Reason: "no point"}, {Mechanism: "drop", Reason: "no point"}}
			resumeReasons(tt.t, ps)
			want := []Pruned{{Mechanism: "kill-after-execute", Reason: tt.want}, {Mechanism: "drop", Reason: "no point"}}
			if diff := cmp.Diff(want, ps); diff != "" {
				t.Errorf("(-want +got)\n%s", diff)
			}
		})
	}
}
