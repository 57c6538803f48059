package report

import (
	"encoding/json"
	"fmt"
	"io"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/olekukonko/tablewriter"
	"github.com/olekukonko/tablewriter/tw"

	"github.com/replaycheck/replaycheck/internal/harness/explore"
	"github.com/replaycheck/replaycheck/internal/harness/history"
	"github.com/replaycheck/replaycheck/internal/harness/rules"
)

// ExploreOptions shape the reports of an explore sweep.
type ExploreOptions struct {
	// All lists every cell of the matrix, not only those that failed (the
	// terminal report).
	All bool
	// Next, when set, is what to do after the findings; the terminal and
	// Markdown reports end with it when the sweep found something.
	Next *NextStep
}

// NextStep is the step that follows a sweep's findings: a sentence and the
// command, ready to paste, that takes it.
type NextStep struct {
	// Say is the sentence, ending with a colon.
	Say string
	// Command is the command line, quoted for a shell.
	Command string
}

// ExploreTotalLine renders the sweep's one-line total, for example
// "explore on builtin:naive (seed s): 3 bases, 68 points, 312 cells: 40 fail,
// 272 pass or cannot judge; 5 findings (5 confirmed) in 12.1s, 400 runs".
func ExploreTotalLine(r *explore.Report) string {
	if f := r.BaseFailed; f != nil {
		why := "fails without any fault"
		if f.TargetNotStarted() {
			why = "could not run: the target did not start"
		}
		return fmt.Sprintf("explore on %s (seed %s): base %q %s; nothing was swept (%s)", r.Target, r.Seed, f.Base, why, countOf(r.Runs, "run"))
	}
	points, fail := 0, 0
	for _, b := range r.Bases {
		points += len(b.Points)
	}
	for _, c := range r.Cells {
		if c.Verdict == rules.Fail {
			fail++
		}
	}
	confirmed := 0
	for _, f := range r.Findings {
		if !f.Flaky {
			confirmed++
		}
	}
	line := fmt.Sprintf("explore on %s (seed %s): %s, %s, %s: %d fail, %d pass or cannot judge; %s (%d confirmed, %d flaky) in %s, %s",
		r.Target, r.Seed, countOf(len(r.Bases), "base"), countOf(points, "point"), countOf(len(r.Cells), "cell"), fail, len(r.Cells)-fail,
		countOf(len(r.Findings), "finding"), confirmed, len(r.Findings)-confirmed, r.Wall.D().Round(10*time.Millisecond), countOf(r.Runs, "run"))
	var more []string
	if r.Skipped > 0 {
		more = append(more, fmt.Sprintf("%d cells over --max-runs not run", r.Skipped))
	}
	if r.Interrupted {
		more = append(more, fmt.Sprintf("interrupted: %d cells not run", r.Unrun))
	}
	if len(more) > 0 {
		line += " (" + strings.Join(more, "; ") + ")"
	}
	return line
}

func countOf(n int, word string) string {
	if n == 1 {
		return "1 " + word
	}
	return strconv.Itoa(n) + " " + word + "s"
}

// exploreCells returns the cells to list, failing first, in sweep order
// within.
func exploreCells(r *explore.Report, all bool) []explore.Cell {
	var fail, rest []explore.Cell
	for _, c := range r.Cells {
		if c.Verdict == rules.Fail {
			fail = append(fail, c)
		} else if all {
			rest = append(rest, c)
		}
	}
	return append(fail, rest...)
}

// exploreFaultCells renders a schedule as the point, fault and times columns
// (one line per fault).
func exploreFaultCells(s explore.Schedule) (point, kind, times string) {
	var ps, ks, ts []string
	for _, a := range s {
		ps, ks, ts = append(ps, a.Point.String()), append(ks, a.Kind), append(ts, a.Times.String())
	}
	return strings.Join(ps, " + "), strings.Join(ks, " + "), strings.Join(ts, " + ")
}

