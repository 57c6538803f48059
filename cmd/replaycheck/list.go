package main

import (
	"context"
	"fmt"
	"io"
	"strings"

	"github.com/olekukonko/tablewriter"
	"github.com/olekukonko/tablewriter/tw"
	"github.com/spf13/cobra"

	"github.com/replaycheck/replaycheck/harness/run"
)

// listOptions are the flags of `replaycheck list`.
type listOptions struct {
	Paths  []string
	Filter string
	Tags   []string
	Shard  string
	Out    io.Writer
}

func newListCmd() *cobra.Command {
	opts := &listOptions{}
	cmd := &cobra.Command{
		Use:   "list [PATH...]",
		Short: "List the scenarios a run would select",
		Long: `list prints the scenarios that 'replaycheck run' with the same paths, --filter,
--tag and --shard would run: name, tags, the rules they check, whether they
need fakes and a target of their own, and their file.`,
		Example: `  replaycheck list
  replaycheck list --tag bug:replay-after-dispatch
  replaycheck list --shard 1/3`,
		RunE: func(cmd *cobra.Command, args []string) error {
			opts.Paths = args
			opts.Out = cmd.OutOrStdout()
			return runList(cmd.Context(), opts)
		},
	}
	f := cmd.Flags()
	f.StringVar(&opts.Filter, "filter", "", "only scenarios whose name matches this regular expression")
	f.StringArrayVar(&opts.Tags, "tag", nil, "only scenarios with this tag (repeatable: any of them)")
	f.StringVar(&opts.Shard, "shard", "", "only shard I of N (I/N, 1-based)")
	return cmd
}

// runList prints the selected scenarios.
func runList(_ context.Context, opts *listOptions) error {
	sel, err := parseSelection(opts.Filter, opts.Tags, opts.Shard)
	if err != nil {
		return asUsage(err)
	}
	all, err := loadSuite(opts.Paths)
	if err != nil {
		return asUsage(err)
	}
	picked := run.Select(all, sel)
	t := tablewriter.NewTable(opts.Out,
		tablewriter.WithHeaderAutoFormat(tw.Off),
		tablewriter.WithRowAutoWrap(tw.WrapNone),
	)
	t.Header([]string{"SCENARIO", "TAGS", "RULES", "OWN TARGET", "FILE"})
	for _, s := range picked {
		own := "no"
		if s.Isolated() {
			own = "yes"
		}
		if err := t.Append([]string{s.Name, strings.Join(s.Tags, ","), strings.Join(s.Expect.Rules, ","), own, fmt.Sprintf("%s:%d", s.File, s.Line)}); err != nil {
			return err
		}
	}
	if err := t.Render(); err != nil {
		return err
	}
	_, err = fmt.Fprintf(opts.Out, "%d of %d scenarios\n", len(picked), len(all))
	return err
}
