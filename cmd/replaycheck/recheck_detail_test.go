package main

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
)

// TestRecheckOldMCPDetail re-checks run --json reports saved before MCP
// events had typed fields (one "detail" each: a fault, a method, a pid, an
// exit's end, a tools change, a cause, unknown_tool, dedup), written by the
// binary of the commit before them from the naive and guarded suites' MCP
// and stdio scenarios. The verdicts of every check are the ones the report
// was saved with, the -vv output (checks and timelines) is the one that
// binary printed re-checking it (testdata/*.txt), and the report written
// again carries the typed fields only.
func TestRecheckOldMCPDetail(t *testing.T) {
	for _, tt := range []struct {
		name string
		code int
	}{
		{"naive", exitRuleBroken},
		{"guarded", exitOK},
	} {
		t.Run(tt.name, func(t *testing.T) {
			saved := filepath.Join("testdata", "recheck-mcp-detail-"+tt.name+".json")
			again := filepath.Join(t.TempDir(), "again.json")
			code, out, errOut := execute(t, "run", "--recheck", saved, "-vv", "--json", again)
			if code != tt.code {
				t.Fatalf("exit %d, want %d\n%s", code, tt.code, errOut)
			}
			want, err := os.ReadFile(strings.TrimSuffix(saved, ".json") + ".txt")
			if err != nil {
				t.Fatal(err)
			}
			if diff := cmp.Diff(string(want), out); diff != "" {
				t.Errorf("re-check output differs from the one before typed fields (-want +got):\n%s", diff)
			}
			if diff := cmp.Diff(verdicts(t, saved), verdicts(t, again)); diff != "" {
				t.Errorf("verdicts (-saved +re-checked):\n%s", diff)
			}
			b, err := os.ReadFile(again)
			if err != nil {
				t.Fatal(err)
			}
			if strings.Contains(string(b), `"detail"`) {
				t.Error(`the re-checked report still has "detail" fields`)
			}
			for _, typed := range []string{`"method": "initialize"`, `"fault": "`} {
				if !strings.Contains(string(b), typed) {
					t.Errorf("the re-checked report lacks %s", typed)
				}
			}
			if tt.name == "naive" {
				for _, typed := range []string{`"pid": "`, `"end": "fault"`, `"end": "stdin_closed"`, `"change": "removed"`, `"unknown_tool": true`} {
					if !strings.Contains(string(b), typed) {
						t.Errorf("the re-checked report lacks %s", typed)
					}
				}
			}
		})
	}
}

// verdicts returns each result's scenario, verdict and checks in the run
// --json report at path, as JSON values.
func verdicts(t *testing.T, path string) []any {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	var r struct {
		Results []struct {
			History struct {
				Scenario string `json:"scenario"`
			} `json:"history"`
			Verdict  any `json:"verdict"`
			Verdicts any `json:"verdicts"`
		} `json:"results"`
	}
	if err := json.Unmarshal(b, &r); err != nil {
		t.Fatal(err)
	}
	var out []any
	for _, res := range r.Results {
		out = append(out, []any{res.History.Scenario, res.Verdict, res.Verdicts})
	}
	return out
}