// WriteFingerprint writes a target's retry policy as a table: for each fault
// armed on every attempt of a model request (or, over stdio, of a
// tools/call), the attempts made (N+ when the run hit its deadline first),
// the gaps between them (and an outer retry loop's), whether Retry-After
// was honoured, the time taken, what the app got and how many times the tool
// ran; with a SPAWNS column (the stdio server processes started) when a row
// has spawns.
func WriteFingerprint(w io.Writer, rows []explore.FingerprintRow) error {
	t := tablewriter.NewTable(w,
		tablewriter.WithHeaderAutoFormat(tw.Off),
		tablewriter.WithRowAutoWrap(tw.WrapNone),
		tablewriter.WithHeaderAutoWrap(tw.WrapNone),
	)
	spawns := slices.ContainsFunc(rows, func(r explore.FingerprintRow) bool { return r.Spawns > 0 })
	header := []string{"BASE", "REQUEST", "FAULT (EVERY ATTEMPT)", "ATTEMPTS", "GAP MIN", "GAP MEDIAN", "GAP MAX", "OUTER GAPS", "RETRY-AFTER", "TOTAL", "OUTCOME", "TOOL RUNS"}
	if spawns {
		header = append(header, "SPAWNS")
	}
	t.Header(header)
	incomplete := false
	for _, r := range rows {
		req := fingerprintRequest(r)
		gaps := []string{"-", "-", "-"}
		if r.Attempts > 1 {
			gaps = []string{roundMS(r.GapMin), roundMS(r.GapMedian), roundMS(r.GapMax)}
		}
		ra := r.RetryAfter
		if ra == "" {
			ra = "-"
		}
		attempts := strconv.Itoa(r.Attempts)
		if r.Incomplete {
			attempts += "+"
			incomplete = true
		}
		row := append([]string{r.Base, req, r.Fault, attempts}, gaps...)
		row = append(row, outerGapList(r.OuterGaps))
		row = append(row, ra, roundMS(r.Total), r.Outcome, strconv.Itoa(r.Executions))
		if spawns {
			row = append(row, strconv.Itoa(r.Spawns))
		}
		if err := t.Append(row); err != nil {
			return fmt.Errorf("writing fingerprint: %w", err)
		}
	}
	if err := t.Render(); err != nil {
		return fmt.Errorf("writing fingerprint: %w", err)
	}
	if incomplete {
		if _, err := io.WriteString(w, "N+: the run hit its deadline (--timeout) before the target gave up; more attempts may have followed\n"); err != nil {
			return fmt.Errorf("writing fingerprint: %w", err)
		}
	}
	return nil
}

// outerGapList renders an outer retry loop's waits, in order ("-" for
// none): the first few, then how many more.
func outerGapList(gaps []history.Duration) string {
	const shown = 4
	if len(gaps) == 0 {
		return "-"
	}
	parts := make([]string, 0, shown+1)
	for i, g := range gaps {
		if i == shown {
			parts = append(parts, fmt.Sprintf("+%d more", len(gaps)-shown))
			break
		}
		parts = append(parts, roundMS(g))
	}
	return strings.Join(parts, " ")
}

func roundMS(d history.Duration) string { return d.D().Round(time.Millisecond).String() }

// WriteExploreTable writes the terminal report of a sweep: first a summary
// of the findings, one line per mechanism; then each finding in detail (its
// reproduction, the rules broken, the cells, bases and fault kinds that
// show it, what a fix looks like, the file it was written to); then, with
// All, every cell of the matrix; then the bases' notes, the total and the
// next step (opts.Next).
func WriteExploreTable(w io.Writer, r *explore.Report, opts ExploreOptions) error {
	return scrubbed(w, "explore table", func(w io.Writer) error { return writeExploreTable(w, r, opts) })
}

