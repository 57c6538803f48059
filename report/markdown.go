package report

import (
	"fmt"
	"io"
	"slices"
	"strconv"
	"strings"

	"github.com/replaycheck/replaycheck/internal/harness/baseline"
	"github.com/replaycheck/replaycheck/internal/harness/rules"
	"github.com/replaycheck/replaycheck/internal/wire"
)

// MarkdownLimit is the size a Markdown summary is kept under by default:
// GitHub refuses a step summary of more than 1 MiB.
const MarkdownLimit = 1000 << 10

// MarkdownOptions tune WriteMarkdownWith.
type MarkdownOptions struct {
	// MaxBytes caps the summary's size; 0 means MarkdownLimit. Rows and
	// failure details past it are left out and counted ("N more rows in
	// the JSON/JUnit artifact"); the heading, the total line and the notes
	// are always written.
	MaxBytes int
}

// WriteMarkdown writes a Markdown summary for CI step summaries, capped at
// MarkdownLimit; see WriteMarkdownWith.
func WriteMarkdown(w io.Writer, s Suite) error {
	return WriteMarkdownWith(w, s, MarkdownOptions{})
}

// WriteMarkdownWith writes a Markdown summary for CI step summaries: the
// total, why the run did not complete (when it did not), a table of every
// scenario and target with the failures first, and for each that did not
// pass its checks and a collapsed timeline, within opts.MaxBytes. Judged
// against a baseline, it adds a Baseline column, the baseline's outcome and
// stale entries, and marks known failures; the heading's mark then follows
// the baseline, and new failures and stale entries come first.
func WriteMarkdownWith(w io.Writer, s Suite, opts MarkdownOptions) error {
	return scrubbed(w, "Markdown report", func(w io.Writer) error { return writeMarkdownWith(w, s, opts) })
}

// writeMarkdownWith is WriteMarkdownWith before scrubbing.
func writeMarkdownWith(w io.Writer, s Suite, opts MarkdownOptions) error {
	limit := opts.MaxBytes
	if limit <= 0 {
		limit = MarkdownLimit
	}
	var b strings.Builder
	t := s.Totals()
	icon, title := "✅", ""
	switch {
	case s.Abort != nil:
		icon, title = "⚠️", ": "+abortTitle(s.Abort.Kind)
	case s.Baseline != nil && s.Baseline.Broken():
		icon = "❌"
	case s.Baseline != nil:
	case t.Fail > 0:
		icon = "❌"
	case t.Unknown > 0:
		icon = "❔"
	}
	fmt.Fprintf(&b, "## %s replaycheck%s\n\n", icon, title)
	if lines := AbortLines(s); len(lines) > 0 {
		if len(s.Results) > 0 {
			lines = append(lines, fmt.Sprintf("the %s below ended before the run stopped", word(len(s.Results), "result")))
		}
		for i, l := range lines {
			if i == 0 {
				l = "**" + mdEscape(l) + "**"
			} else {
				l = mdEscape(l)
			}
			b.WriteString("> " + l + "\n")
			if i < len(lines)-1 {
				b.WriteString(">\n")
			}
		}
		b.WriteString("\n")
	}
	fmt.Fprintf(&b, "%s\n\n", mdName(TotalLine(s)))
	if lines := slices.Concat(BaselineLines(s), NoteLines(s), SkipLines(s)); len(lines) > 0 {
		for _, l := range lines {
			b.WriteString("- " + mdEscape(l) + "\n")
		}
		b.WriteString("\n")
	}
	order := failuresFirst(s)
	head := []string{"Scenario", "Target", "Verdict", "Status", "Writes", "Initial", "Follow-up", "MCP calls", "Failed checks"}
	align := []string{"---", "---", "---", "---", "--:", "--:", "--:", "--:", "---"}
	rep, stdio, proto := repeated(s), spawned(s), negotiatedAny(s)
	if proto {
		head, align = slices.Insert(head, 8, "MCP protocol"), slices.Insert(align, 8, "---")
	}
	if stdio {
		head, align = slices.Insert(head, 8, "Spawns", "Exits"), slices.Insert(align, 8, "--:", "--:")
	}
	if rep {
		head, align = slices.Insert(head, 3, "Runs"), slices.Insert(align, 3, "---")
	}
	if s.Baseline != nil {
		head, align = append(head, "Baseline"), append(align, "---")
	}
	// What is left for the rows and details, less room for the lines that
	// count what was left out.
	const trailerRoom = 256
	budget := limit - b.Len() - trailerRoom
	var rows strings.Builder
	if len(order) > 0 {
		rows.WriteString("| " + strings.Join(head, " | ") + " |\n")
		rows.WriteString("|" + strings.Join(align, "|") + "|\n")
	}
	rowsLeft := 0
	for k, n := range order {
		r := s.Results[n]
		c := r.Counts
		cells := []string{string(r.Verdict), statuses(r), strconv.Itoa(c.Writes),
			strconv.Itoa(c.Initial), strconv.Itoa(c.FollowUp), wire.CallsText(c.MCPCalls, c.Unknown), failedChecks(r)}
		if proto {
			cells = slices.Insert(cells, 6, wire.MCPProtocolsText(c.Protocols))
		}
		if stdio {
			cells = slices.Insert(cells, 6, strconv.Itoa(c.Spawns), strconv.Itoa(c.Exits))
		}
		if rep {
			cells = slices.Insert(cells, 1, runsCell(r))
		}
		if s.Baseline != nil {
			cells = append(cells, baselineCell(baselineOf(s, n)))
		}
		for i := range cells {
			cells[i] = mdEscape(cells[i])
		}
		cells = append([]string{mdName(r.History.Scenario), mdName(r.History.Target)}, cells...)
		row := "| " + strings.Join(cells, " | ") + " |\n"
		if rows.Len()+len(row) > budget {
			rowsLeft = len(order) - k
			break
		}
		rows.WriteString(row)
	}
	budget -= rows.Len()
	b.WriteString(rows.String())
	if rowsLeft > 0 {
		fmt.Fprintf(&b, "\n**%d more %s in the JSON/JUnit artifact** (this summary is capped at %d KiB).\n", rowsLeft, word(rowsLeft, "row"), limit>>10)
	}
	detailsLeft := 0
	for _, n := range order {
		r := s.Results[n]
		if r.Verdict == rules.Pass || r.Verdict == rules.Skipped {
			continue
		}
		d := markdownDetails(s, n)
		if detailsLeft > 0 || len(d) > budget {
			detailsLeft++
			continue
		}
		budget -= len(d)
		b.WriteString(d)
	}
	if detailsLeft > 0 {
		fmt.Fprintf(&b, "\nThe checks and timelines of %d more not passing %s are in the JSON/JUnit artifact.\n", detailsLeft, word(detailsLeft, "result"))
	}
	_, err := io.WriteString(w, b.String())
	if err != nil {
		return fmt.Errorf("writing Markdown report: %w", err)
	}
	return nil
}

