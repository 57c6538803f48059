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

	"github.com/replaycheck/replaycheck/harness/explore"
	"github.com/replaycheck/replaycheck/harness/history"
	"github.com/replaycheck/replaycheck/harness/rules"
)

// ExploreOptions shape the terminal report of an explore sweep.
type ExploreOptions struct {
	// All lists every cell of the matrix, not only those that failed.
	All bool
}

// ExploreTotalLine renders the sweep's one-line total, for example
// "explore on builtin:naive (seed s): 3 bases, 68 points, 312 cells: 40 fail,
// 272 pass or cannot judge; 5 findings (5 confirmed) in 12.1s, 400 runs".
func ExploreTotalLine(r *explore.Report) string {
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
// tools/call), the attempts made, the gaps between them, whether Retry-After
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
	header := []string{"BASE", "REQUEST", "FAULT (EVERY ATTEMPT)", "ATTEMPTS", "GAP MIN", "GAP MEDIAN", "GAP MAX", "RETRY-AFTER", "TOTAL", "OUTCOME", "TOOL RUNS"}
	if spawns {
		header = append(header, "SPAWNS")
	}
	t.Header(header)
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
		row := append([]string{r.Base, req, r.Fault, strconv.Itoa(r.Attempts)}, gaps...)
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
	return nil
}

func roundMS(d history.Duration) string { return d.D().Round(time.Millisecond).String() }

// WriteExploreTable writes the terminal report of a sweep: the findings, each
// with its minimal schedule and the file it was written to, the matrix of
// failing cells (every cell with All), the bases' notes and the total.
func WriteExploreTable(w io.Writer, r *explore.Report, opts ExploreOptions) error {
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
	if len(r.Findings) > 0 {
		b.WriteString("FINDINGS (each reduced to its minimal fault schedule and re-run)\n")
		for i, f := range r.Findings {
			state := fmt.Sprintf("reproduced %d of %d", f.Reproduced, f.Tries)
			if f.Flaky {
				state = "FLAKY: " + state
			}
			fmt.Fprintf(&b, "%d. %s: %s\n   %s; %s; %s; %s\n", i+1, f.Base, f.Schedule, strings.Join(f.Failed, ", "), state, countOf(f.Writes, "write"), countOf(f.Cells, "cell"))
			if f.Message != "" {
				fmt.Fprintf(&b, "   %s\n", f.Message)
			}
			if len(f.Also) > 0 {
				fmt.Fprintf(&b, "   the same failure with %s\n", alsoList(f.Also))
			}
			if f.File != "" {
				fmt.Fprintf(&b, "   written to %s\n", f.File)
			}
		}
		b.WriteString("\n")
	}
	if _, err := io.WriteString(w, b.String()); err != nil {
		return err
	}
	cells := exploreCells(r, opts.All)
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
		fmt.Fprintf(&b, "%s not listed: they pass or cannot judge (--all lists them)\n", countOf(hidden, "cell"))
	}
	b.WriteString(ExploreTotalLine(r) + "\n")
	_, err := io.WriteString(w, b.String())
	return err
}

// alsoList renders the other schedules of a finding, the first few by name.
func alsoList(also []string) string {
	const shown = 4
	if len(also) <= shown {
		return strings.Join(also, "; ")
	}
	return strings.Join(also[:shown], "; ") + fmt.Sprintf("; and %d more", len(also)-shown)
}

func statusList(ss []int) string {
	parts := make([]string, len(ss))
	for i, s := range ss {
		parts[i] = strconv.Itoa(s)
	}
	return strings.Join(parts, ",")
}

// WriteExploreMarkdown writes a sweep as Markdown for a CI step summary: the
// total, the findings and the failing cells.
func WriteExploreMarkdown(w io.Writer, r *explore.Report) error {
	var b strings.Builder
	icon := "✅"
	if len(r.Findings) > 0 {
		icon = "❌"
	}
	fmt.Fprintf(&b, "## %s replaycheck explore\n\n%s\n\n", icon, mdEscape(ExploreTotalLine(r)))
	if len(r.Findings) > 0 {
		b.WriteString("| # | Base | Minimal fault schedule | Failed | Writes | Reproduced | Scenario |\n|--:|---|---|---|--:|---|---|\n")
		for i, f := range r.Findings {
			state := fmt.Sprintf("%d of %d", f.Reproduced, f.Tries)
			if f.Flaky {
				state += " (flaky)"
			}
			cells := []string{strconv.Itoa(i + 1), f.Base, f.Schedule.String(), strings.Join(f.Failed, ", "), strconv.Itoa(f.Writes), state, f.File}
			for j := range cells {
				cells[j] = mdEscape(cells[j])
			}
			b.WriteString("| " + strings.Join(cells, " | ") + " |\n")
		}
		b.WriteString("\n")
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
	enc := json.NewEncoder(w)
	enc.SetIndent("", "  ")
	return enc.Encode(r)
}

// ExploreSuite returns the sweep's cells as a suite of results, failing
// first, for the JUnit report.
func ExploreSuite(r *explore.Report) Suite {
	s := Suite{Version: FormatVersion, Wall: r.Wall}
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
