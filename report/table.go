package report

import (
	"fmt"
	"io"
	"slices"
	"strconv"
	"strings"
	"unicode/utf8"

	"github.com/olekukonko/tablewriter"
	"github.com/olekukonko/tablewriter/tw"

	"github.com/replaycheck/replaycheck/internal/harness/baseline"
	"github.com/replaycheck/replaycheck/internal/harness/rules"
	"github.com/replaycheck/replaycheck/internal/wire"
)

// TableOptions shape the terminal report. The zero value writes the table,
// the total and the failures' details.
type TableOptions struct {
	// Verbose (-v) adds one line for each passing result and the timelines
	// of failures a baseline lists as known.
	Verbose bool
	// Timelines (-vv) writes every result's details and timeline, passing
	// ones too; it implies Verbose.
	Timelines bool
	// Quiet leaves out the table, the notes and the timelines: the total
	// line, the baseline's lines and each failure's checks, so that the
	// output grows with the failures, not with the suite.
	Quiet bool
	// Width is the terminal's width in columns: the table's scenario and
	// failed-checks cells are cut (…) to fit it where they can. 0 leaves
	// the table as wide as its cells.
	Width int
}

// WriteTable writes the terminal report: a table with one row per scenario
// and target, the one-line total, and for each scenario that did not pass its
// failed checks (expected versus observed) and a compact timeline. Names and
// output lines are made safe for a terminal (see TerminalText).
func WriteTable(w io.Writer, s Suite, opts TableOptions) error {
	return scrubbed(w, "table", func(w io.Writer) error { return writeTable(w, s, opts) })
}

// writeTable is WriteTable before scrubbing.
func writeTable(w io.Writer, s Suite, opts TableOptions) error {
	if opts.Timelines {
		opts.Verbose = true
	}
	if !opts.Quiet && len(s.Results) > 0 {
		if err := writeGrid(w, s, opts.Width); err != nil {
			return err
		}
	}
	var b strings.Builder
	b.WriteString(TerminalText(TotalLine(s)) + "\n")
	for _, l := range BaselineLines(s) {
		b.WriteString(TerminalText(l) + "\n")
	}
	if !opts.Quiet {
		for _, l := range NoteLines(s) {
			b.WriteString(TerminalText(l) + "\n")
		}
	}
	var passed []string
	if !opts.Timelines {
		for _, l := range SkipLines(s) {
			b.WriteString(TerminalText(l) + "\n")
		}
	}
	for i, r := range s.Results {
		if r.Verdict == rules.Skipped && !opts.Timelines {
			continue
		}
		if r.Verdict == rules.Pass && !opts.Timelines {
			if opts.Verbose && !opts.Quiet {
				passed = append(passed, passLine(r))
			}
			continue
		}
		b.WriteString("\n")
		bv := baselineOf(s, i)
		// A known failure was accepted: its checks, and its timeline only on request.
		timeline := opts.Verbose || bv == nil || bv.Status != baseline.Known
		writeDetails(&b, r, bv, timeline && !opts.Quiet)
	}
	if len(passed) > 0 {
		b.WriteString("\n")
		for _, l := range passed {
			b.WriteString(l + "\n")
		}
	}
	_, err := io.WriteString(w, b.String())
	return err
}

// passLine renders a passing result on one line: what held and its counts.
func passLine(r rules.Result) string {
	h, c := r.History, r.Counts
	line := fmt.Sprintf("PASS %s on %s: %s held; writes %d, upstream %d, MCP calls %s",
		TerminalText(h.Scenario), TerminalText(h.Target), plural(len(r.Verdicts), "check"), c.Writes, c.Initial+c.FollowUp, wire.CallsText(c.MCPCalls, c.Unknown))
	if run := shownRun(r); run != "" {
		line += " (" + run + ")"
	}
	return line + " in " + round(h.Duration.D())
}

