package main

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestRunLedgerFile: run --ledger appends one line per write of every run
// (the runs share fakes or have their own, several at once) to one file,
// each run's lines carrying its token: per run, the file's lines equal the
// report's writes, and the file holds nothing else.
func TestRunLedgerFile(t *testing.T) {
	dir := t.TempDir()
	path, js := filepath.Join(dir, "ledger.txt"), filepath.Join(dir, "run.json")
	code, out, errOut := execute(t, "run", "../../scenarios/seed", "--target", "builtin:naive", "--ledger", path, "--json", js)
	if code != exitRuleBroken {
		t.Fatalf("exit %d, want %d (the naive gateway replays)\n%s%s", code, exitRuleBroken, out, errOut)
	}
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	lines := strings.Split(strings.TrimSuffix(string(b), "\n"), "\n")
	total, replays := 0, 0
	for _, r := range readSuite(t, js).Results {
		n := 0
		for _, l := range lines {
			if strings.Contains(l, r.History.Token) {
				n++
			}
		}
		if n != r.Counts.Writes {
			t.Errorf("%s: %d ledger file lines carry its token %s, want its %d writes", r.History.Scenario, n, r.History.Token, r.Counts.Writes)
		}
		total += r.Counts.Writes
		if r.Counts.Writes > 1 {
			replays++
		}
	}
	if len(lines) != total || replays == 0 {
		t.Errorf("the file has %d lines, want the %d writes of the runs (%d runs wrote more than once, want some)", len(lines), total, replays)
	}
}
