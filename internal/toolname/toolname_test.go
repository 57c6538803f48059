package toolname

import "testing"

func TestNames(t *testing.T) {
	for _, c := range []struct {
		name, tool string
		want       bool
	}{
		{"commit_write", "commit_write", true},
		{"ledger-commit_write", "commit_write", true},
		{"ledger.commit_write", "commit_write", true},
		{"ledger/commit_write", "commit_write", true},
		{"ledger:commit_write", "commit_write", true},
		{"mcp__ledger__commit_write", "commit_write", true},
		{"ledger_commit_write", "commit_write", true},
		{"__commit_write", "commit_write", false},
		{"-commit_write", "commit_write", false},
		{"commit_write_keyed", "commit_write", false},
		{"ledger-commit_write_keyed", "commit_write", false},
		{"xcommit_write", "commit_write", false},
		{"commit_write", "write", false},
		{"ledger_write", "write", false},
		{"ledger-write", "write", true},
		{"ledger-", "", false},
		{"", "commit_write", false},
	} {
		if got := Names(c.name, c.tool); got != c.want {
			t.Errorf("Names(%q, %q) = %v, want %v", c.name, c.tool, got, c.want)
		}
	}
}
