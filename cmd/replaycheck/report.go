package main

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"

	"github.com/spf13/cobra"

	"github.com/replaycheck/replaycheck/internal/atomicfile"
	"github.com/replaycheck/replaycheck/internal/inputfile"
	"github.com/replaycheck/replaycheck/report"
)

// reportFiles are the report files a command writes; "" writes none, and
// stdoutName ("-") writes that report to the command's Out.
type reportFiles struct {
	JUnit    string
	JSON     string
	Markdown string
	// HTML is the self-contained HTML report with each run's sequence
	// diagram (--html).
	HTML string
	// Getenv reads the environment ($GITHUB_STEP_SUMMARY, $COLUMNS); nil
	// means os.Getenv.
	Getenv func(string) string
}

// stdoutName is the report file name that means stdout.
const stdoutName = "-"

// addReportFlags adds --junit, --json and --markdown.
func addReportFlags(cmd *cobra.Command, files *reportFiles) {
	f := cmd.Flags()
	f.StringVar(&files.JUnit, "junit", "", "write a JUnit XML report to FILE (- for stdout)")
	f.StringVar(&files.JSON, "json", "", "write the histories and verdicts as JSON to FILE (- for stdout)")
	f.StringVar(&files.Markdown, "markdown", "", "write a Markdown summary to FILE (- for stdout; appended when FILE is $GITHUB_STEP_SUMMARY)")
	f.StringVar(&files.HTML, "html", "", "write a self-contained HTML report with each scenario's sequence diagram to FILE (- for stdout)")
}

// toStdout names the flag of the report written to stdout; "" for none.
func (files reportFiles) toStdout() string {
	for _, f := range files.named() {
		if f.path == stdoutName {
			return f.flag
		}
	}
	return ""
}

// checkStdout refuses more than one report on stdout.
func (files reportFiles) checkStdout() error {
	var flags []string
	for _, f := range files.named() {
		if f.path == stdoutName {
			flags = append(flags, f.flag+" -")
		}
	}
	if len(flags) > 1 {
		return asUsage(fmt.Errorf("%s: only one report can be written to stdout; give the others a FILE", strings.Join(flags, " and ")))
	}
	return nil
}

func (files reportFiles) named() []struct{ flag, path string } {
	return []struct{ flag, path string }{{"--junit", files.JUnit}, {"--json", files.JSON}, {"--markdown", files.Markdown}, {"--html", files.HTML}}
}

func (files reportFiles) getenv() func(string) string {
	if files.Getenv == nil {
		return os.Getenv
	}
	return files.Getenv
}

// write renders suite into each requested file, the one named stdoutName
// to out. JUnit, JSON and HTML
// replace their file whole (a temporary file renamed over it, so a failed write
// leaves no truncated report); the Markdown summary does too, but is
// appended to $GITHUB_STEP_SUMMARY, which other steps share, and capped so
// that the file stays under GitHub's 1 MiB limit.
func (files reportFiles) write(out io.Writer, suite report.Suite) error {
	getenv := files.getenv()
	var errs []error
	for _, f := range []struct {
		path  string
		write func(io.Writer, report.Suite) error
	}{
		{files.JUnit, report.WriteJUnit},
		{files.JSON, report.WriteJSON},
		{files.HTML, report.WriteHTML},
	} {
		if f.path == "" {
			continue
		}
		var b bytes.Buffer
		if err := f.write(&b, suite); err != nil {
			errs = append(errs, err)
			continue
		}
		if f.path == stdoutName {
			errs = append(errs, writeStdout(out, b.Bytes()))
			continue
		}
		if err := atomicfile.Replace(f.path, b.Bytes()); err != nil {
			errs = append(errs, err)
		}
	}
	if files.Markdown == stdoutName {
		var b bytes.Buffer
		if err := report.WriteMarkdown(&b, suite); err != nil {
			errs = append(errs, err)
		} else {
			errs = append(errs, writeStdout(out, b.Bytes()))
		}
	} else if files.Markdown != "" {
		if err := writeMarkdown(files.Markdown, isStepSummary(files.Markdown, getenv("GITHUB_STEP_SUMMARY")), suite); err != nil {
			errs = append(errs, err)
		}
	}
	if err := errors.Join(errs...); err != nil {
		return fmt.Errorf("writing reports: %w", err)
	}
	return nil
}

// tableError names a failed write of the terminal report (the table and the
// total line); nil stays nil.
func tableError(err error) error {
	if err == nil {
		return nil
	}
	return fmt.Errorf("writing the table: %w", err)
}

