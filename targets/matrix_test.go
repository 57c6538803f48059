package targets_test

import (
	"encoding/json"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/replaycheck/replaycheck/internal/matrix"
	"github.com/replaycheck/replaycheck/internal/targettest"
)

// TestMatrixRealAgentSameAtParallelOne builds the matrix of the shipped
// OpenAI Agents SDK agent, on a status, an MCP drop after the write and a
// refusal before it, at --parallel 1 and at the default (its runs admitted
// as the CPU has room), inside unshare -rn, and compares them cell for
// cell. Skips when the agent is not installed (make clients).
func TestMatrixRealAgentSameAtParallelOne(t *testing.T) {
	if testing.Short() {
		t.Skip("two matrices of a real agent take minutes; not in -short")
	}
	if err := targettest.LoopbackNamespace(); err != nil {
		t.Skipf("no loopback-only network namespace: %v", err)
	}
	if why := realClientFile(t, "openai-agents.yaml").installed(); why != "" {
		t.Skip(why)
	}
	dir := t.TempDir()
	verdicts := map[string]map[string]matrix.Verdict{}
	for _, parallel := range []string{"1", "default"} {
		js := filepath.Join(dir, parallel+".json")
		args := []string{"matrix", "targets/openai-agents.yaml", "--kinds", "500,mcp-drop,mcp-fail", "--json", js, "--out", filepath.Join(dir, parallel)}
		if parallel != "default" {
			args = append(args, "--parallel", parallel)
		}
		if code, out := inNamespace(t, 10*time.Minute, args...); code != 0 {
			t.Fatalf("matrix at --parallel %s: exit %d\n%s", parallel, code, out)
		}
		b, err := os.ReadFile(js)
		if err != nil {
			t.Fatal(err)
		}
		var m matrix.Matrix
		if err := json.Unmarshal(b, &m); err != nil {
			t.Fatal(err)
		}
		got := map[string]matrix.Verdict{}
		for _, r := range m.Rows {
			for _, c := range r.Cells {
				got[r.Target+" "+c.Mechanism] = c.Verdict
			}
		}
		verdicts[parallel] = got
	}
	if len(verdicts["1"]) != 3 {
		t.Errorf("cells at --parallel 1: %v, want 500, mcp-drop and mcp-fail", verdicts["1"])
	}
	if diff := cmp.Diff(verdicts["1"], verdicts["default"]); diff != "" {
		t.Errorf("cells at --parallel 1 (-) and at the default (+) differ:\n%s", diff)
	}
}
