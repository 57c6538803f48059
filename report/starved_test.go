package report

import (
	"bytes"
	"strings"
	"testing"
	"time"

	"github.com/replaycheck/replaycheck/internal/harness/history"
	"github.com/replaycheck/replaycheck/internal/harness/rules"
)

// TestStarvedRunShown: a run that failed only because a timeout expired
// while the harness was starved is reported unknown, with the reason, in
// the table and in the Markdown summary.
func TestStarvedRunShown(t *testing.T) {
	h := seedRun("builtin:guarded", 1)
	h.Requests[0].Status = 200
	h.Upstream = h.Upstream[:1]
	h.MCP = h.MCP[:1] // the call, never executed before the tool timeout
	h.Setup.ToolTimeout = ms(200)
	h.Expect.Status, h.Expect.Upstream, h.Expect.Rules = intp(200), nil, nil
	h.Harness = &history.Harness{Lateness: history.Duration(2300 * time.Millisecond), Deadline: history.Duration(30 * time.Second)}
	r := rules.Evaluate(h)
	if r.Verdict != rules.Unknown {
		t.Fatalf("verdict = %s, want unknown: %+v", r.Verdict, r.Verdicts)
	}
	s := Suite{Wall: ms(40), Results: []rules.Result{r}}
	var table, md bytes.Buffer
	if err := WriteTable(&table, s, TableOptions{}); err != nil {
		t.Fatal(err)
	}
	if err := WriteMarkdown(&md, s); err != nil {
		t.Fatal(err)
	}
	const why = "the harness was starved: its timers ran up to 2.3s late while the 200ms tool timeout decided this run"
	for name, out := range map[string]string{"table": table.String(), "markdown": md.String()} {
		if !strings.Contains(out, why) {
			t.Errorf("%s does not say why the run is unknown (%q):\n%s", name, why, out)
		}
	}
}
