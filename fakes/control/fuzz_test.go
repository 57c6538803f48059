package control

import (
	"testing"

	"github.com/replaycheck/replaycheck/fakes/ledger"
	"github.com/replaycheck/replaycheck/fakes/upstream"
)

// FuzzParseFaults: any body either is refused with a Problem or gives faults
// that every fake accepts; nothing panics.
func FuzzParseFaults(f *testing.F) {
	for _, s := range []string{
		"upstream: [{on: follow_up, respond: {status: 500}, times: once}]",
		`{"run": "rc1zn8c3ywjk", "mcp": [{"tool": "commit_write", "drop_after_execute": {}}]}`,
		"mcp: [{method: initialize, fail_before_execute: {reset: true}}]",
		"upstream:\n  - {on: later}\n",
		"&a [*a]",
		"",
	} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, src []byte) {
		req, bad := parseFaults(src, upstream.Fault.Validate, ledger.Fault.Validate)
		if bad != nil {
			if bad.Error == "" {
				t.Fatalf("a refusal without a message for %q", src)
			}
			return
		}
		for i, fl := range req.Upstream {
			if err := fl.Validate(); err != nil {
				t.Fatalf("upstream[%d] accepted but invalid: %v", i, err)
			}
		}
		for i, fl := range req.MCP {
			if err := fl.Validate(); err != nil {
				t.Fatalf("mcp[%d] accepted but invalid: %v", i, err)
			}
		}
	})
}