// writeStdout writes a report to out, the command's stdout.
func writeStdout(out io.Writer, b []byte) error {
	if out == nil {
		return errors.New("writing a report to stdout: no stdout")
	}
	if _, err := out.Write(b); err != nil {
		return fmt.Errorf("writing a report to stdout: %w", err)
	}
	return nil
}

// isStepSummary reports whether path names the step summary file summary
// ($GITHUB_STEP_SUMMARY; "" when not in GitHub Actions).
func isStepSummary(path, summary string) bool {
	if summary == "" {
		return false
	}
	if filepath.Clean(path) == filepath.Clean(summary) {
		return true
	}
	a, err1 := os.Stat(path)
	b, err2 := os.Stat(summary)
	return err1 == nil && err2 == nil && os.SameFile(a, b)
}

// writeMarkdown writes suite's Markdown summary to path: appended, within
// what is left of report.MarkdownLimit, when appending; otherwise replacing
// the file.
func writeMarkdown(path string, appending bool, suite report.Suite) error {
	if !appending {
		var b bytes.Buffer
		if err := report.WriteMarkdown(&b, suite); err != nil {
			return err
		}
		return atomicfile.Replace(path, b.Bytes())
	}
	f, err := os.OpenFile(path, os.O_WRONLY|os.O_APPEND|os.O_CREATE, 0o644)
	if err != nil {
		return fmt.Errorf("writing %s: %w", path, err)
	}
	fi, err := f.Stat()
	if err != nil {
		f.Close()
		return fmt.Errorf("writing %s: %w", path, err)
	}
	var b bytes.Buffer
	if fi.Size() > 0 {
		b.WriteString("\n")
	}
	// What the summary already holds counts against the limit; a summary
	// over it is still given its heading and total line.
	left := max(report.MarkdownLimit-int(fi.Size())-b.Len(), 1)
	if err := report.WriteMarkdownWith(&b, suite, report.MarkdownOptions{MaxBytes: left}); err != nil {
		f.Close()
		return err
	}
	if _, err := f.Write(b.Bytes()); err != nil {
		f.Close()
		return fmt.Errorf("writing %s: %w", path, err)
	}
	if err := f.Close(); err != nil {
		return fmt.Errorf("writing %s: %w", path, err)
	}
	return nil
}

// reportMergeOptions are the arguments and flags of `replaycheck report
// merge`.
type reportMergeOptions struct {
	// Inputs are the JSON reports to merge, in order.
	Inputs []string
	reportFiles
	Verbose bool
	// Diff is a matrix saved by --json to compare the merged matrix with
	// (--diff); merging a run's reports, it must be "".
	Diff string
	// OutDir is where a matrix's parts' reproductions are copied (--out);
	// "" means matrix-reproductions next to the first report file, or
	// none. Merging a run's reports, it must be "".
	OutDir string

	Out    io.Writer
	ErrOut io.Writer
}

func newReportCmd() *cobra.Command {
	cmd := &cobra.Command{
		Use:   "report",
		Short: "Work with saved reports (merge the JSON reports of sharded runs)",
		Long: `report works with the JSON reports that run --json saves, without running
anything again.`,
		Example: `  # one report of three CI shards
  replaycheck report merge shard-1.json shard-2.json shard-3.json --junit junit.xml --markdown summary.md`,
		Args: cobra.NoArgs,
	}
	cmd.AddCommand(newReportMergeCmd())
	return cmd
}

