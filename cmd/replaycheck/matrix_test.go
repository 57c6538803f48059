package main

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/replaycheck/replaycheck/internal/harness/explore"
	"github.com/replaycheck/replaycheck/internal/harness/target"
	"github.com/replaycheck/replaycheck/internal/matrix"
)

// gatewayTarget writes a target file of kind proxy named gw on `replaycheck
// gateway --mode naive` with retries router retries, and returns its path.
// replaycheck is this test binary, on PATH by TestMain.
func gatewayTarget(t *testing.T, dir string, retries int) string {
	t.Helper()
	path := filepath.Join(dir, fmt.Sprintf("gw-%d.yaml", retries))
	src := fmt.Sprintf(`kind: proxy
name: gw
url: http://127.0.0.1:{{port}}
start:
  command: [replaycheck, gateway, "--addr=127.0.0.1:{{port}}", "--upstream={{upstream_url}}", "--mcp={{mcp_url}}", --mode=naive, --num-retries=%d]
  ready: {url: "http://127.0.0.1:{{port}}/", timeout: 20s}
`, retries)
	if err := os.WriteFile(path, []byte(src), 0o644); err != nil {
		t.Fatal(err)
	}
	return path
}

// TestMatrixDiffNamesRetryChange builds the matrix of a naive gateway
// without router retries, then with them (saved and diffed at once), then
// without them again against the second.
func TestMatrixDiffNamesRetryChange(t *testing.T) {
	dir := t.TempDir()
	none, two := gatewayTarget(t, dir, 0), gatewayTarget(t, dir, 2)
	saved := filepath.Join(dir, "none.json")
	if code, out, errOut := execute(t, "matrix", none, "--kinds", "500,mcp-drop", "--json", saved); code != exitOK {
		t.Fatalf("matrix: exit %d\n%s%s", code, out, errOut)
	}
	// Router retries on: the follow-up's 500 re-runs the tool, which fails
	// the job; the matrix is saved all the same.
	savedTwo := filepath.Join(dir, "two.json")
	code, out, errOut := execute(t, "matrix", two, "--kinds", "500,mcp-drop", "--json", savedTwo, "--diff", saved)
	if code != exitRuleBroken || !strings.Contains(out, "! gw · 500: safe → DUPLICATE") || strings.Contains(out, "gw · mcp-drop") {
		t.Errorf("diff after turning retries on: exit %d, want 1 naming gw · 500 only\n%s%s", code, out, errOut)
	}
	// And back: a cell that turned safe is reported, and passes.
	code, out, errOut = execute(t, "matrix", none, "--kinds", "500,mcp-drop", "--diff", savedTwo)
	if code != exitOK || !strings.Contains(out, "  gw · 500: DUPLICATE → safe") {
		t.Errorf("diff after turning retries off: exit %d, want 0 naming gw · 500\n%s%s", code, out, errOut)
	}
}