// writeExploreTable is WriteExploreTable before scrubbing.
func writeExploreTable(w io.Writer, r *explore.Report, opts ExploreOptions) error {
	if len(r.Fingerprint) > 0 {
		if _, err := io.WriteString(w, "RETRY POLICY (each fault on every attempt; attempts as the upstream saw them, so layers multiply, or for a tools/call as the ledger did)\n"); err != nil {
			return err
		}
		if err := WriteFingerprint(w, r.Fingerprint); err != nil {
			return err
		}
		if _, err := io.WriteString(w, "\n"); err != nil {
			return err
		}
	}
	var b strings.Builder
	writeFindingSummary(&b, r)
	writeFindingDetails(&b, r)
	if _, err := io.WriteString(w, b.String()); err != nil {
		return err
	}
	var cells []explore.Cell
	if opts.All {
		cells = exploreCells(r, true)
	}
	if len(cells) > 0 {
		t := tablewriter.NewTable(w,
			tablewriter.WithHeaderAutoFormat(tw.Off),
			tablewriter.WithRowAutoWrap(tw.WrapNone),
			tablewriter.WithHeaderAutoWrap(tw.WrapNone),
		)
		t.Header([]string{"BASE", "FAULT POINT", "FAULT", "TIMES", "VERDICT", "STATUS", "WRITES", "FAILED", "FINDING"})
		for _, c := range cells {
			point, kind, times := exploreFaultCells(c.Schedule)
			finding := ""
			if c.Finding > 0 {
				finding = "#" + strconv.Itoa(c.Finding)
			}
			if err := t.Append([]string{c.Base, point, kind, times, string(c.Verdict), statusList(c.Statuses), strconv.Itoa(c.Writes), strings.Join(c.Failed, ", "), finding}); err != nil {
				return fmt.Errorf("writing table: %w", err)
			}
		}
		if err := t.Render(); err != nil {
			return fmt.Errorf("writing table: %w", err)
		}
	}
	b.Reset()
	for _, base := range r.Bases {
		if base.Note != "" {
			fmt.Fprintf(&b, "note: %s: %s\n", base.Name, base.Note)
		}
	}
	if hidden := len(r.Cells) - len(cells); hidden > 0 {
		fmt.Fprintf(&b, "%s not listed (--all lists every cell with its verdict and finding)\n", countOf(hidden, "cell"))
	}
	b.WriteString(ExploreTotalLine(r) + "\n")
	if n := opts.Next; n != nil && len(r.Findings) > 0 {
		fmt.Fprintf(&b, "\nnext: %s\n  %s\n", n.Say, n.Command)
	}
	_, err := io.WriteString(w, b.String())
	return err
}

// ExploreFindingsText is the findings part of the terminal report (the
// summary, then each finding in detail), for other reports to show as it
// reads there; "" when the sweep found nothing.
func ExploreFindingsText(r *explore.Report) string {
	var b strings.Builder
	writeFindingSummary(&b, r)
	writeFindingDetails(&b, r)
	return strings.TrimSuffix(b.String(), "\n")
}

// writeFindingSummary writes the first screen: how many findings (one per
// mechanism) and which rules they break, then one line per finding: its
// rule, its fault family and step, its fault kinds and its cells.
func writeFindingSummary(b *strings.Builder, r *explore.Report) {
	if len(r.Findings) == 0 {
		return
	}
	failing := 0
	for _, c := range r.Cells {
		if c.Verdict == rules.Fail {
			failing++
		}
	}
	var broken []string
	for _, f := range r.Findings {
		if !slices.Contains(broken, f.Mechanism.Rule) {
			broken = append(broken, f.Mechanism.Rule)
		}
	}
	fmt.Fprintf(b, "%s, one per cause, from %s; rules broken: %s\n", countOf(len(r.Findings), "finding"), countOf(failing, "failing cell"), strings.Join(broken, ", "))
	for i, f := range r.Findings {
		flaky := ""
		if f.Flaky {
			flaky = " FLAKY"
		}
		fmt.Fprintf(b, "%3d. %-26s %s at %s: %s (%s)%s\n", i+1, f.Mechanism.Rule, f.Mechanism.Family, f.Mechanism.Step, kindList(f.Kinds), countOf(f.Cells, "cell"), flaky)
	}
	b.WriteString("\n")
}