// writeGrid writes the table of results, fitted to width columns (0: any).
func writeGrid(w io.Writer, s Suite, width int) error {
	t := tablewriter.NewTable(w,
		tablewriter.WithHeaderAutoFormat(tw.Off),
		tablewriter.WithRowAutoWrap(tw.WrapNone),
		tablewriter.WithHeaderAutoWrap(tw.WrapNone),
	)
	proto := negotiatedAny(s)
	header, rows := gridRows(s, proto)
	// The scenario and the failed checks are the cells that grow. On a
	// terminal too narrow for the table, the MCP protocol column goes first:
	// the details, the timeline and every report name the version too.
	if !fitColumns(header, rows, width, 0, slices.Index(header, "FAILED")) && proto {
		header, rows = gridRows(s, false)
		fitColumns(header, rows, width, 0, slices.Index(header, "FAILED"))
	}
	t.Header(header)
	for _, row := range rows {
		if err := t.Append(row); err != nil {
			return fmt.Errorf("writing table: %w", err)
		}
	}
	if err := t.Render(); err != nil {
		return fmt.Errorf("writing table: %w", err)
	}
	return nil
}

// gridRows returns the header and rows of the table of results, with the
// MCP protocol column when proto is set.
func gridRows(s Suite, proto bool) ([]string, [][]string) {
	// A repeated scenario's counts are those of the run its details show.
	header := []string{"SCENARIO", "TARGET", "VERDICT", "STATUS", "WRITES", "INITIAL", "FOLLOW-UP", "MCP CALLS", "FAILED"}
	rep, stdio := repeated(s), spawned(s)
	if proto {
		header = slices.Insert(header, 8, "MCP PROTOCOL")
	}
	if stdio {
		header = slices.Insert(header, 8, "SPAWNS", "EXITS")
	}
	if rep {
		header = slices.Insert(header, 3, "RUNS")
	}
	if s.Baseline != nil {
		header = append(header, "BASELINE")
	}
	rows := make([][]string, 0, len(s.Results))
	for i, r := range s.Results {
		c := r.Counts
		row := []string{TerminalText(r.History.Scenario), TerminalText(r.History.Target), string(r.Verdict), statuses(r),
			strconv.Itoa(c.Writes), strconv.Itoa(c.Initial), strconv.Itoa(c.FollowUp), wire.CallsText(c.MCPCalls, c.Unknown), failedChecks(r)}
		if proto {
			row = slices.Insert(row, 8, wire.MCPProtocolsText(c.Protocols))
		}
		if stdio {
			row = slices.Insert(row, 8, strconv.Itoa(c.Spawns), strconv.Itoa(c.Exits))
		}
		if rep {
			row = slices.Insert(row, 3, runsCell(r))
		}
		if s.Baseline != nil {
			row = append(row, baselineCell(baselineOf(s, i)))
		}
		rows = append(rows, row)
	}
	return header, rows
}

// minCut is the narrowest a cut column becomes.
const minCut = 12

// fitColumns cuts the cells of the columns shrink (widest first, each to no
// less than minCut or its header) so that a table of header and rows drawn
// with borders fits width columns; 0 means any width. A table that cannot
// fit is cut as far as it can be; fitColumns reports whether it fits.
func fitColumns(header []string, rows [][]string, width int, shrink ...int) bool {
	if width <= 0 {
		return true
	}
	widths := make([]int, len(header))
	for i, h := range header {
		widths[i] = utf8.RuneCountInString(h)
	}
	for _, row := range rows {
		for i, c := range row {
			widths[i] = max(widths[i], utf8.RuneCountInString(c))
		}
	}
	// "│ cell " per column and the closing "│".
	total := 3*len(widths) + 1
	for _, w := range widths {
		total += w
	}
	for total > width {
		col, floor := -1, 0
		for _, i := range shrink {
			f := max(minCut, utf8.RuneCountInString(header[i]))
			if i >= 0 && widths[i] > f && (col < 0 || widths[i] > widths[col]) {
				col, floor = i, f
			}
		}
		if col < 0 {
			break
		}
		cut := min(total-width, widths[col]-floor)
		widths[col] -= cut
		total -= cut
	}
	for _, row := range rows {
		for _, i := range shrink {
			if i >= 0 && utf8.RuneCountInString(row[i]) > widths[i] {
				row[i] = string([]rune(row[i])[:widths[i]-1]) + "…"
			}
		}
	}
	return total <= width
}

