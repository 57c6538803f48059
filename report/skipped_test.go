package report

import (
	"bytes"
	"encoding/json"
	"strings"
	"testing"

	"github.com/replaycheck/replaycheck/internal/harness/rules"
	"github.com/replaycheck/replaycheck/internal/wire"
)

// skippedFixture is a passing run and a run whose gemini stream fault the
// chat target could not meet.
func skippedFixture() Suite {
	h := seedRun("agent", 1)
	h.Scenario = "gemini follow-up stream cut"
	yes := true
	h.Faults = []wire.FaultReport{{Side: wire.FaultUpstream, Index: 1, Fault: json.RawMessage(`{"endpoint":"gemini","stream":true,"drop":{"after":"headers"}}`),
		Endpoint: "gemini", Stream: &yes}}
	return Suite{Results: []rules.Result{rules.Evaluate(seedRun("agent", 1)), rules.Evaluate(h)}, Wall: ms(40)}
}

// TestSkippedInEveryFormat checks that a scenario that did not apply is
// counted apart, says why in every format, and is neither a failure nor an
// error in JUnit.
func TestSkippedInEveryFormat(t *testing.T) {
	s := skippedFixture()
	if got := s.Results[1].Verdict; got != rules.Skipped {
		t.Fatalf("fixture's second result is %s, want skipped", got)
	}
	why := "skipped gemini follow-up stream cut on agent: not applicable: the target spoke OpenAI Chat Completions, not streamed; this scenario's faults act on Gemini generateContent, streamed"
	wantTotal := "2 scenarios on agent: 1 pass, 0 fail, 0 unknown, 1 skipped (not applicable) in 40ms"

	var table bytes.Buffer
	if err := WriteTable(&table, s, TableOptions{}); err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{wantTotal, why, "│ not applicable │"} {
		if !strings.Contains(table.String(), want) {
			t.Errorf("table lacks %q:\n%s", want, table.String())
		}
	}
	if strings.Contains(table.String(), "timeline:") {
		t.Errorf("table details a skipped result's timeline:\n%s", table.String())
	}

	var md bytes.Buffer
	if err := WriteMarkdown(&md, s); err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{"## ✅ replaycheck", mdEscape(why), "| skipped |"} {
		if !strings.Contains(md.String(), want) {
			t.Errorf("Markdown lacks %q:\n%s", want, md.String())
		}
	}

	j := parseJUnit(t, s)
	if j.Failures != 0 || j.Errors != 0 || j.Suites[0].Skipped != 1 {
		t.Errorf("JUnit: %d failures, %d errors, %d skipped; want 0, 0, 1", j.Failures, j.Errors, j.Suites[0].Skipped)
	}
	if c := j.Suites[0].Cases[1]; c.Skipped == nil || !strings.Contains(c.Skipped.Message, "not applicable: the target spoke OpenAI Chat Completions") {
		t.Errorf("JUnit case of the skipped result: %+v", c)
	}

	_, page := parseHTML(t, s, HTMLOptions{})
	if !strings.Contains(page, "not applicable: the target spoke OpenAI Chat Completions") || !strings.Contains(page, "every rule held") {
		t.Errorf("HTML report lacks the skip or its title")
	}
}
