package main

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"strings"

	"github.com/olekukonko/tablewriter"
	"github.com/olekukonko/tablewriter/tw"
	"github.com/spf13/cobra"

	"github.com/replaycheck/replaycheck/internal/harness/run"
	"github.com/replaycheck/replaycheck/internal/harness/targetfile"
)

// listOptions are the flags of `replaycheck list`.
type listOptions struct {
	Paths  []string
	Filter string
	Tags   []string
	Shard  string
	// Targets, when given, keeps the scenarios that run on them, sharded
	// as run shards them.
	Targets []string
	// AsJSON prints the scenarios as a JSON array (--json) instead of a
	// table.
	AsJSON bool
	Out    io.Writer
}

// listedScenario is one scenario of `list --json`.
type listedScenario struct {
	Name        string   `json:"name"`
	Description string   `json:"description,omitempty"`
	Tags        []string `json:"tags"`
	Rules       []string `json:"rules"`
	// OwnTarget reports that the scenario gets fakes and a target of its
	// own: it needs them, or a --target forwards to a real MCP server.
	OwnTarget bool `json:"own_target"`
	// MCP is the MCP server its runs use on the --target targets (see
	// mcpSide): "ledger", "forwarded to URL", "forwarded to command ARGV"
	// or "cassette FILE", naming the target when a target decides.
	MCP string `json:"mcp"`
	// Protocol is the MCP protocol version its runs speak on the --target
	// targets (see mcpProtocol): the pinned version, or "negotiated",
	// naming the target when a target decides.
	Protocol string `json:"protocol"`
	// Client reports a client scenario (expect.client): it runs on client
	// targets only.
	Client bool   `json:"client"`
	File   string `json:"file"`
	Line   int    `json:"line"`
}

func newListCmd() *cobra.Command {
	opts := &listOptions{}
	cmd := &cobra.Command{
		Use:   "list [PATH...]",
		Short: "List the scenarios a run would select",
		Long: `list prints the scenarios that 'replaycheck run' with the same paths, --filter,
--tag and --shard would run: name, tags, the rules they check, whether they
need fakes and a target of their own, the MCP server their runs use (the
ledger, a real server they or a --target forward to, or an MCP cassette),
the MCP protocol version they pin (mcp.protocol, theirs or a --target's) or
that it is negotiated, and their file. run shards the
scenarios that run on its targets: give list the same --target (run's
default is builtin:guarded) to list the shard run runs.`,
		Example: `  replaycheck list
  replaycheck list --tag bug:replay-after-dispatch
  replaycheck list --shard 1/3 --target builtin:guarded
  replaycheck list --json | jq -r '.[].name'`,
		RunE: func(cmd *cobra.Command, args []string) error {
			opts.Paths = args
			opts.Out = cmd.OutOrStdout()
			return runList(cmd.Context(), opts)
		},
	}
	f := cmd.Flags()
	f.Var((*patternFlag)(&opts.Filter), "filter", "only scenarios whose name matches this regular expression")
	f.StringArrayVar(&opts.Tags, "tag", nil, "only scenarios with this tag (repeatable: any of them)")
	f.Var((*shardFlag)(&opts.Shard), "shard", "only shard I of N (1-based)")
	f.StringArrayVar(&opts.Targets, "target", nil, "only scenarios that run on this target, sharded as run shards them (repeatable)")
	f.BoolVar(&opts.AsJSON, "json", false, "print the selected scenarios as a JSON array, for tools built on top")
	bindEnv(cmd, "filter", "tag", "shard")
	cmd.ValidArgsFunction = completeScenarioPaths
	complete(cmd, "tag", completeTag)
	complete(cmd, "target", completeTarget)
	complete(cmd, "filter", noCompletion)
	complete(cmd, "shard", noCompletion)
	return cmd
}

// runList prints the selected scenarios.
func runList(_ context.Context, opts *listOptions) error {
	sel, err := parseSelection(opts.Filter, opts.Tags, opts.Shard)
	if err != nil {
		return asUsage(err)
	}
	if sel.Targets, err = resolveTargets(opts.Targets, targetfile.Options{}); err != nil {
		return err
	}
	all, err := loadSuite(opts.Paths)
	if err != nil {
		return asUsage(err)
	}
	picked := run.Select(all, sel)
	if opts.AsJSON {
		out := make([]listedScenario, len(picked))
		for i, s := range picked {
			out[i] = listedScenario{Name: s.Name, Description: s.Description, Tags: orEmpty(s.Tags), Rules: orEmpty(s.Expect.Rules),
				OwnTarget: ownTarget(s, sel.Targets), MCP: mcpSide(s, sel.Targets), Protocol: mcpProtocol(s, sel.Targets), Client: s.Expect.Client != nil, File: s.File, Line: s.Line}
		}
		return writeIndentedJSON(opts.Out, out)
	}
	t := tablewriter.NewTable(opts.Out,
		tablewriter.WithHeaderAutoFormat(tw.Off),
		tablewriter.WithRowAutoWrap(tw.WrapNone),
	)
	t.Header([]string{"SCENARIO", "TAGS", "RULES", "OWN TARGET", "MCP", "PROTOCOL", "FILE"})
	for _, s := range picked {
		own := "no"
		if ownTarget(s, sel.Targets) {
			own = "yes"
		}
		if err := t.Append([]string{s.Name, strings.Join(s.Tags, ","), strings.Join(s.Expect.Rules, ","), own, mcpSide(s, sel.Targets), mcpProtocol(s, sel.Targets), fmt.Sprintf("%s:%d", s.File, s.Line)}); err != nil {
			return err
		}
	}
	if err := t.Render(); err != nil {
		return err
	}
	_, err = fmt.Fprintf(opts.Out, "%d of %d scenarios\n", len(picked), len(all))
	return err
}

// orEmpty returns ss, or an empty slice for nil (so JSON has [] not null).
func orEmpty(ss []string) []string {
	if ss == nil {
		return []string{}
	}
	return ss
}

// writeIndentedJSON writes v as indented JSON and a newline.
func writeIndentedJSON(w io.Writer, v any) error {
	enc := json.NewEncoder(w)
	enc.SetIndent("", "  ")
	return enc.Encode(v)
}
