package report

import (
	"bytes"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/replaycheck/replaycheck/internal/harness/rules"
	"github.com/replaycheck/replaycheck/internal/matrix"
)

// testMatrix is a matrix of two agents whose cells hold the naive seed
// run's results: the first agent duplicates on 500, when killed and
// resumed and on a client scenario, and is safe on drop and on another;
// the second is safe on 500, cannot judge mcp-fail and does not take drop,
// kills or the client scenarios.
func testMatrix(t testing.TB) *matrix.Matrix {
	t.Helper()
	s := naiveRun(t)
	res := func(i int) *rules.Result { r := s.Results[i]; return &r }
	return &matrix.Matrix{Version: matrix.FormatVersion, Kind: matrix.KindMatrix, Seed: "replaycheck", Rows: []matrix.Row{
		{Target: "agent-a", Version: "1.2.3", Runs: 40, Cells: []matrix.Cell{
			{Family: matrix.FamilyStatus, Mechanism: "500", Doc: "answer 500", Verdict: matrix.Duplicate, Reason: "commit_write ran 3 times for 1 logical tool call",
				DecidedBy: "fingerprint", Runs: 4, Writes: 3, LogicalCalls: 1, Reproduction: "repro/agent-a/no-replay-after-dispatch-follow-up-500.yaml",
				ToldModel: `call_1 "ok"`, ToldUser: "HTTP 500: upstream error", Result: res(0)},
			{Family: matrix.FamilyStream, Mechanism: "drop", Doc: "cut the stream at this point", Verdict: matrix.Safe, DecidedBy: "sweep", Runs: 6, Writes: 1, LogicalCalls: 1, Result: res(1)},
			{Family: matrix.FamilyKill, Mechanism: "kill-after-execute", Doc: "kill the target once the tools/call ran", Verdict: matrix.Duplicate, Reason: "replayed by the resumed run",
				DecidedBy: "sweep", Runs: 1, Writes: 2, LogicalCalls: 1, Reproduction: "repro/agent-a/no-replay-after-dispatch-tools-call-kill-after-execute.yaml"},
			{Family: matrix.FamilyClient, Mechanism: "client follow-up 500 always", Doc: "Every follow-up fails with 500 after the tool ran", Verdict: matrix.Duplicate,
				Reason: "commit_write ran 3 times for 1 logical tool call", DecidedBy: "scenario", Runs: 1, Writes: 3, LogicalCalls: 1,
				Reproduction: "scenarios/clients/follow-up-500-always.yaml", ToldUser: "exit 1: 500 Internal Server Error"},
			{Family: matrix.FamilyClient, Mechanism: "client no fault", Doc: "Without a fault the client calls the tool once", Verdict: matrix.Safe, DecidedBy: "scenario", Runs: 1, Writes: 1, LogicalCalls: 1},
		}},
		{Target: "agent-b", Runs: 20, Cells: []matrix.Cell{
			{Family: matrix.FamilyStatus, Mechanism: "500", Doc: "answer 500", Verdict: matrix.Safe, DecidedBy: "fingerprint", Runs: 4, Writes: 1, LogicalCalls: 1, Result: res(2)},
			{Family: matrix.FamilyMCP, Mechanism: "mcp-fail", Doc: "refuse the tools/call", Verdict: matrix.Unknown, Reason: "no tool call reached the MCP server", DecidedBy: "sweep", Runs: 2, Result: res(3)},
		}, Pruned: []matrix.Pruned{{Mechanism: "drop", Reason: "no point of the agent's runs takes it"},
			{Mechanism: "kill-after-execute", Reason: "the target declares no resume"},
			{Mechanism: "client no fault", Reason: "a client scenario"}, {Mechanism: "client follow-up 500 always", Reason: "a client scenario"}}},
	}}
}

func TestMatrixMarkdown(t *testing.T) {
	var b bytes.Buffer
	if err := WriteMatrixMarkdown(&b, testMatrix(t)); err != nil {
		t.Fatal(err)
	}
	golden(t, "matrix.golden.md", b.Bytes())
}

