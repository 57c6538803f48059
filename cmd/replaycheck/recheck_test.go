package main

import (
	"bytes"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/replaycheck/replaycheck/internal/harness/history"
	"github.com/replaycheck/replaycheck/internal/harness/rules"
	"github.com/replaycheck/replaycheck/internal/wire"
	"github.com/replaycheck/replaycheck/report"
)

// TestRecheckIgnoresSavedVerdicts checks that --recheck judges the saved
// histories again in the CLI, not the verdicts the file was saved with: a
// report saved as passing whose history breaks its expectation fails.
func TestRecheckIgnoresSavedVerdicts(t *testing.T) {
	h := &history.History{
		Scenario: "stale", Target: "builtin:naive", Token: "rc0000000000",
		Expect:   history.Expect{Counts: history.Counts{Writes: history.Exactly(1)}},
		Requests: []history.Exchange{{Endpoint: "chat", Path: "/v1/chat/completions", Status: 200, CleanEnd: true}},
		MCP: []wire.MCPEvent{
			{Kind: wire.MCPWrite, Tool: "commit_write"}, {Kind: wire.MCPWrite, Tool: "commit_write"},
		},
	}
	stale := rules.Result{History: h, Verdict: rules.Pass}
	var b bytes.Buffer
	if err := report.WriteJSON(&b, report.Suite{Results: []rules.Result{stale}}); err != nil {
		t.Fatal(err)
	}
	js := filepath.Join(t.TempDir(), "saved.json")
	if err := os.WriteFile(js, b.Bytes(), 0o644); err != nil {
		t.Fatal(err)
	}
	code, out, errOut := execute(t, "run", "--recheck", js)
	if code != exitRuleBroken || !strings.Contains(out, "1 fail") {
		t.Errorf("recheck of a stale pass: exit %d, want %d\n%s%s", code, exitRuleBroken, out, errOut)
	}
}

// TestRecheckOfNothingIsNotGreen: a saved run that did not complete (its
// target could not start) re-checks as not completed (exit 3), and a report
// with no result (an empty shard's) is refused (exit 2); both re-checked as
// "0 scenarios", exit 0, before.
func TestRecheckOfNothingIsNotGreen(t *testing.T) {
	dir := t.TempDir()
	tests := []struct {
		name  string
		suite report.Suite
		code  int
		want  string
	}{
		{"aborted", report.Suite{Abort: &report.Abort{Kind: report.AbortHarness, Error: "client x could not run"}}, exitCannotRun, "the saved run did not complete: client x could not run"},
		{"no result", report.Suite{}, exitBadUsage, "no result in the report"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var b bytes.Buffer
			if err := report.WriteJSON(&b, tt.suite); err != nil {
				t.Fatal(err)
			}
			js := filepath.Join(dir, strings.ReplaceAll(tt.name, " ", "-")+".json")
			if err := os.WriteFile(js, b.Bytes(), 0o644); err != nil {
				t.Fatal(err)
			}
			code, out, errOut := execute(t, "run", "--recheck", js)
			if code != tt.code || !strings.Contains(errOut, tt.want) {
				t.Errorf("exit %d, want %d and %q\n%s%s", code, tt.code, tt.want, out, errOut)
			}
		})
	}
}
