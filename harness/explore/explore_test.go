package explore

import (
	"context"
	"testing"

	"github.com/replaycheck/replaycheck/harness/rules"
	"github.com/replaycheck/replaycheck/harness/target"
)

func TestScratch(t *testing.T) {
	tg, err := target.ParseTarget("builtin:guarded")
	if err != nil {
		t.Fatal(err)
	}
	bases, err := DefaultBases(tg)
	if err != nil {
		t.Fatal(err)
	}
	rep, err := Explore(context.Background(), bases, Options{Target: tg, Parallel: 8})
	if err != nil {
		t.Fatal(err)
	}
	t.Logf("cells %d runs %d wall %s", len(rep.Cells), rep.Runs, rep.Wall.D())
	for _, b := range rep.Bases {
		t.Logf("base %s: %d points %s", b.Name, len(b.Points), b.Note)
	}
	for _, c := range rep.Cells {
		if c.Verdict == rules.Fail {
			t.Logf("FAIL %s %s %v writes %d", c.Base, c.Schedule, c.Failed, c.Writes)
			for _, v := range c.Result.Verdicts {
				if v.Status == rules.Fail {
					t.Logf("   %s: %s", v.Check, v.Message)
				}
			}
		}
	}
	for _, f := range rep.Findings {
		t.Logf("finding %s %s %v %d/%d", f.Base, f.Schedule, f.Failed, f.Reproduced, f.Tries)
	}
}
