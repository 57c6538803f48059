package report

import (
	"fmt"
	"io"
	"strconv"
	"strings"

	"github.com/olekukonko/tablewriter"
	"github.com/olekukonko/tablewriter/tw"

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
	t.Header([]string{"SCENARIO", "TARGET", "VERDICT", "STATUS", "WRITES", "INITIAL", "FOLLOW-UP", "MCP CALLS", "FAILED"})
	for _, r := range s.Results {
		c := r.Counts
		if err := t.Append([]string{r.History.Scenario, r.History.Target, string(r.Verdict), statuses(r),
			strconv.Itoa(c.Writes), strconv.Itoa(c.Initial), strconv.Itoa(c.FollowUp), strconv.Itoa(c.MCPCalls), failedChecks(r)}); err != nil {
			return fmt.Errorf("writing table: %w", err)
		}
	}
	if err := t.Render(); err != nil {
		return fmt.Errorf("writing table: %w", err)
	}
	var b strings.Builder
	b.WriteString(TotalLine(s) + "\n")
	for _, r := range s.Results {
		if r.Verdict == rules.Pass && !opts.Verbose {
			continue
		}
		b.WriteString("\n")
		writeDetails(&b, r)
	}
	_, err := io.WriteString(w, b.String())
	return err
}

// writeDetails writes one result's checks that did not pass, its timeline
// and its upstream counts.
func writeDetails(b *strings.Builder, r rules.Result) {
	h := r.History
	fmt.Fprintf(b, "%s %s on %s", strings.ToUpper(string(r.Verdict)), h.Scenario, h.Target)
	if h.File != "" {
		fmt.Fprintf(b, " (%s)", h.File)
	}
	fmt.Fprintf(b, " token %s\n", h.Token)
	for _, v := range r.Verdicts {
		mark := map[rules.Status]string{rules.Pass: "ok", rules.Fail: "FAIL", rules.Unknown: "??"}[v.Status]
		if v.Status == rules.Pass && r.Verdict != rules.Pass {
			continue
		}
		fmt.Fprintf(b, "  %-4s %s: %s\n", mark, v.Check, v.Message)
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
}
