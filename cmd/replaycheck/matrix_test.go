package main

import (
	"bufio"
	"context"
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/replaycheck/replaycheck/internal/harness/explore"
	"github.com/replaycheck/replaycheck/internal/harness/target"
	"github.com/replaycheck/replaycheck/internal/matrix"
	"github.com/replaycheck/replaycheck/report"
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

func TestMatrixDiffNamesRetryChange(t *testing.T) {
	dir := t.TempDir()
	none, two := gatewayTarget(t, dir, 0), gatewayTarget(t, dir, 2)
	saved := filepath.Join(dir, "none.json")
	if code, out, errOut := execute(t, "matrix", none, "--kinds", "500,mcp-drop", "--json", saved); code != exitOK {
		t.Fatalf("matrix: exit %d\n%s%s", code, out, errOut)
	}
	// Router retries on: the follow-up's 500 re-runs the tool, which fails the job.
	code, out, errOut := execute(t, "matrix", two, "--kinds", "500,mcp-drop", "--diff", saved)
	if code != exitRuleBroken || !strings.Contains(out, "! gw · 500: safe → DUPLICATE") || strings.Contains(out, "gw · mcp-drop") {
		t.Errorf("diff after turning retries on: exit %d, want 1 naming gw · 500 only\n%s%s", code, out, errOut)
	}
	// And back: a cell that turned safe is reported, and passes.
	savedTwo := filepath.Join(dir, "two.json")
	if code, out, errOut := execute(t, "matrix", two, "--kinds", "500,mcp-drop", "--json", savedTwo); code != exitOK {
		t.Fatalf("matrix: exit %d\n%s%s", code, out, errOut)
	}
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
}

// TestMatrixDocUpToDate regenerates the built-in gateways' rows of the
// shipped matrix (make matrix) and compares them with docs/matrix.md's.
func TestMatrixDocUpToDate(t *testing.T) {
	doc, err := os.ReadFile("../../docs/matrix.md")
	if err != nil {
		t.Fatal(err)
	}
	var agents []matrix.Agent
	want := map[string]string{}
	for _, name := range []string{"builtin:guarded", "builtin:naive"} {
		tg, err := target.ParseTarget(name)
		if err != nil {
			t.Fatal(err)
		}
		agents = append(agents, matrix.Agent{Target: tg})
		row := regexp.MustCompile(`(?m)^\| ` + regexp.QuoteMeta(name) + ` \|.*$`).Find(doc)
		if row == nil {
			t.Fatalf("docs/matrix.md has no row of %s: run make matrix", name)
		}
		want[name] = string(row)
	}
	m, err := matrix.Build(context.Background(), agents, matrix.Options{Timeout: makeMatrixTimeout(t)})
	if err != nil {
		t.Fatal(err)
	}
	got := map[string]string{}
	for _, r := range m.Rows {
		got[r.Target] = report.MatrixMarkdownRow(r)
	}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("docs/matrix.md is out of date (run make matrix) (-doc +now):\n%s", diff)
	}
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

func TestMatrixProgressTimeLeft(t *testing.T) {
	var b strings.Builder
	update := matrixProgress(&exploreProgress{what: "matrix", w: &b, lines: true})
	update(matrix.Progress{Agent: 2, Agents: 3, Target: "a2", Step: "sweep", Progress: explore.Progress{Phase: "sweep", Done: 1, Total: 2, Elapsed: time.Second},
		Cells: 12, Done: 4, Wall: time.Minute, Left: 2 * time.Minute})
	want := "matrix 4/12 cells, about 2m0s left · agent 2/3 a2 sweep sweep: 1/2 runs, 0 failing, 1s, about 1s left\n"
	if diff := cmp.Diff(want, b.String()); diff != "" {
		t.Errorf("(-want +got)\n%s", diff)
	}
}