func newReportMergeCmd() *cobra.Command {
	opts := &reportMergeOptions{}
	cmd := &cobra.Command{
		Use:   "merge REPORT.json...",
		Short: "Merge the JSON reports of sharded runs (or the parts of a matrix) into one report",
		Long: `merge joins the JSON reports of sharded runs (run --shard I/N --json FILE) into
one suite, as if one run had produced it, and writes it as the terminal table
and as any of --junit, --json, --markdown and --html (each scenario's
sequence diagram, drawn from the saved histories). Given the parts of a
matrix (matrix --shard I/N --json FILE), it joins their agents into one
matrix, written as its table and as any of --json, --markdown and --html, and
with --diff OLD.json compared with a saved matrix as matrix --diff does (exit 1
when a cell turned DUPLICATE or LOST). A matrix's parts must be its shards
1..N, each once, of one seed and one list of kinds. Their reproductions are
copied into --out DIR (by default matrix-reproductions next to the first
report file), shard I of N's under shard-I-of-N/, and the cells name the
copies; a part's are read from the directory its JSON names, looked for
first next to the part's file (where a shard's downloaded artifact has
it). The saved verdicts are kept (use run --recheck on the merged JSON to check the histories again); the totals
count every shard's results. A scenario on a target found in two reports is
refused: merge reports of disjoint shards of one suite. Reports judged
against a baseline merge only with reports judged against the same file.
A shard's run that did not complete (bad input, a target that did not start,
an interrupt) is kept in the merged report with its error.

Exit codes:
  0  every rule held in every report
  1  a rule was broken, or a check could not judge; with a baseline, a
     failure it does not list or an entry that now passes; a matrix's parts
     with --diff, a cell turned DUPLICATE or LOST (a matrix's cells alone
     exit 0, whatever they say)
  2  bad usage, a report that cannot be read or is not a run's (an explore
     report), reports that hold no result, or a scenario in two reports; a
     matrix's parts that are not its shards 1..N each once (the missing
     ones named), or a reproduction a part names that is not beside it
  3  a shard's run did not complete (the merged report says why)`,
		Example: `  # the reports of three CI shards as one JUnit file and one summary
  replaycheck report merge shard-1.json shard-2.json shard-3.json \
    --junit junit.xml --markdown "$GITHUB_STEP_SUMMARY" --json run.json --html report.html

  # a matrix built by two CI jobs, compared with the last one saved
  replaycheck report merge part-1.json part-2.json --html matrix.html --diff matrix.json`,
		Args: cobra.MinimumNArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			opts.Inputs = args
			opts.Out, opts.ErrOut = cmd.OutOrStdout(), cmd.ErrOrStderr()
			return runReportMerge(cmd.Context(), opts)
		},
	}
	addReportFlags(cmd, &opts.reportFiles)
	cmd.Flags().BoolVarP(&opts.Verbose, "verbose", "v", false, "print every scenario's timeline")
	cmd.Flags().StringVar(&opts.Diff, "diff", "", "merging a matrix's parts, compare with a matrix saved by --json FILE; a cell that turned DUPLICATE or LOST exits 1")
	cmd.Flags().StringVar(&opts.OutDir, "out", "", "merging a matrix's parts, copy their reproductions into DIR (default: matrix-reproductions next to the first report file)")
	complete(cmd, "diff", completeFiles("json"))
	return cmd
}

// runReportMerge reads, merges and writes the reports.
func runReportMerge(_ context.Context, opts *reportMergeOptions) error {
	if err := opts.checkStdout(); err != nil {
		return err
	}
	if handled, err := mergeMatrices(opts); handled {
		return err
	}
	if opts.Diff != "" {
		return asUsage(errors.New("--diff compares matrices: the reports to merge are a run's, not a matrix's parts"))
	}
	if opts.OutDir != "" {
		return asUsage(errors.New("--out takes a matrix's reproductions: the reports to merge are a run's, not a matrix's parts"))
	}
	table := opts.Out
	if opts.toStdout() != "" {
		table = opts.ErrOut
	}
	suites := make([]report.Suite, len(opts.Inputs))
	for i, path := range opts.Inputs {
		s, err := readReport(path)
		if errors.Is(err, report.ErrExploreReport) {
			return asUsage(fmt.Errorf("%w: report merge joins the reports of run --shard; an explore sweep's shards are not merged", err))
		}
		if err != nil {
			return asUsage(err)
		}
		suites[i] = s
	}
	merged, err := report.Merge(opts.Inputs, suites)
	if err != nil {
		return asUsage(err)
	}
	if len(merged.Results) == 0 && merged.Abort == nil {
		// Only empty shards, or files that are not what run --json writes:
		// no green from nothing.
		return asUsage(fmt.Errorf("merging reports: no result in %s: nothing to merge (were they written by run --json of shards that ran scenarios?)", countOf(len(opts.Inputs), "report", "reports")))
	}
	// As in run, a report that cannot be written does not hide the verdict.
	werr := errors.Join(tableError(report.WriteTable(table, merged, report.TableOptions{Verbose: opts.Verbose})), opts.write(opts.Out, merged))
	if merged.Abort != nil {
		return errors.Join(fmt.Errorf("a run did not complete: %s", merged.Abort.Error), werr)
	}
	return errors.Join(verdictOutcome(merged), werr)
}

// readReport reads a JSON report saved by run --json.
func readReport(path string) (report.Suite, error) {
	f, err := inputfile.Open(path)
	if err != nil {
		return report.Suite{}, err
	}
	defer f.Close()
	s, err := report.ReadJSON(f)
	if err != nil {
		return report.Suite{}, fmt.Errorf("%s: %w", path, err)
	}
	return s, nil
}