// writeFindingDetails writes each finding: its mechanism, its reproduction
// and how it did when re-run, the rules broken, where else it shows, what a
// fix looks like and the file written.
func writeFindingDetails(b *strings.Builder, r *explore.Report) {
	if len(r.Findings) == 0 {
		return
	}
	b.WriteString("FINDINGS (one per mechanism; each reproduced by the smallest of its cells, re-run)\n")
	for i, f := range r.Findings {
		state := fmt.Sprintf("reproduced %d of %d", f.Reproduced, f.Tries)
		if f.Flaky {
			state = "FLAKY: " + state
		}
		fmt.Fprintf(b, "%d. %s\n", i+1, f.Mechanism)
		fmt.Fprintf(b, "   reproduction: %s: %s; %s; %s", f.Base, f.Schedule, state, countOf(f.Writes, "write"))
		if f.LogicalCalls > 0 {
			fmt.Fprintf(b, " for %s", countOf(f.LogicalCalls, "tool call"))
		}
		b.WriteString("\n")
		fmt.Fprintf(b, "   breaks %s", strings.Join(f.Failed, ", "))
		if more := slices.DeleteFunc(slices.Clone(f.Rules), func(c string) bool { return slices.Contains(f.Failed, c) }); len(more) > 0 {
			fmt.Fprintf(b, "; other cells also break %s", strings.Join(more, ", "))
		}
		b.WriteString("\n")
		if f.Message != "" {
			fmt.Fprintf(b, "   %s\n", strings.ReplaceAll(strings.TrimRight(f.Message, "\n"), "\n", "\n   "))
		}
		fmt.Fprintf(b, "   shown by %s on %s (%s); fault kinds %s\n", countOf(f.Cells, "cell"), countOf(len(f.Bases), "base"), strings.Join(f.Bases, "; "), strings.Join(f.Kinds, ", "))
		if f.Fix != "" {
			fmt.Fprintf(b, "   fix: %s More: replaycheck rules %s\n", f.Fix, f.Mechanism.Rule)
		}
		if f.File != "" {
			fmt.Fprintf(b, "   written to %s\n", f.File)
		}
	}
	b.WriteString("\n")
}

// kindList renders fault kinds, the first few by name.
func kindList(kinds []string) string {
	const shown = 5
	if len(kinds) <= shown {
		return strings.Join(kinds, ", ")
	}
	return strings.Join(kinds[:shown], ", ") + fmt.Sprintf(" and %d more", len(kinds)-shown)
}

func statusList(ss []int) string {
	parts := make([]string, len(ss))
	for i, s := range ss {
		parts[i] = strconv.Itoa(s)
	}
	return strings.Join(parts, ",")
}

// exploreMark is a sweep's headline mark: ✅ only for a whole sweep with no
// failing cell and no finding; ❌ for a failing cell, a finding or a base
// that fails clean; ⚠️ for an interrupted sweep or a target that could not
// start, which judged nothing or not everything.
func exploreMark(r *explore.Report) string {
	switch {
	case r.Interrupted, r.BaseFailed != nil && r.BaseFailed.TargetNotStarted():
		return "⚠️"
	case r.BaseFailed != nil || len(r.Findings) > 0 || slices.ContainsFunc(r.Cells, func(c explore.Cell) bool { return c.Verdict == rules.Fail }):
		return "❌"
	}
	return "✅"
}

// WriteExploreMarkdown writes a sweep as Markdown for a CI step summary: the
// total, the findings with what a fix of each looks like, the next step
// (opts.Next) and the failing cells.
func WriteExploreMarkdown(w io.Writer, r *explore.Report, opts ExploreOptions) error {
	return scrubbed(w, "explore Markdown report", func(w io.Writer) error { return writeExploreMarkdown(w, r, opts) })
}

