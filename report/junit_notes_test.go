package report

import (
	"strings"
	"testing"

	"github.com/replaycheck/replaycheck/internal/harness/rules"
)

// TestJUnitNotes: a note (a retry-after hint changes the behaviour under
// test) reaches JUnit as the testcase's system-out, passing or failing.
func TestJUnitNotes(t *testing.T) {
	const note = "retry_after_hint 1ms: injected error responses carry retry-after-ms and Retry-After (this changes the behaviour under test)"
	pass, fail := seedRun("builtin:guarded", 1), seedRun("builtin:naive", 3)
	pass.Notes, fail.Notes = []string{note}, []string{note}
	got := parseJUnit(t, Suite{Results: []rules.Result{rules.Evaluate(pass), rules.Evaluate(fail)}})
	for _, s := range got.Suites {
		for _, c := range s.Cases {
			if !strings.Contains(c.SystemOut, "note: "+note) {
				t.Errorf("%s on %s: system-out %q lacks the note", c.Name, c.Classname, c.SystemOut)
			}
		}
	}
}
