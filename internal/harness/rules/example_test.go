package rules_test

import (
	"context"
	"slices"
	"testing"
	"time"

	"github.com/replaycheck/replaycheck/internal/harness/rules"
	"github.com/replaycheck/replaycheck/internal/harness/run"
	"github.com/replaycheck/replaycheck/internal/harness/scenario"
	"github.com/replaycheck/replaycheck/internal/harness/target"
)

// TestRuleExamples: each rule's Example is one valid scenario that names
// its rule, and exercises it: on the built-in guarded gateway (the fix) the
// rule judges the run and passes, never "cannot judge" (but where the
// machine starved the harness and the verdict says so).
func TestRuleExamples(t *testing.T) {
	var ss []*scenario.Scenario
	for _, r := range rules.All() {
		got, errs := scenario.Parse(r.Name+" example", []byte(r.Example))
		if len(errs) > 0 || len(got) != 1 {
			t.Errorf("the example of %s: %d scenarios, errors %v", r.Name, len(got), errs)
			continue
		}
		if !slices.Contains(got[0].Expect.Rules, r.Name) {
			t.Errorf("the example of %s expects rules %v, not its own", r.Name, got[0].Expect.Rules)
		}
		ss = append(ss, got[0])
	}
	guarded, err := target.ParseTarget("builtin:guarded")
	if err != nil {
		t.Fatal(err)
	}
	hs, err := run.Run(context.Background(), ss, run.Options{Targets: []target.Target{guarded}, Timeout: 30 * time.Second})
	if err != nil {
		t.Fatal(err)
	}
	for i, h := range hs {
		name := ss[i].Expect.Rules[0]
		for _, v := range rules.Evaluate(h).Verdicts {
			if v.Status == rules.Unknown && v.Starved {
				t.Logf("the example of %s on builtin:guarded: %s cannot be judged on this busy machine: %s", name, v.Check, v.Message)
				continue
			}
			if v.Status != rules.Pass {
				t.Errorf("the example of %s on builtin:guarded: %s %s: %s", name, v.Check, v.Status, v.Message)
			}
		}
	}
}
