package matrix

import (
	"context"
	"fmt"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/replaycheck/replaycheck/internal/harness/explore"
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

// created is the time an answer of the fake model says it was made at
// ("created" in chat, "created_at" in responses).
var created = regexp.MustCompile(`"(created|created_at)":\d+`)

// cells are a matrix's cells as "TARGET MECHANISM" → the cell, without
// what differs from run to run (the worst run's history, its run token, the
// time in the answer the user got, and a safe cell's count of runs that
// could not be judged, which a starved harness adds: see rules.starved),
// its reproduction's path within dir (its Options.OutDir) and, unless
// withRuns, its count of runs.
func cells(m *Matrix, dir string, withRuns bool) map[string]Cell {
	out := map[string]Cell{}
	for _, r := range m.Rows {
		for _, c := range r.Cells {
			if c.Verdict == Safe {
				c.Reason = ""
			}
			if h := c.Result.History; h != nil && h.Token != "" {
				c.Reason = strings.ReplaceAll(c.Reason, h.Token, "TOKEN")
				c.ToldModel = strings.ReplaceAll(c.ToldModel, h.Token, "TOKEN")
				c.ToldUser = strings.ReplaceAll(c.ToldUser, h.Token, "TOKEN")
			}
			c.Result = nil
			if c.Reproduction != "" && dir != "" {
				c.Reproduction, _ = filepath.Rel(dir, c.Reproduction)
			}
			c.ToldUser = created.ReplaceAllString(c.ToldUser, `"$1":0`)
			if !withRuns {
				c.Runs = 0
			}
			out[r.Target+" "+c.Mechanism] = c
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
	for _, m := range []*Matrix{def, one} {
		if len(m.Rows) != 2 || m.Rows[0].Target != "builtin:guarded" || m.Rows[1].Target != "builtin:naive" {
			t.Errorf("rows %+v, want the agents' order", shapes(m))
		}
	}
	if diff := cmp.Diff(cells(one, "", true), cells(def, "", true)); diff != "" {
		t.Errorf("cells at --parallel 1 (-) and at the default (+) differ:\n%s", diff)
	}
	if diff := cmp.Diff(shapes(one), shapes(def)); diff != "" {
		t.Errorf("rows at --parallel 1 (-) and at the default (+) differ:\n%s", diff)
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
	cell := func(shard string) *Matrix {
		return &Matrix{Seed: "s", Shard: shard, Rows: []Row{{Target: "a", Cells: []Cell{{Mechanism: "500"}}}}}
	}
	if _, err := Merge([]string{"1.json", "2.json"}, []*Matrix{cell("1/2"), cell("2/2")}); err == nil || !strings.Contains(err.Error(), "agent a's 500 cell is in 1.json and in 2.json") {
		t.Errorf("merging an agent twice: %v", err)
	}
}

// TestMatrixMergeChecksShards: sharded parts merge only as the shards 1..N
// of one matrix, each once; the missing ones are named with the parts
// given. Whole matrices of disjoint agents still merge.
func TestMatrixMergeChecksShards(t *testing.T) {
	part := func(shard, seed string, kinds ...string) *Matrix {
		return &Matrix{Seed: seed, Shard: shard, Kinds: kinds, Rows: []Row{{Target: "agent " + shard}}}
	}
	tests := []struct {
		name    string
		parts   []*Matrix
		wantErr string
	}{
		{name: "every shard once", parts: []*Matrix{part("2/2", "s", "500"), part("1/2", "s", "500")}},
		{name: "whole matrices", parts: []*Matrix{part("", "s"), {Seed: "t", Rows: []Row{{Target: "b"}}}}},
		{name: "one shard missing", parts: []*Matrix{part("1/3", "s"), part("3/3", "s")},
			wantErr: "shard 2 of 3 is missing: the parts given are 1.json, 2.json"},
		{name: "two shards missing", parts: []*Matrix{part("2/3", "s")},
			wantErr: "shards 1, 3 of 3 are missing: the parts given are 1.json"},
		{name: "a part twice", parts: []*Matrix{part("1/2", "s"), part("2/2", "s"), part("1/2", "s")},
			wantErr: "shard 1/2 is in 1.json and in 3.json"},
		{name: "different N", parts: []*Matrix{part("1/2", "s"), part("2/3", "s")},
			wantErr: "1.json is shard 1/2 and 2.json shard 2/3"},
		{name: "different seeds", parts: []*Matrix{part("1/2", "s"), part("2/2", "t")},
			wantErr: `1.json was built with seed "s" and 2.json with "t"`},
		{name: "different kinds", parts: []*Matrix{part("1/2", "s", "500", "drop"), part("2/2", "s", "drop", "500")},
			wantErr: "1.json swept the kinds 500,drop and 2.json drop,500"},
		{name: "different agents", parts: []*Matrix{{Seed: "s", Shard: "1/2", Agents: []string{"a"}}, {Seed: "s", Shard: "2/2", Agents: []string{"a", "b"}}},
			wantErr: "1.json swept the agents a and 2.json a,b: merge the parts of one matrix, built with one list of targets in one order"},
		{name: "a whole matrix among shards", parts: []*Matrix{part("1/1", "s"), part("", "s")},
			wantErr: "2.json is a whole matrix and 1.json shard 1/1"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var names []string
			for i := range tt.parts {
				names = append(names, fmt.Sprintf("%d.json", i+1))
			}
			_, err := Merge(names, tt.parts)
			if tt.wantErr == "" && err != nil || tt.wantErr != "" && (err == nil || !strings.Contains(err.Error(), tt.wantErr)) {
				t.Errorf("Merge: %v, want %q", err, tt.wantErr)
			}
		})
	}
}

// TestMoveReproductions: a part's cells whose reproductions lie under its
// reproductions directory point at the same files under the merged one, a
// shard's under shard-I-of-N; each file is copied once, from where the
// directory is now; a client scenario's file is left as it is.
func TestMoveReproductions(t *testing.T) {
	m := &Matrix{Shard: "2/3", Reproductions: "ci/matrix-reproductions", Rows: []Row{{Target: "a", Cells: []Cell{
		{Mechanism: "500", Reproduction: "ci/matrix-reproductions/a/fingerprint/follow-up-500.yaml"},
		{Mechanism: "502", Reproduction: "ci/matrix-reproductions/a/fingerprint/follow-up-500.yaml"},
		{Mechanism: "drop"},
		{Mechanism: "follow-up-500-always", Reproduction: "scenarios/clients/follow-up-500-always.yaml"},
	}}}}
	copies := m.MoveReproductions("shard-2/matrix-reproductions", "merged/matrix-reproductions")
	want := []Copy{{From: "shard-2/matrix-reproductions/a/fingerprint/follow-up-500.yaml", To: "merged/matrix-reproductions/shard-2-of-3/a/fingerprint/follow-up-500.yaml"}}
	if diff := cmp.Diff(want, copies); diff != "" {
		t.Errorf("copies (-want +got):\n%s", diff)
	}
	var got []string
	for _, c := range m.Rows[0].Cells {
		got = append(got, c.Reproduction)
	}
	wantPaths := []string{want[0].To, want[0].To, "", "scenarios/clients/follow-up-500-always.yaml"}
	if diff := cmp.Diff(wantPaths, got); diff != "" {
		t.Errorf("reproductions (-want +got):\n%s", diff)
	}
	if m.Reproductions != "merged/matrix-reproductions/shard-2-of-3" {
		t.Errorf("Reproductions %q", m.Reproductions)
	}
}

// rowShape is what a row says of its cells, whoever built it: each cell's
// mechanism, verdict and sweep, in order, and what was pruned.
type rowShape struct {
	Target     string
	Cells      []string
	Pruned     []Pruned
	PrunedRuns []PrunedRuns
}

func shapes(m *Matrix) []rowShape {
	var out []rowShape
	for _, r := range m.Rows {
		s := rowShape{Target: r.Target, Pruned: r.Pruned, PrunedRuns: r.PrunedRuns}
		for _, c := range r.Cells {
			s.Cells = append(s.Cells, c.Mechanism+" "+string(c.Verdict)+" by "+c.DecidedBy)
		}
		out = append(out, s)
	}
	return out
}

// TestMatrixPrunes: the matrix leaves out runs that cannot change a cell,
// says so in the row, and its cells are those of the sweep that makes them
// all (--no-prune), cell for cell, reproductions included, each cell's runs
// and those left out of it adding up to the runs without pruning. The
// guarded gateway never retries a failed follow-up (its fingerprint shows
// one attempt under each status), so a cut on every attempt of its
// follow-ups is left out; on the naive one, a mechanism's runs after its
// first DUPLICATE are.
func TestMatrixPrunes(t *testing.T) {
	ctx := context.Background()
	kinds := []string{"500", "drop", "mcp-drop"}
	prunedDir, allDir := t.TempDir(), t.TempDir()
	last := map[string]explore.Progress{} // each agent's sweep's, by phase
	pruned, err := Build(ctx, builtins(t), Options{Kinds: kinds, OutDir: prunedDir, OnProgress: func(p Progress) {
		last[p.Target+" "+p.Step+" "+p.Phase] = p.Progress
	}})
	if err != nil {
		t.Fatal(err)
	}
	// The runs left out count as done: no sweep stops short of its end.
	for what, p := range last {
		if p.Done != p.Total {
			t.Errorf("%s: the last progress says %d of %d runs done", what, p.Done, p.Total)
		}
	}
	all, err := Build(ctx, builtins(t), Options{Kinds: kinds, NoPrune: true, OutDir: allDir})
	if err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff(cells(all, allDir, false), cells(pruned, prunedDir, false)); diff != "" {
		t.Errorf("cells without pruning (-) and with (+) differ:\n%s", diff)
	}
	// Only the findings a cell shows are confirmed, so only they are
	// written.
	written, err := filepath.Glob(filepath.Join(prunedDir, "*", "*", "*.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	var shown []string
	for _, c := range cells(pruned, "", false) {
		if c.Reproduction != "" {
			shown = append(shown, c.Reproduction)
		}
	}
	slices.Sort(shown)
	if diff := cmp.Diff(slices.Compact(shown), written); diff != "" {
		t.Errorf("reproductions the cells show (-) and written (+) differ:\n%s", diff)
	}
	for i, r := range pruned.Rows {
		if len(all.Rows[i].PrunedRuns) != 0 {
			t.Errorf("%s: --no-prune pruned %+v", r.Target, all.Rows[i].PrunedRuns)
		}
		for _, c := range r.Cells {
			left := 0
			for _, p := range r.PrunedRuns {
				if p.Mechanism == c.Mechanism {
					left += p.Runs
				}
			}
			if whole, _ := all.Rows[i].Cell(c.Mechanism); c.Runs+left != whole.Runs {
				t.Errorf("%s %s: %d runs and %d left out, want the %d of the sweep without pruning", r.Target, c.Mechanism, c.Runs, left, whole.Runs)
			}
		}
		var why []string
		for _, p := range r.PrunedRuns {
			why = append(why, p.Mechanism+": "+p.Reason)
		}
		want := "drop: on every attempt of a follow_up chat stream"
		if r.Target == "builtin:naive" {
			want = "drop: after its first DUPLICATE"
		}
		if !slices.ContainsFunc(why, func(s string) bool { return strings.HasPrefix(s, want) }) {
			t.Errorf("%s pruned %q, want %q", r.Target, why, want+"…")
		}
	}
}

// TestMatrixShardsByCell: two shards of one agent each build half its
// cells, and their merge is the matrix built whole, cell for cell.
func TestMatrixShardsByCell(t *testing.T) {
	ctx := context.Background()
	naive := builtins(t)[1:]
	kinds := []string{"500", "drop", "mcp-drop", "mcp-fail"}
	whole, err := Build(ctx, naive, Options{Kinds: kinds})
	if err != nil {
		t.Fatal(err)
	}
	var parts []*Matrix
	for i := 1; i <= 2; i++ {
		part, err := Build(ctx, naive, Options{Kinds: kinds, Shard: i, Shards: 2})
		if err != nil {
			t.Fatal(err)
		}
		if len(part.Rows) != 1 || len(part.Rows[0].Cells) != 2 {
			t.Fatalf("shard %d/2 built %+v, want 2 cells of the one agent", i, shapes(part))
		}
		if !slices.Equal(part.Kinds, kinds) || part.Shard != fmt.Sprintf("%d/2", i) || !slices.Equal(part.Agents, []string{"builtin:naive"}) {
			t.Errorf("shard %d/2 records shard %q, kinds %v and agents %v, want its shard, %v and builtin:naive (merge checks them)", i, part.Shard, part.Kinds, part.Agents, kinds)
		}
		parts = append(parts, part)
	}
	merged, err := Merge([]string{"1.json", "2.json"}, parts)
	if err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff(shapes(whole), shapes(merged)); diff != "" {
		t.Errorf("whole (-) and merged shards (+) differ:\n%s", diff)
	}
	if _, err := Merge([]string{"1.json", "1.json"}, []*Matrix{parts[0], parts[0]}); err == nil || !strings.Contains(err.Error(), "shard 1/2 is in 1.json and in 1.json") {
		t.Errorf("merging a shard twice: %v", err)
	}
}

// TestMatrixProgressLeft: the agents run at once at their own paces, so
// the time the matrix has left is the slowest agent's, each at the pace of
// its own cells done (a sweep under way counting for the share of its runs
// made), one that has decided none at the slowest pace; unknown before any
// agent has decided a cell. Over all cells together the fast agent's pace
// would hide the slow one's.
func TestMatrixProgressLeft(t *testing.T) {
	kinds, err := explore.SelectKinds([]string{"500", "drop", "mcp-drop"})
	if err != nil {
		t.Fatal(err)
	}
	agents := append(builtins(t), builtins(t)[1])
	at := time.Unix(0, 0)
	type estimate struct {
		Done       float64
		Wall, Left time.Duration
		LeftKnown  bool
	}
	var got []estimate
	tr := newTracker(agents, shardCells(len(agents), kinds, 0, 0), nil, at, func() time.Time { return at }, func(p Progress) {
		got = append(got, estimate{p.Done, p.Wall, p.Left, p.LeftKnown})
	})
	fast, slow, third := tr.agent(0), tr.agent(1), tr.agent(2)
	at = at.Add(30 * time.Second)
	fast.run("fingerprint", explore.Progress{Phase: "clean", Done: 1, Total: 1})
	at = at.Add(30 * time.Second)
	fast.run("fingerprint", explore.Progress{Phase: "sweep", Done: 4, Total: 4})
	fast.phaseDone("fingerprint")
	at = at.Add(time.Minute)
	fast.run("sweep", explore.Progress{Phase: "sweep", Done: 50, Total: 100})
	slow.run("fingerprint", explore.Progress{Phase: "sweep", Done: 1, Total: 4})
	at = at.Add(time.Minute)
	fast.rowDone(true)
	third.rowDone(false) // its base failed clean: no pace of its own
	at = at.Add(time.Minute)
	slow.run("fingerprint", explore.Progress{Phase: "sweep", Done: 4, Total: 4})
	want := []estimate{
		{Done: 0, Wall: 30 * time.Second},
		// fast, first reporting at 30s: 1 cell in 30s, 2 left; slow and
		// third: none yet, 3 left each at the only pace there is.
		{Done: 1, Wall: time.Minute, Left: 90 * time.Second, LeftKnown: true},
		// fast: 2 cells in 90s, 1 left; the others still at its pace, 45s.
		{Done: 2, Wall: 2 * time.Minute, Left: 135 * time.Second, LeftKnown: true},
		// slow reports first at 2m: no time of its own yet, so it goes at
		// the slowest pace seen, as third does (3 cells left at 45s).
		{Done: 2.25, Wall: 2 * time.Minute, Left: 135 * time.Second, LeftKnown: true},
		// fast and third ended; slow: 1 cell in the 2m since it first
		// reported (not the 4m since the matrix began), 2 left.
		{Done: 7, Wall: 4 * time.Minute, Left: 4 * time.Minute, LeftKnown: true},
	}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("(-want +got)\n%s", diff)
	}
}

// TestMatrixProgressScenarios: a client target's scenario columns are cells
// of its row, left until its client scenarios have run, which the sweeps
// do not decide.
func TestMatrixProgressScenarios(t *testing.T) {
	kinds, err := explore.SelectKinds([]string{"500"})
	if err != nil {
		t.Fatal(err)
	}
	agents := builtins(t)[:1]
	at := time.Unix(0, 0)
	var got []Progress
	tr := newTracker(agents, shardCells(1, kinds, 0, 0), []int{2}, at, func() time.Time { return at }, func(p Progress) { got = append(got, p) })
	a := tr.agent(0)
	at = at.Add(time.Minute)
	a.run("fingerprint", explore.Progress{Phase: "confirm", Done: 1, Total: 1})
	a.phaseDone("fingerprint")
	at = at.Add(time.Minute)
	a.run("scenarios", explore.Progress{Phase: scenariosPhase, Done: 1, Total: 4})
	type estimate struct {
		Cells     int
		Done      float64
		Left      time.Duration
		LeftKnown bool
	}
	var gotE []estimate
	for _, p := range got {
		gotE = append(gotE, estimate{p.Cells, p.Done, p.Left, p.LeftKnown})
	}
	want := []estimate{
		// The fingerprint's cell in the agent's first report: no time of
		// its own yet, no pace; the 2 scenario cells left.
		{Cells: 3, Done: 1, LeftKnown: false},
		// A quarter of the scenarios' runs: 1.5 cells in the 1m since
		// its first report, 1.5 left.
		{Cells: 3, Done: 1.5, Left: time.Minute, LeftKnown: true},
	}
	if diff := cmp.Diff(want, gotE); diff != "" {
		t.Errorf("(-want +got)\n%s", diff)
	}
}

// TestMatrixPrunesInnerCuts: of a streamed answer's cuts after an unnamed
// event, the matrix makes the first and the last of each region only (see
// innerCut), says so in the row, and its cells are those of the sweep that
// makes every cut (--no-prune), cell for cell, with fewer runs.
func TestMatrixPrunesInnerCuts(t *testing.T) {
	ctx := context.Background()
	kinds := []string{"drop", "stream-error", "truncate"}
	prunedDir, allDir := t.TempDir(), t.TempDir()
	pruned, err := Build(ctx, builtins(t), Options{Kinds: kinds, OutDir: prunedDir})
	if err != nil {
		t.Fatal(err)
	}
	all, err := Build(ctx, builtins(t), Options{Kinds: kinds, NoPrune: true, OutDir: allDir})
	if err != nil {
		t.Fatal(err)
	}
	// A reproduction's file is named after the first kind of its finding's
	// group, and which kinds' findings are confirmed and written depends on
	// the pruning (see shownFindings): the cells must have one alike.
	reproduced := func(m *Matrix, dir string) map[string]Cell {
		out := cells(m, dir, false)
		for k, c := range out {
			c.Reproduction = strconv.FormatBool(c.Reproduction != "")
			out[k] = c
		}
		return out
	}
	if diff := cmp.Diff(reproduced(all, allDir), reproduced(pruned, prunedDir)); diff != "" {
		t.Errorf("cells without pruning (-) and with (+) differ:\n%s", diff)
	}
	for i, r := range pruned.Rows {
		t.Logf("%s: %d runs pruned, %d without pruning", r.Target, r.Runs, all.Rows[i].Runs)
		if r.Runs >= all.Rows[i].Runs {
			t.Errorf("%s: %d runs pruned, want fewer than the %d without pruning", r.Target, r.Runs, all.Rows[i].Runs)
		}
		for _, mechanism := range []string{"drop", "stream-error"} {
			if !slices.ContainsFunc(r.PrunedRuns, func(p PrunedRuns) bool {
				return p.Mechanism == mechanism && p.Runs > 0 && strings.HasPrefix(p.Reason, "a cut after event k of N")
			}) {
				t.Errorf("%s pruned %+v, want %s's cuts inside a region of an answer", r.Target, r.PrunedRuns, mechanism)
			}
		}
	}
}

// TestMatrixPrunesSessionKinds: the built-in gateways call tools on MCP
// 2026-07-28, without a session, so the kinds that expire a call's session
// are not their cells (they would stay armed and unfired: unknown) but
// pruned, saying why; mcp-drop is swept as before.
func TestMatrixPrunesSessionKinds(t *testing.T) {
	m, err := Build(context.Background(), builtins(t), Options{Kinds: []string{"mcp-drop", "mcp-expire", "mcp-expire-after"}})
	if err != nil {
		t.Fatal(err)
	}
	for _, r := range m.Rows {
		var cells []string
		for _, c := range r.Cells {
			cells = append(cells, c.Mechanism)
		}
		if !slices.Equal(cells, []string{"mcp-drop"}) {
			t.Errorf("%s: cells %q, want mcp-drop only", r.Target, cells)
		}
		want := []Pruned{
			{Mechanism: "mcp-expire", Reason: "the agent's tools/calls carry no MCP session to act on: MCP 2026-07-28 requests stand alone"},
			{Mechanism: "mcp-expire-after", Reason: "the agent's tools/calls carry no MCP session to act on: MCP 2026-07-28 requests stand alone"},
		}
		if diff := cmp.Diff(want, r.Pruned); diff != "" {
			t.Errorf("%s: pruned (-want +got):\n%s", r.Target, diff)
		}
	}
}

// TestMatrixProgressSliver: an agent that has made a sliver of its sweep in
// a long time (its runs admitted one by one beside the others') has no pace
// of its own until it has decided a whole cell; it goes at the slowest
// pace of those that have, instead of its sliver's (hours, for a matrix of
// minutes).
func TestMatrixProgressSliver(t *testing.T) {
	kinds, err := explore.SelectKinds([]string{"500", "drop", "mcp-drop"})
	if err != nil {
		t.Fatal(err)
	}
	at := time.Unix(0, 0)
	var last Progress
	tr := newTracker(builtins(t), shardCells(2, kinds, 0, 0), nil, at, func() time.Time { return at }, func(p Progress) { last = p })
	paced, sliver := tr.agent(0), tr.agent(1)
	sliver.run("fingerprint", explore.Progress{Phase: "clean", Done: 1, Total: 1})
	paced.run("fingerprint", explore.Progress{Phase: "clean", Done: 1, Total: 1})
	at = at.Add(time.Minute)
	paced.run("fingerprint", explore.Progress{Phase: "sweep", Done: 4, Total: 4}) // 1 cell in 1m
	at = at.Add(time.Minute)
	sliver.run("fingerprint", explore.Progress{Phase: "sweep", Done: 1, Total: 100}) // 0.01 cell in 2m
	// At 2m, paced: 1 cell in 2m, 2 left; sliver: 2.99 left at paced's 2m a
	// cell (5m58.8s), not at its own 200m a cell (9h58m).
	if want := time.Duration(2.99 * float64(2*time.Minute)); !last.LeftKnown || last.Left != want {
		t.Errorf("left %s (known %t), want %s", last.Left, last.LeftKnown, want)
	}
}