// writeDetails writes one result's checks that did not pass, marking those
// its baseline verdict bv (nil for none) lists as known, and with timeline
// its timeline and upstream counts.
func writeDetails(b *strings.Builder, r rules.Result, bv *baseline.Verdict, timeline bool) {
	h := r.History
	head := strings.ToUpper(string(r.Verdict))
	switch {
	case bv != nil && bv.Status == baseline.Known:
		head = "KNOWN FAILURE (baseline)"
	case bv != nil && bv.Status == baseline.New:
		head += " (not in the baseline)"
	}
	fmt.Fprintf(b, "%s %s on %s", head, TerminalText(h.Scenario), TerminalText(h.Target))
	if h.File != "" {
		fmt.Fprintf(b, " (%s)", TerminalText(h.File))
	}
	fmt.Fprintf(b, " token %s", h.Token)
	if run := shownRun(r); run != "" {
		fmt.Fprintf(b, " (%s)", run)
	}
	b.WriteString("\n")
	for _, v := range r.Verdicts {
		mark := map[rules.Status]string{rules.Pass: "ok", rules.Fail: "FAIL", rules.Unknown: "??", rules.Skipped: "SKIP"}[v.Status]
		if v.Status == rules.Pass && r.Verdict != rules.Pass {
			continue
		}
		note := ""
		if v.Status != rules.Pass && known(bv, v.Check) {
			note = " (in the baseline)"
		}
		fmt.Fprintf(b, "  %-4s %s: %s%s\n", mark, v.Check, indentLines(v.Message), note)
	}
	if !timeline {
		return
	}
	b.WriteString("  timeline:\n")
	for _, l := range Timeline(h) {
		b.WriteString("    " + TerminalText(l) + "\n")
	}
	if lines := UpstreamCounts(r); len(lines) > 0 {
		b.WriteString("  upstream (sort | uniq -c):\n")
		for _, l := range lines {
			b.WriteString("    " + l + "\n")
		}
	}
	for _, x := range h.Requests {
		if x.Client == nil {
			continue
		}
		for _, o := range []struct{ name, text string }{{"stdout", x.Client.Stdout}, {"stderr", x.Client.Stderr}} {
			if lines := lastLines(o.text, 5); len(lines) > 0 {
				fmt.Fprintf(b, "  client %s (last lines):\n", o.name)
				for _, l := range lines {
					b.WriteString("    | " + outputText(l) + "\n")
				}
			}
		}
	}
	if len(h.TargetOutput) > 0 {
		fmt.Fprintf(b, "  %s output during the run (last lines):\n", TerminalText(h.Target))
		for _, l := range h.TargetOutput {
			b.WriteString("    | " + outputText(l) + "\n")
		}
	}
}

// SkipLines lists the results whose scenario did not apply to the target,
// one line each with why: "skipped gemini follow-up stream cut on agent: not
// applicable: the target spoke …".
func SkipLines(s Suite) []string {
	var out []string
	for _, r := range s.Results {
		if r.Verdict != rules.Skipped || r.History == nil {
			continue
		}
		why := "not applicable"
		if i := slices.IndexFunc(r.Verdicts, func(v rules.Verdict) bool { return v.Check == rules.CheckApplies }); i >= 0 {
			why = r.Verdicts[i].Message
		}
		out = append(out, fmt.Sprintf("skipped %s on %s: %s", r.History.Scenario, r.History.Target, why))
	}
	return out
}

// NoteLines lists the notes of the results (a retry-after hint, knobs a
// target could not apply): how a run differed from the plain scenario.
func NoteLines(s Suite) []string {
	var out []string
	for _, r := range s.Results {
		for _, n := range r.History.Notes {
			out = append(out, fmt.Sprintf("note: %s on %s: %s", r.History.Scenario, r.History.Target, n))
		}
	}
	return out
}

// indentLines renders a message that spans lines (a start error with the
// target's output) under its check, each line escaped for a terminal.
func indentLines(msg string) string {
	lines := strings.Split(msg, "\n")
	for i, l := range lines {
		lines[i] = outputText(l)
	}
	return strings.Join(lines, "\n       ")
}

// lastLines returns the last n non-empty lines of text.
func lastLines(text string, n int) []string {
	var lines []string
	for _, l := range strings.Split(text, "\n") {
		if strings.TrimSpace(l) != "" {
			lines = append(lines, l)
		}
	}
	if len(lines) > n {
		lines = lines[len(lines)-n:]
	}
	return lines
}
