package report

import (
	"bytes"
	"encoding/json"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/replaycheck/replaycheck/internal/harness/baseline"
	"github.com/replaycheck/replaycheck/internal/harness/rules"
)

// baselineFixture judges three results against a baseline: the guarded run
// passes but the baseline still lists it (stale), one naive run fails only
// listed checks (known), the other fails one check more (new), and one
// entry names a scenario that did not run.
func baselineFixture() Suite {
	known := seedRun("builtin:naive", 3)
	known.Scenario = "chat follow-up 500, known"
	s := Suite{
		Results: []rules.Result{rules.Evaluate(seedRun("builtin:guarded", 1)), rules.Evaluate(seedRun("builtin:naive", 3)), rules.Evaluate(known)},
		Wall:    ms(40),
	}
	const chat = "chat follow-up 500 after tool ran"
	var entries []baseline.Entry
	add := func(scenario, target string, checks ...string) {
		for _, c := range checks {
			entries = append(entries, baseline.Entry{Scenario: scenario, Target: target, Rule: c})
		}
	}
	add(chat, "builtin:guarded", "writes")
	add(chat, "builtin:naive", "writes", "upstream[follow_up]", "upstream[initial]")
	add(known.Scenario, "builtin:naive", "writes", "upstream[follow_up]", "upstream[initial]", "no-replay-after-dispatch")
	add("a scenario this run did not select", "builtin:naive", "writes")
	o := baseline.Check(baseline.Baseline{File: "baseline.yaml", Entries: entries}, s.Results)
	s.Baseline = &o
	return s
}

func TestBaselineFormats(t *testing.T) {
	checkGoldenFormats(t, baselineFixture, []goldenFormat{
		{"table-baseline.golden", func(b *bytes.Buffer, s Suite) error { return WriteTable(b, s, TableOptions{}) }},
		{"junit-baseline.golden.xml", func(b *bytes.Buffer, s Suite) error { return WriteJUnit(b, s) }},
		{"summary-baseline.golden.md", func(b *bytes.Buffer, s Suite) error { return WriteMarkdown(b, s) }},
	})
}

func TestBaselineJUnit(t *testing.T) {
	got := parseJUnit(t, baselineFixture())
	type kase struct{ Name, Failure, Skipped string }
	var cases []kase
	for _, s := range got.Suites {
		for _, c := range s.Cases {
			k := kase{Name: c.Name + " on " + s.Name}
			if c.Failure != nil {
				k.Failure = c.Failure.Type + ": " + c.Failure.Message
			}
			if c.Skipped != nil {
				k.Skipped = c.Skipped.Message
			}
			cases = append(cases, k)
		}
	}
	want := []kase{
		{Name: "chat follow-up 500 after tool ran on builtin:guarded",
			Failure: `stale: baseline entry {scenario: "chat follow-up 500 after tool ran", target: "builtin:guarded", rule: "writes"} now passes: remove it`},
		{Name: "chat follow-up 500 after tool ran on builtin:naive",
			Failure: "fail: no-replay-after-dispatch: expected at most 1 execution for 1 logical tool call, observed 3 executions (commit_write ×3); commit_write ran 3 times for 1 logical tool call (no ask of the model's is known: the script calls it once)"},
		{Name: "chat follow-up 500, known on builtin:naive", Skipped: "known failure (baseline): writes: expected 1 write, observed 3"},
	}
	if diff := cmp.Diff(want, cases); diff != "" {
		t.Errorf("testcases (-want +got):\n%s", diff)
	}
	// junit-10.xsd has no skipped on <testsuites>: the skipped count is
	// the testsuites'.
	skipped := 0
	for _, s := range got.Suites {
		skipped += s.Skipped
	}
	if got.Tests != 3 || got.Failures != 2 || skipped != 1 {
		t.Errorf("tests=%d failures=%d skipped=%d, want 3, 2, 1", got.Tests, got.Failures, skipped)
	}
}

func TestBaselineJSONKeepsOutcome(t *testing.T) {
	var b bytes.Buffer
	if err := WriteJSON(&b, baselineFixture()); err != nil {
		t.Fatal(err)
	}
	var got struct {
		Baseline baseline.Outcome `json:"baseline"`
	}
	if err := json.Unmarshal(b.Bytes(), &got); err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff(*baselineFixture().Baseline, got.Baseline); diff != "" {
		t.Errorf("baseline in JSON (-want +got):\n%s", diff)
	}
	var plain bytes.Buffer
	if err := WriteJSON(&plain, fixture()); err != nil {
		t.Fatal(err)
	}
	if bytes.Contains(plain.Bytes(), []byte(`"baseline"`)) {
		t.Error("a report without a baseline has a baseline key")
	}
}