func TestMatrixHTML(t *testing.T) {
	var b bytes.Buffer
	if err := WriteMatrixHTML(&b, testMatrix(t)); err != nil {
		t.Fatal(err)
	}
	page := b.String()
	for _, want := range []string{
		`<title>replaycheck: replay-safety matrix</title>`,
		`<th class="fam" colspan="1">model request fails</th>`,
		`<td class="agent">agent-a <span class="ver">1.2.3</span></td>`,
		`<td class="fail" title="DUPLICATE: commit_write ran 3 times for 1 logical tool call · reproduction: repro/agent-a/no-replay-after-dispatch-follow-up-500.yaml"><a href="#r1">DUP</a></td>`,
		`<td class="none" title="not swept: no point of the agent&#39;s runs takes it">—</td>`,
		`<td class="unknown" title="unknown: no tool call reached the MCP server"><a href="#r2">?</a></td>`,
		`<th class="fam" colspan="1">agent killed and resumed</th><th class="fam" colspan="2">client scenarios</th>`,
		`<th class="mech" title="Every follow-up fails with 500 after the tool ran">client follow-up 500 always</th><th class="mech" title="Without a fault the client calls the tool once">client no fault</th>`,
		`<td class="none" title="not swept: a client scenario">—</td>`,
		`<details class="result" id="r1" open>`,
		`<svg class="seq"`,
		`<td class="pass" title="safe: ">ok</td>`,
	} {
		if !strings.Contains(page, want) {
			t.Errorf("the matrix page lacks %s", want)
		}
	}
	// agent-a's drop and agent-b's 500 are safe: their runs are not shown;
	// agent-b's mcp-fail is unknown: its run is listed, not drawn.
	if n := strings.Count(page, `<details class="result"`); n != 2 {
		t.Errorf("the matrix page shows %d runs, want 2: the DUPLICATE and the unknown cells', not the safe cells'", n)
	}
	if n := strings.Count(page, `<svg class="seq"`); n != 1 {
		t.Errorf("the matrix page draws %d runs, want 1: the DUPLICATE cell's", n)
	}
	if strings.Contains(page, "more results are listed without a diagram") {
		t.Error("the matrix page says its diagrams were capped; it draws its findings")
	}
}

func TestMatrixHTMLInChromium(t *testing.T) {
	bin := chromium(t)
	page := filepath.Join(t.TempDir(), "matrix.html")
	var b bytes.Buffer
	if err := WriteMatrixHTML(&b, testMatrix(t)); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(page, b.Bytes(), 0o644); err != nil {
		t.Fatal(err)
	}
	dom := string(runChromium(t, bin, "file://"+page, "--dump-dom"))
	for _, want := range []string{`<table class="grid">`, `<a href="#r1">DUP</a>`, `id="r1"`, `<svg class="seq"`, "REPLAY #2"} {
		if !strings.Contains(dom, want) {
			t.Errorf("Chromium's DOM of the matrix lacks %q", want)
		}
	}
}

// TestMatrixMarkdownVariant: a variant's row (matrix.Row.ModelRow) says
// where its model columns are, not "—" as for a family that does not apply.
func TestMatrixMarkdownVariant(t *testing.T) {
	m := &matrix.Matrix{Version: matrix.FormatVersion, Kind: matrix.KindMatrix, Seed: "replaycheck", Rows: []matrix.Row{
		{Target: "agent-a-stdio", Version: "1.2.3", ModelRow: "agent-a", Runs: 2, Cells: []matrix.Cell{
			{Family: matrix.FamilyStdio, Mechanism: "stdio-exit-after", Verdict: matrix.Safe, DecidedBy: "sweep", Runs: 2, Writes: 1, LogicalCalls: 1},
		}, Pruned: []matrix.Pruned{{Mechanism: "500", Reason: "swept on agent-a's row"}}},
	}}
	var b bytes.Buffer
	if err := WriteMatrixMarkdown(&b, m); err != nil {
		t.Fatal(err)
	}
	if want := "| agent-a-stdio | 1.2.3 | as agent-a | as agent-a | — | safe 1 | — | — |"; !strings.Contains(b.String(), want) {
		t.Errorf("the row is not %q:\n%s", want, b.String())
	}
}
