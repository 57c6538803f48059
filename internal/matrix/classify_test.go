package matrix

import (
	"testing"

	"github.com/replaycheck/replaycheck/internal/harness/explore"
	"github.com/replaycheck/replaycheck/internal/harness/rules"
)

// TestJudgeHungIsNotSafe: a run that did not complete before its deadline
// (an agent waiting on an answer the fault lost) is a finding of its own,
// never safe; a duplicate in the same run still wins.
func TestJudgeHungIsNotSafe(t *testing.T) {
	hung := rules.Verdict{Check: rules.CheckCompleted, Kind: rules.KindRun, Status: rules.Fail, Message: "the client was killed at the deadline"}
	for _, tt := range []struct {
		name   string
		failed []string
		want   Verdict
	}{
		{"hung", []string{rules.CheckCompleted}, Hung},
		{"hung and a duplicate", []string{rules.CheckCompleted, "no-replay-after-dispatch"}, Duplicate},
		{"another rule broken", []string{"retry-after-honored"}, Safe},
	} {
		t.Run(tt.name, func(t *testing.T) {
			run := explore.Cell{Verdict: rules.Fail, Failed: tt.failed, Result: rules.Result{Verdicts: []rules.Verdict{hung}}}
			if got, why := judge(run); got != tt.want {
				t.Errorf("judge = %s (%s), want %s", got, why, tt.want)
			}
		})
	}
}

// TestFamilyOfKinds: the kill kinds are the killed-and-resumed family, not
// a model answer breaking.
func TestFamilyOfKinds(t *testing.T) {
	for name, want := range map[string]string{
		"kill-after-execute": FamilyKill, "kill-at-follow-up": FamilyKill,
		"drop": FamilyStream, "500": FamilyStatus, "mcp-drop": FamilyMCP, "stdio-exit-after": FamilyStdio,
	} {
		kinds, err := explore.SelectKinds([]string{name})
		if err != nil {
			t.Fatal(err)
		}
		if got := familyOf(kinds[0]); got != want {
			t.Errorf("familyOf(%s) = %q, want %q", name, got, want)
		}
	}
}
