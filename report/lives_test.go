package report

import (
	"strings"
	"testing"

	"github.com/replaycheck/replaycheck/internal/harness/history"
)

// TestTimelineShowsLives: a run that killed the target and resumed it shows
// the kill, where it came and the resumed life's outcome in its timeline;
// a proxy's resumed life says the app request is not sent again; a SIGTERM
// that ran out of grace says it ended in SIGKILL.
func TestTimelineShowsLives(t *testing.T) {
	zero, one := 0, -1
	h := &history.History{TargetEvents: []history.TargetEvent{
		{Kind: history.TargetKilled, Life: 1, At: history.Duration(5e6), Point: history.KillAfterExecute, Tool: "commit_write", Signal: history.SIGKILL, PID: 42},
		{Kind: history.TargetResumed, Life: 2, At: history.Duration(9e6), Exit: &one},
		{Kind: history.TargetKilled, Life: 2, At: history.Duration(12e6), Point: history.KillAtFollowUp, Signal: history.SIGTERM, PID: 43},
		{Kind: history.TargetResumed, Life: 3, At: history.Duration(15e6), Exit: &zero, Success: true, Said: "done\n"},
		{Kind: history.TargetKilled, Life: 3, At: history.Duration(16e6), Point: history.KillInStream, Signal: history.SIGKILL, PID: 44},
		{Kind: history.TargetResumed, Life: 4, At: history.Duration(17e6), Exit: &one, Success: true, Proxy: true},
		{Kind: history.TargetKilled, Life: 4, At: history.Duration(18e6), Point: history.KillAtFollowUp, Signal: history.SIGTERM, KilledAfterGrace: true, PID: 45},
	}}
	got := strings.Join(Timeline(h), "\n")
	for _, want := range []string{
		"target           target killed (SIGKILL) after tools/call commit_write ran (life 1, pid 42)",
		"resumed (life 2): did not end by itself (killed again, or past the deadline)",
		"target killed (SIGTERM) when its follow-up model request arrived (life 2, pid 43)",
		`resumed (life 3): exited 0, said "done"`,
		"resumed (life 4): finished the pending turn (a proxy: it carries on with its own pending work; the harness does not send the app request again)",
		"target killed (SIGTERM, then SIGKILL: it had not exited within its grace) when its follow-up model request arrived (life 4, pid 45)",
	} {
		if !strings.Contains(got, want) {
			t.Errorf("timeline lacks %q:\n%s", want, got)
		}
	}
}
