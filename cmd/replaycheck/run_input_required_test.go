package main

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestRunInputRequiredAfterExecuteIsAReplay runs, on the guarded gateway,
// a 2026-07-28 scenario whose ledger runs commit_write and then answers it
// input-required (input_required after execute, a server bug): the
// gateway's retry runs it again, and no-replay-after-dispatch catches the
// one logical call executed twice.
func TestRunInputRequiredAfterExecuteIsAReplay(t *testing.T) {
	path := filepath.Join(t.TempDir(), "after-execute.yaml")
	const yaml = `name: mcp 2026 input required after execute
request: {endpoint: chat}
mcp: {protocol: "2026-07-28"}
faults:
  mcp: [{tool: commit_write, input_required: {after: execute}, times: once}]
expect:
  rules: [no-replay-after-dispatch]
`
	if err := os.WriteFile(path, []byte(yaml), 0o644); err != nil {
		t.Fatal(err)
	}
	code, out, errOut := execute(t, "run", path)
	if code != exitRuleBroken {
		t.Fatalf("exit %d, want %d\n%s%s", code, exitRuleBroken, out, errOut)
	}
	const want = "FAIL no-replay-after-dispatch: expected at most 1 execution for 1 logical tool call, observed 2 executions"
	if !strings.Contains(out, want) {
		t.Errorf("output lacks %q:\n%s", want, out)
	}
}