func TestMatrixShardsMerge(t *testing.T) {
	dir := t.TempDir()
	var parts []string
	for i := 1; i <= 2; i++ {
		part := filepath.Join(dir, fmt.Sprintf("part-%d.json", i))
		if code, out, errOut := execute(t, "matrix", "builtin:guarded", "builtin:naive", "--kinds", "500", "--shard", fmt.Sprintf("%d/2", i), "--json", part); code != exitOK {
			t.Fatalf("shard %d: exit %d\n%s%s", i, code, out, errOut)
		}
		parts = append(parts, part)
	}
	md := filepath.Join(dir, "matrix.md")
	code, out, errOut := execute(t, "report", "merge", parts[0], parts[1], "--markdown", md)
	if code != exitOK {
		t.Fatalf("merge: exit %d\n%s%s", code, out, errOut)
	}
	b, err := os.ReadFile(md)
	if err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{"| builtin:guarded | — | safe 1 |", "| builtin:naive | — | **DUPLICATE** 500 |", "2 agents × 1 mechanism: 1 DUPLICATE"} {
		if !strings.Contains(string(b), want) {
			t.Errorf("merged matrix lacks %q:\n%s", want, b)
		}
	}
	if code, _, errOut := execute(t, "report", "merge", parts[0], parts[0]); code != exitBadUsage || !strings.Contains(errOut, "is in "+parts[0]+" and in "+parts[0]) {
		t.Errorf("merging a part twice: exit %d\n%s", code, errOut)
	}
	if code, _, errOut := execute(t, "report", "merge", parts[0]); code != exitBadUsage || !strings.Contains(errOut, "shard 2 of 2 is missing: the parts given are "+parts[0]) {
		t.Errorf("merging shard 1/2 alone: exit %d, want 2 naming shard 2\n%s", code, errOut)
	}

	// The shards' reproductions (both in dir/matrix-reproductions, next to
	// the first report file) are copied into --out, each shard's under its
	// own directory, and the cells name the copies.
	copied := filepath.Join(dir, "copied")
	if code, out, errOut := execute(t, "report", "merge", parts[0], parts[1], "--json", filepath.Join(dir, "copied.json"), "--out", copied); code != exitOK {
		t.Fatalf("merge --out: exit %d\n%s%s", code, out, errOut)
	}
	m, err := readMatrix(filepath.Join(dir, "copied.json"))
	if err != nil {
		t.Fatal(err)
	}
	naive500, _ := m.Rows[1].Cell("500")
	if _, err := os.Stat(naive500.Reproduction); err != nil || !strings.HasPrefix(naive500.Reproduction, filepath.Join(copied, "shard-2-of-2", "builtin-naive")+string(filepath.Separator)) {
		t.Errorf("naive's 500 reproduction %q (%v), want a file under %s/shard-2-of-2/builtin-naive", naive500.Reproduction, err, copied)
	}

	// --diff compares the merged matrix with a saved one, as matrix --diff
	// does: against the guarded gateway's row saved as naive's, naive's 500
	// turned DUPLICATE, which exits 1; the other way it turned safe, and
	// passes.
	old := filepath.Join(dir, "guarded-as-naive.json")
	b, err = os.ReadFile(parts[0])
	if err != nil {
		t.Fatal(err)
	}
	var saved map[string]any
	if err := json.Unmarshal(b, &saved); err != nil {
		t.Fatal(err)
	}
	rows := saved["rows"].([]any)
	rows[0].(map[string]any)["target"] = "builtin:naive"
	saved["shard"] = ""
	b, err = json.Marshal(saved)
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(old, b, 0o644); err != nil {
		t.Fatal(err)
	}
	code, out, errOut = execute(t, "report", "merge", parts[0], parts[1], "--diff", old)
	if code != exitRuleBroken || !strings.Contains(out, "! builtin:naive · 500: safe → DUPLICATE") {
		t.Errorf("merge --diff against a safe naive: exit %d, want 1 naming builtin:naive · 500\n%s%s", code, out, errOut)
	}
	merged := filepath.Join(dir, "matrix.json")
	if code, out, errOut := execute(t, "report", "merge", parts[0], parts[1], "--json", merged); code != exitOK {
		t.Fatalf("merge --json: exit %d\n%s%s", code, out, errOut)
	}
	if code, out, errOut := execute(t, "report", "merge", parts[0], parts[1], "--diff", merged); code != exitOK || strings.Contains(out, "→") {
		t.Errorf("merge --diff against itself: exit %d, want 0 and no change\n%s%s", code, out, errOut)
	}

	// A part whose reproductions are gone is refused, naming it.
	if err := os.RemoveAll(filepath.Join(dir, "matrix-reproductions")); err != nil {
		t.Fatal(err)
	}
	if code, _, errOut := execute(t, "report", "merge", parts[0], parts[1], "--out", copied, "--json", filepath.Join(dir, "gone.json")); code != exitBadUsage || !strings.Contains(errOut, parts[1]+"'s reproductions: open ") {
		t.Errorf("merging parts whose reproductions are gone: exit %d, want 2 naming the part\n%s", code, errOut)
	}
}

// docMatrixKinds are the mechanisms TestMatrixDocUpToDate rebuilds on the
// built-in gateways: one of each family, and between them each verdict and
// each deciding sweep the gateways' rows show — a status (the fingerprint
// decides it), a cut stream, an MCP drop after the write and an expired
// session (unknown), a stdio server's death before (unknown on guarded) and
// after the write, and a kill at the follow-up. The other mechanisms are
// left out: each whole row under -race is minutes of the test binary's time.
var docMatrixKinds = []string{"500", "truncate", "mcp-drop", "mcp-expire", "stdio-exit-before", "stdio-exit-after", "kill-at-follow-up"}

// TestMatrixDocUpToDate rebuilds the built-in gateways' cells of
// docMatrixKinds as make matrix does and compares their verdicts with
// docs/matrix.md's: a verdict its row names, or safe when the agent's
// section lists the mechanism as safe.
func TestMatrixDocUpToDate(t *testing.T) {
	doc, err := os.ReadFile("../../docs/matrix.md")
	if err != nil {
		t.Fatal(err)
	}
	var agents []matrix.Agent
	want := map[string]matrix.Verdict{}
	for _, name := range []string{"builtin:guarded", "builtin:naive"} {
		tg, err := target.ParseTarget(name)
		if err != nil {
			t.Fatal(err)
		}
		agents = append(agents, matrix.Agent{Target: tg})
		verdicts, err := docMatrixVerdicts(string(doc), name)
		if err != nil {
			t.Fatalf("docs/matrix.md: %v: run make matrix", err)
		}
		for _, k := range docMatrixKinds {
			if v, ok := verdicts[k]; ok {
				want[name+" · "+k] = v
			}
		}
	}
	m, err := matrix.Build(context.Background(), agents, matrix.Options{Kinds: docMatrixKinds, Timeout: makeMatrixTimeout(t)})
	if err != nil {
		t.Fatal(err)
	}
	got := map[string]matrix.Verdict{}
	for _, r := range m.Rows {
		for _, c := range r.Cells {
			got[r.Target+" · "+c.Mechanism] = c.Verdict
		}
	}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("docs/matrix.md is out of date (run make matrix) (-doc +now):\n%s", diff)
	}
}

