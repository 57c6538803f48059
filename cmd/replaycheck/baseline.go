package main

import (
	"bytes"
	"context"
	"fmt"

	"github.com/spf13/cobra"

	"github.com/replaycheck/replaycheck/internal/atomicfile"
	"github.com/replaycheck/replaycheck/internal/harness/baseline"
	"github.com/replaycheck/replaycheck/report"
)

// baselineOptions are the flags of `replaycheck baseline`: run's flags that
// choose, run or re-check the suite, and where to write the baseline.
type baselineOptions struct {
	runOptions
	// OutFile is the file to write; "" or "-" writes the baseline to Out, and
	// the progress and summary to ErrOut.
	OutFile string
}

func newBaselineCmd() *cobra.Command {
	opts := &baselineOptions{}
	cmd := &cobra.Command{
		Use:   "baseline [PATH...]",
		Short: "Write the failures of a run as a baseline file for run --baseline",
		Long: `baseline runs the suite like run (same paths and flags), or re-checks a saved
run with --recheck, and writes every check that did not pass as a baseline
entry {scenario, target, rule}: one line each, sorted, the same bytes for the
same failures. Checks that could not judge (unknown) are listed too.

With the file, "replaycheck run --baseline FILE" passes while only listed
checks fail, fails on any failure the file does not list, and fails on a
listed check that now holds until its line is removed, so the baseline only
shrinks. Entries of scenarios or targets a run did not select are left alone.

Exit codes:
  0  the baseline was written, whatever failed
  2  bad usage, or a bad scenario or target file
  3  the harness or the target could not run, or the file could not be written`,
		Example: `  # adopt replaycheck on a gateway that still replays: record today's failures
  replaycheck baseline --target builtin:naive --output baseline.yaml
  replaycheck run --target builtin:naive --baseline baseline.yaml

  # from a saved run, without running again
  replaycheck baseline --recheck run.json > baseline.yaml`,
		RunE: func(cmd *cobra.Command, args []string) error {
			opts.Paths = args
			opts.Out, opts.ErrOut = cmd.OutOrStdout(), cmd.ErrOrStderr()
			return runBaseline(cmd.Context(), opts)
		},
	}
	addSuiteFlags(cmd, &opts.runOptions)
	cmd.Flags().StringVarP(&opts.OutFile, "output", "o", "", "write the baseline to FILE (default stdout)")
	return cmd
}

// runBaseline runs the suite and writes the baseline of its failures.
func runBaseline(ctx context.Context, opts *baselineOptions) error {
	toStdout := opts.OutFile == "" || opts.OutFile == "-"
	ro := opts.runOptions
	if toStdout {
		ro.Out = opts.ErrOut
	}
	suite, err := runSuite(ctx, &ro)
	if err != nil {
		return err
	}
	b := baseline.FromResults(suite.Results)
	var buf bytes.Buffer
	if err := b.Write(&buf); err != nil {
		return err
	}
	where := "stdout"
	if toStdout {
		if _, err := opts.Out.Write(buf.Bytes()); err != nil {
			return fmt.Errorf("writing baseline: %w", err)
		}
	} else {
		if err := atomicfile.Replace(opts.OutFile, buf.Bytes()); err != nil {
			return fmt.Errorf("writing baseline: %w", err)
		}
		where = opts.OutFile
	}
	if ro.Verbose > 0 {
		if err := report.WriteTable(ro.Out, suite, report.TableOptions{Verbose: true, Timelines: ro.Verbose > 1}); err != nil {
			return err
		}
	} else {
		fmt.Fprintln(ro.Out, report.TotalLine(suite))
	}
	t := suite.Totals()
	fmt.Fprintf(ro.Out, "baseline: %s from %s written to %s\n",
		countOf(len(b.Entries), "entry", "entries"), countOf(t.Fail+t.Unknown, "failing scenario run", "failing scenario runs"), where)
	return nil
}

func countOf(n int, one, many string) string {
	if n == 1 {
		return "1 " + one
	}
	return fmt.Sprintf("%d %s", n, many)
}
