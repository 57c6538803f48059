package report

import (
	"fmt"
	"io"
	"strconv"
	"strings"

	"github.com/olekukonko/tablewriter"
	"github.com/olekukonko/tablewriter/tw"

	"github.com/replaycheck/replaycheck/internal/harness/explore"
)

// fingerprintRequest names the request or tool call a fingerprint row's
// fault went to, for example "follow_up chat stream" or "tools/call
// commit_write".
func fingerprintRequest(r explore.FingerprintRow) string {
	if r.Tool != "" {
		return "tools/call " + r.Tool
	}
	req := string(r.Request) + " " + r.Endpoint
	if r.Stream {
		req += " stream"
	}
	return req
}

// WriteFingerprintDiff writes what changed in a target's retry policy
// between a saved fingerprint (named by against) and this sweep's: a line
// saying how many rows changed, then one table row per changed aspect with
// its value before and after, and the rows only one side has. No change
// writes the line alone.
func WriteFingerprintDiff(w io.Writer, against string, changes []explore.PolicyChange, rows int) error {
	if len(changes) == 0 {
		_, err := fmt.Fprintf(w, "RETRY POLICY UNCHANGED against %s (%d rows)\n", against, rows)
		return err
	}
	if _, err := fmt.Fprintf(w, "RETRY POLICY CHANGED against %s: %d of %d rows\n", against, len(changes), rows); err != nil {
		return err
	}
	t := tablewriter.NewTable(w,
		tablewriter.WithHeaderAutoFormat(tw.Off),
		tablewriter.WithRowAutoWrap(tw.WrapNone),
		tablewriter.WithHeaderAutoWrap(tw.WrapNone),
	)
	t.Header([]string{"BASE", "REQUEST", "FAULT (EVERY ATTEMPT)", "CHANGED", "BEFORE", "AFTER"})
	for _, c := range changes {
		r := c.Row()
		lead := []string{r.Base, fingerprintRequest(r), r.Fault}
		var lines [][]string
		switch {
		case c.Before == nil:
			lines = [][]string{{"new row", "-", policySummary(*c.After)}}
		case c.After == nil:
			lines = [][]string{{"row gone", policySummary(*c.Before), "-"}}
		default:
			for _, a := range c.Aspects {
				lines = append(lines, []string{a, aspectValue(*c.Before, a), aspectValue(*c.After, a)})
			}
		}
		for _, l := range lines {
			if err := t.Append(append(lead, l...)); err != nil {
				return fmt.Errorf("writing fingerprint diff: %w", err)
			}
		}
	}
	if err := t.Render(); err != nil {
		return fmt.Errorf("writing fingerprint diff: %w", err)
	}
	return nil
}

// aspectValue renders one aspect of a fingerprint row.
func aspectValue(r explore.FingerprintRow, aspect string) string {
	switch aspect {
	case explore.AspectAttempts:
		return strconv.Itoa(r.Attempts)
	case explore.AspectGaps:
		return fmt.Sprintf("%s / %s / %s", roundMS(r.GapMin), roundMS(r.GapMedian), roundMS(r.GapMax))
	case explore.AspectRetryAfter:
		if r.RetryAfter == "" {
			return "-"
		}
		return r.RetryAfter
	case explore.AspectOutcome:
		return r.Outcome
	case explore.AspectToolRuns:
		return strconv.Itoa(r.Executions)
	case explore.AspectSpawns:
		return strconv.Itoa(r.Spawns)
	}
	return "?"
}

// policySummary renders a whole row in a few words, for a row one side has.
func policySummary(r explore.FingerprintRow) string {
	parts := []string{countOf(r.Attempts, "attempt"), r.Outcome, strconv.Itoa(r.Executions) + " tool runs"}
	if r.RetryAfter != "" {
		parts = append(parts, "Retry-After "+r.RetryAfter)
	}
	return strings.Join(parts, ", ")
}