// writeExploreMarkdown is WriteExploreMarkdown before scrubbing.
func writeExploreMarkdown(w io.Writer, r *explore.Report, opts ExploreOptions) error {
	var b strings.Builder
	fmt.Fprintf(&b, "## %s replaycheck explore\n\n%s\n\n", exploreMark(r), mdEscape(ExploreTotalLine(r)))
	if f := r.BaseFailed; f != nil {
		for _, v := range f.Result.Verdicts {
			// A target that did not start judged nothing: its error alone.
			if v.Status == rules.Fail && (!f.TargetNotStarted() || v.Kind == rules.KindRun) {
				fmt.Fprintf(&b, "- **fail** `%s`: %s\n", v.Check, mdEscape(v.Message))
			}
		}
		b.WriteString("\n")
	}
	if len(r.Findings) > 0 {
		b.WriteString("| # | Rule broken | Fault family | Step | Cells | Reproduction | Failed | Writes | Reproduced | Scenario |\n|--:|---|---|---|--:|---|---|--:|---|---|\n")
		for i, f := range r.Findings {
			state := fmt.Sprintf("%d of %d", f.Reproduced, f.Tries)
			if f.Flaky {
				state += " (flaky)"
			}
			cells := []string{strconv.Itoa(i + 1), f.Mechanism.Rule, f.Mechanism.Family, f.Mechanism.Step, strconv.Itoa(f.Cells),
				f.Base + ": " + f.Schedule.String(), strings.Join(f.Failed, ", "), strconv.Itoa(f.Writes), state, f.File}
			for j := range cells {
				cells[j] = mdEscape(cells[j])
			}
			b.WriteString("| " + strings.Join(cells, " | ") + " |\n")
		}
		b.WriteString("\n")
		var fixed []string
		for _, f := range r.Findings {
			if f.Fix != "" && !slices.Contains(fixed, f.Mechanism.Rule) {
				if len(fixed) == 0 {
					b.WriteString("What a fix looks like:\n\n")
				}
				fixed = append(fixed, f.Mechanism.Rule)
				fmt.Fprintf(&b, "- `%s`: %s\n", f.Mechanism.Rule, mdEscape(f.Fix))
			}
		}
		if len(fixed) > 0 {
			b.WriteString("\n")
		}
		if n := opts.Next; n != nil {
			fmt.Fprintf(&b, "Next: %s\n\n```sh\n%s\n```\n\n", mdEscape(n.Say), n.Command)
		}
	}
	if cells := exploreCells(r, false); len(cells) > 0 {
		b.WriteString("<details><summary>Failing cells</summary>\n\n| Base | Fault point | Fault | Times | Status | Writes | Failed | Finding |\n|---|---|---|---|---|--:|---|--:|\n")
		for _, c := range cells {
			point, kind, times := exploreFaultCells(c.Schedule)
			row := []string{c.Base, point, kind, times, statusList(c.Statuses), strconv.Itoa(c.Writes), strings.Join(c.Failed, ", "), strconv.Itoa(c.Finding)}
			for j := range row {
				row[j] = mdEscape(row[j])
			}
			b.WriteString("| " + strings.Join(row, " | ") + " |\n")
		}
		b.WriteString("\n</details>\n")
	}
	_, err := io.WriteString(w, b.String())
	return err
}

// WriteExploreJSON writes the sweep's report as indented JSON.
func WriteExploreJSON(w io.Writer, r *explore.Report) error {
	return scrubbed(w, "explore JSON report", func(w io.Writer) error { return writeExploreJSON(w, r) })
}

// writeExploreJSON is WriteExploreJSON before scrubbing.
func writeExploreJSON(w io.Writer, r *explore.Report) error {
	enc := json.NewEncoder(w)
	enc.SetIndent("", "  ")
	return enc.Encode(r)
}

// ExploreSuite returns the sweep's cells as a suite of results, failing
// first, for the JUnit report; a base that failed clean comes first of all.
func ExploreSuite(r *explore.Report) Suite {
	s := Suite{Version: FormatVersion, Wall: r.Wall}
	if r.BaseFailed != nil {
		s.Results = append(s.Results, r.BaseFailed.Result)
	}
	cells := slices.Clone(r.Cells)
	slices.SortStableFunc(cells, func(a, b explore.Cell) int {
		return boolRank(a.Verdict != rules.Fail) - boolRank(b.Verdict != rules.Fail)
	})
	for _, c := range cells {
		s.Results = append(s.Results, c.Result)
	}
	return s
}

func boolRank(b bool) int {
	if b {
		return 1
	}
	return 0
}