// failuresFirst orders s's results for the summary: those that fail the run
// first (failures, or with a baseline new failures and stale entries), then
// those that could not judge or are known, then the passes; otherwise in
// the suite's order.
func failuresFirst(s Suite) []int {
	rank := func(n int) int {
		r := s.Results[n]
		if bv := baselineOf(s, n); bv != nil {
			switch bv.Status {
			case baseline.New, baseline.Stale:
				return 0
			case baseline.Known:
				return 1
			}
			return 2
		}
		switch r.Verdict {
		case rules.Fail:
			return 0
		case rules.Pass, rules.Skipped:
			return 2
		}
		return 1
	}
	order := make([]int, len(s.Results))
	for i := range order {
		order[i] = i
	}
	slices.SortStableFunc(order, func(a, b int) int { return rank(a) - rank(b) })
	return order
}

// markdownDetails renders the checks and timeline of the n-th result, which
// did not pass.
func markdownDetails(s Suite, n int) string {
	var b strings.Builder
	r := s.Results[n]
	h := r.History
	bv := baselineOf(s, n)
	verdict := string(r.Verdict)
	switch {
	case bv != nil && bv.Status == baseline.Known:
		verdict = knownLabel
	case bv != nil && bv.Status == baseline.New:
		verdict += " (not in the baseline)"
	}
	fmt.Fprintf(&b, "\n### %s on %s: %s\n\n", mdName(h.Scenario), mdName(h.Target), verdict)
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
	lines := Timeline(h)
	fence := codeFence(lines)
	b.WriteString("\n<details><summary>timeline</summary>\n\n" + fence + "\n")
	for _, l := range lines {
		b.WriteString(TerminalText(l) + "\n")
	}
	if lines := UpstreamCounts(r); len(lines) > 0 {
		b.WriteString("\nupstream (sort | uniq -c):\n")
		for _, l := range lines {
			b.WriteString(l + "\n")
		}
	}
	b.WriteString(fence + "\n\n</details>\n")
	return b.String()
}

// codeFence returns a Markdown code fence longer than any run of
// backticks in lines (an answer's body may hold some), so none closes it.
func codeFence(lines []string) string {
	longest := 0
	for _, l := range lines {
		n := 0
		for _, c := range l {
			if c == '`' {
				n++
				longest = max(longest, n)
			} else {
				n = 0
			}
		}
	}
	return strings.Repeat("`", max(3, longest+1))
}

// mdEscape renders text (a message, a note) for a Markdown line or table
// cell: on one line, its pipes escaped and its control characters escaped
// as by TerminalText.
func mdEscape(s string) string {
	s = strings.ReplaceAll(s, "|", `\|`)
	return TerminalText(strings.ReplaceAll(s, "\n", " "))
}
