package report

import (
	"fmt"
	"io"
	"slices"
	"strconv"
	"strings"

	"github.com/olekukonko/tablewriter"
	"github.com/olekukonko/tablewriter/tw"

	"github.com/replaycheck/replaycheck/harness/baseline"
	"github.com/replaycheck/replaycheck/harness/rules"
)

// TableOptions shape the terminal report.
type TableOptions struct {
	// Verbose prints every scenario's timeline, not only the failures'.
	Verbose bool
}

// WriteTable writes the terminal report: a table with one row per scenario
// and target, the one-line total, and for each scenario that did not pass its
// failed checks (expected versus observed) and a compact timeline.
func WriteTable(w io.Writer, s Suite, opts TableOptions) error {
	t := tablewriter.NewTable(w,
		tablewriter.WithHeaderAutoFormat(tw.Off),
		tablewriter.WithRowAutoWrap(tw.WrapNone),
		tablewriter.WithHeaderAutoWrap(tw.WrapNone),
	)
	// A repeated scenario's counts are those of the run its details show.
	header := []string{"SCENARIO", "TARGET", "VERDICT", "STATUS", "WRITES", "INITIAL", "FOLLOW-UP", "MCP CALLS", "FAILED"}
	rep := repeated(s)
	if rep {
		header = slices.Insert(header, 3, "RUNS")
	}
	if s.Baseline != nil {
		header = append(header, "BASELINE")
	}
	t.Header(header)
	for i, r := range s.Results {
		c := r.Counts
		row := []string{r.History.Scenario, r.History.Target, string(r.Verdict), statuses(r),
			strconv.Itoa(c.Writes), strconv.Itoa(c.Initial), strconv.Itoa(c.FollowUp), strconv.Itoa(c.MCPCalls), failedChecks(r)}
		if rep {
			row = slices.Insert(row, 3, runsCell(r))
		}
		if s.Baseline != nil {
			row = append(row, baselineCell(baselineOf(s, i)))
		}
		if err := t.Append(row); err != nil {
			return fmt.Errorf("writing table: %w", err)
		}
	}
	if err := t.Render(); err != nil {
		return fmt.Errorf("writing table: %w", err)
	}
	var b strings.Builder
	b.WriteString(TotalLine(s) + "\n")
	for _, l := range BaselineLines(s) {
		b.WriteString(l + "\n")
	}
	for _, l := range NoteLines(s) {
		b.WriteString(l + "\n")
	}
	for i, r := range s.Results {
		if r.Verdict == rules.Pass && !opts.Verbose {
			continue
		}
		b.WriteString("\n")
		bv := baselineOf(s, i)
		// A known failure was accepted: its checks, and its timeline only on request.
		writeDetails(&b, r, bv, opts.Verbose || bv == nil || bv.Status != baseline.Known)
	}
	_, err := io.WriteString(w, b.String())
	return err
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
	fmt.Fprintf(b, "%s %s on %s", head, h.Scenario, h.Target)
	if h.File != "" {
		fmt.Fprintf(b, " (%s)", h.File)
	}
	fmt.Fprintf(b, " token %s", h.Token)
	if run := shownRun(r); run != "" {
		fmt.Fprintf(b, " (%s)", run)
	}
	b.WriteString("\n")
	for _, v := range r.Verdicts {
		mark := map[rules.Status]string{rules.Pass: "ok", rules.Fail: "FAIL", rules.Unknown: "??"}[v.Status]
		if v.Status == rules.Pass && r.Verdict != rules.Pass {
			continue
		}
		note := ""
		if v.Status != rules.Pass && known(bv, v.Check) {
			note = " (in the baseline)"
		}
		fmt.Fprintf(b, "  %-4s %s: %s%s\n", mark, v.Check, v.Message, note)
	}
	if !timeline {
		return
	}
	b.WriteString("  timeline:\n")
	for _, l := range Timeline(h) {
		b.WriteString("    " + l + "\n")
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
					b.WriteString("    | " + l + "\n")
				}
			}
		}
	}
	if len(h.TargetOutput) > 0 {
		fmt.Fprintf(b, "  %s output during the run (last lines):\n", h.Target)
		for _, l := range h.TargetOutput {
			b.WriteString("    | " + l + "\n")
		}
	}
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
