package report

import (
	"fmt"
	"io"
	"slices"
	"strconv"
	"strings"

	"github.com/replaycheck/replaycheck/harness/baseline"
	"github.com/replaycheck/replaycheck/harness/rules"
)

// WriteMarkdown writes a Markdown summary for CI step summaries: the total,
// a table of every scenario and target, and for each that did not pass its
// checks and a collapsed timeline. Judged against a baseline, it adds a
// Baseline column, the baseline's outcome and stale entries, and marks known
// failures; the heading's mark then follows the baseline.
func WriteMarkdown(w io.Writer, s Suite) error {
	var b strings.Builder
	t := s.Totals()
	icon := "✅"
	switch {
	case s.Baseline != nil && s.Baseline.Broken():
		icon = "❌"
	case s.Baseline != nil:
	case t.Fail > 0:
		icon = "❌"
	case t.Unknown > 0:
		icon = "❔"
	}
	fmt.Fprintf(&b, "## %s replaycheck\n\n%s\n\n", icon, TotalLine(s))
	if lines := append(BaselineLines(s), NoteLines(s)...); len(lines) > 0 {
		for _, l := range lines {
			b.WriteString("- " + mdEscape(l) + "\n")
		}
		b.WriteString("\n")
	}
	head := []string{"Scenario", "Target", "Verdict", "Status", "Writes", "Initial", "Follow-up", "MCP calls", "Failed checks"}
	align := []string{"---", "---", "---", "---", "--:", "--:", "--:", "--:", "---"}
	rep := repeated(s)
	if rep {
		head, align = slices.Insert(head, 3, "Runs"), slices.Insert(align, 3, "---")
	}
	if s.Baseline != nil {
		head, align = append(head, "Baseline"), append(align, "---")
	}
	b.WriteString("| " + strings.Join(head, " | ") + " |\n")
	b.WriteString("|" + strings.Join(align, "|") + "|\n")
	for n, r := range s.Results {
		c := r.Counts
		cells := []string{r.History.Scenario, r.History.Target, string(r.Verdict), statuses(r), strconv.Itoa(c.Writes),
			strconv.Itoa(c.Initial), strconv.Itoa(c.FollowUp), strconv.Itoa(c.MCPCalls), failedChecks(r)}
		if rep {
			cells = slices.Insert(cells, 3, runsCell(r))
		}
		if s.Baseline != nil {
			cells = append(cells, baselineCell(baselineOf(s, n)))
		}
		for i := range cells {
			cells[i] = mdEscape(cells[i])
		}
		b.WriteString("| " + strings.Join(cells, " | ") + " |\n")
	}
	for n, r := range s.Results {
		if r.Verdict == rules.Pass {
			continue
		}
		h := r.History
		bv := baselineOf(s, n)
		verdict := string(r.Verdict)
		switch {
		case bv != nil && bv.Status == baseline.Known:
			verdict = knownLabel
		case bv != nil && bv.Status == baseline.New:
			verdict += " (not in the baseline)"
		}
		fmt.Fprintf(&b, "\n### %s on %s: %s\n\n", mdEscape(h.Scenario), mdEscape(h.Target), verdict)
		if run := shownRun(r); run != "" {
			fmt.Fprintf(&b, "Checks and timeline of %s.\n\n", run)
		}
		for _, v := range r.Verdicts {
			if v.Status != rules.Pass {
				note := ""
				if known(bv, v.Check) {
					note = " (in the baseline)"
				}
				fmt.Fprintf(&b, "- **%s** `%s`: %s%s\n", v.Status, v.Check, mdEscape(v.Message), note)
			}
		}
		b.WriteString("\n<details><summary>timeline</summary>\n\n```\n")
		for _, l := range Timeline(h) {
			b.WriteString(l + "\n")
		}
		if lines := UpstreamCounts(r); len(lines) > 0 {
			b.WriteString("\nupstream (sort | uniq -c):\n")
			for _, l := range lines {
				b.WriteString(l + "\n")
			}
		}
		b.WriteString("```\n\n</details>\n")
	}
	_, err := io.WriteString(w, b.String())
	if err != nil {
		return fmt.Errorf("writing Markdown report: %w", err)
	}
	return nil
}

func mdEscape(s string) string {
	s = strings.ReplaceAll(s, "|", `\|`)
	return strings.ReplaceAll(s, "\n", " ")
}