// TestMatrixPageSize keeps the shipped matrix page small enough to open at
// once and to keep in the repository: it draws the runs of the cells that
// are not safe only (report.WriteMatrixHTML).
func TestMatrixPageSize(t *testing.T) {
	const limit = 2 << 20
	fi, err := os.Stat("../../docs/matrix.html")
	if err != nil {
		t.Fatal(err)
	}
	if fi.Size() > limit {
		t.Errorf("docs/matrix.html is %d bytes, over %d", fi.Size(), limit)
	}
}

// docMatrixVerdicts reads an agent's cells from a matrix written by
// matrix --markdown: the verdicts its row names, mechanism by mechanism
// (the row only counts the safe ones), and safe for those its section's
// "Safe:" line lists.
func docMatrixVerdicts(doc, agent string) (map[string]matrix.Verdict, error) {
	row := regexp.MustCompile(`(?m)^\| ` + regexp.QuoteMeta(agent) + ` \|(.*)\|$`).FindStringSubmatch(doc)
	if row == nil {
		return nil, fmt.Errorf("no row of %s", agent)
	}
	out := map[string]matrix.Verdict{}
	named := []matrix.Verdict{matrix.Duplicate, matrix.Lost, matrix.ReportedFailure, matrix.Hung, matrix.Unknown}
	safeCount := regexp.MustCompile(`^safe \d+$`)
	families := strings.Split(row[1], " | ")[1:] // after the version
	for _, summary := range families {
		for _, part := range strings.Split(strings.TrimSpace(summary), " · ") {
			part = strings.ReplaceAll(part, "**", "")
			if part == "—" || safeCount.MatchString(part) {
				continue
			}
			i := slices.IndexFunc(named, func(v matrix.Verdict) bool { return strings.HasPrefix(part, string(v)+" ") })
			if i < 0 {
				return nil, fmt.Errorf("row of %s: %q names no verdict", agent, part)
			}
			for _, mech := range strings.Split(strings.TrimPrefix(part, string(named[i])+" "), ", ") {
				out[mech] = named[i]
			}
		}
	}
	_, section, ok := strings.Cut(doc, "\n### "+agent+"\n")
	if !ok {
		return nil, fmt.Errorf("no section of %s", agent)
	}
	section, _, _ = strings.Cut(section, "\n### ")
	if safe := regexp.MustCompile(`(?m)^Safe: (.*)\.$`).FindStringSubmatch(section); safe != nil {
		for _, mech := range strings.Split(safe[1], ", ") {
			out[mech] = matrix.Safe
		}
	}
	return out, nil
}

// makeMatrixTimeout is the --timeout make matrix runs with.
func makeMatrixTimeout(t *testing.T) (d time.Duration) {
	t.Helper()
	f, err := os.Open("../../Makefile")
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	sc := bufio.NewScanner(f)
	re := regexp.MustCompile(`bin/replaycheck matrix .*--timeout (\S+)`)
	for sc.Scan() {
		if m := re.FindStringSubmatch(sc.Text()); m != nil {
			d, err := time.ParseDuration(m[1])
			if err != nil {
				t.Fatal(err)
			}
			return d
		}
	}
	t.Fatal("the Makefile's matrix target names no --timeout")
	return d
}

// TestMatrixProgressTimeLeft: the line says the matrix's time left, or
// that it is unknown while no agent has decided a cell.
func TestMatrixProgressTimeLeft(t *testing.T) {
	tests := []struct {
		name string
		in   matrix.Progress
		want string
	}{
		{"estimated", matrix.Progress{Agent: 2, Agents: 3, Target: "a2", Step: "sweep", Progress: explore.Progress{Phase: "sweep", Done: 1, Total: 2, Elapsed: time.Second},
			Cells: 12, Done: 4, Wall: time.Minute, Left: 2 * time.Minute, LeftKnown: true},
			"matrix 4/12 cells, about 2m0s left · agent 2/3 a2 sweep sweep: 1/2 runs, 0 failing, 1s, about 1s left\n"},
		{"unknown", matrix.Progress{Agent: 1, Agents: 3, Target: "a1", Step: "fingerprint", Progress: explore.Progress{Phase: "clean", Done: 2, Total: 2, Elapsed: time.Second},
			Cells: 12, Wall: time.Second},
			"matrix 0/12 cells, time left unknown · agent 1/3 a1 fingerprint clean: 2 runs, 0 failing, in 1s\n"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var b strings.Builder
			matrixProgress(&exploreProgress{what: "matrix", w: &b, lines: true})(tt.in)
			if diff := cmp.Diff(tt.want, b.String()); diff != "" {
				t.Errorf("(-want +got)\n%s", diff)
			}
		})
	}
}
