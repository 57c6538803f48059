package main

import (
	"context"
	"fmt"
	"io"
	"strings"

	"github.com/spf13/cobra"

	"github.com/replaycheck/replaycheck/harness/rules"
)

// rulesOptions are the flags of `replaycheck rules`.
type rulesOptions struct {
	// AsMarkdown and AsJSON print the catalogue as Markdown (--markdown)
	// or JSON (--json) instead of a table.
	AsMarkdown bool
	AsJSON     bool
	Out        io.Writer
}

func newRulesCmd() *cobra.Command {
	opts := &rulesOptions{}
	cmd := &cobra.Command{
		Use:   "rules",
		Short: "Print the replay rules and the seed case each comes from",
		Long: `rules prints every replay rule a scenario can name in expect.rules: what it
requires, when it cannot judge (unknown, never a pass), and the seed case it
comes from. --markdown prints rules.md; --json the catalogue as a JSON array
of {name, doc, seed}.`,
		Example: `  replaycheck rules
  replaycheck rules --markdown > rules.md
  replaycheck rules --json | jq -r '.[].name'`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			opts.Out = cmd.OutOrStdout()
			return runRules(cmd.Context(), opts)
		},
	}
	cmd.Flags().BoolVar(&opts.AsMarkdown, "markdown", false, "print the catalogue as Markdown (rules.md)")
	cmd.Flags().BoolVar(&opts.AsJSON, "json", false, "print the catalogue as JSON, for tools built on top")
	cmd.MarkFlagsMutuallyExclusive("markdown", "json")
	return cmd
}

// runRules prints the rule catalogue.
func runRules(_ context.Context, opts *rulesOptions) error {
	if opts.AsJSON {
		type rule struct {
			Name string `json:"name"`
			Doc  string `json:"doc"`
			Seed string `json:"seed"`
		}
		var out []rule
		for _, r := range rules.All() {
			out = append(out, rule{r.Name, r.Doc, r.Seed})
		}
		return writeIndentedJSON(opts.Out, out)
	}
	if opts.AsMarkdown {
		_, err := io.WriteString(opts.Out, rules.Markdown())
		return err
	}
	var b strings.Builder
	for i, r := range rules.All() {
		if i > 0 {
			b.WriteString("\n")
		}
		fmt.Fprintf(&b, "%s\n%s  seed: %s\n", r.Name, wrap(r.Doc, 78, "  "), r.Seed)
	}
	_, err := io.WriteString(opts.Out, b.String())
	return err
}

// wrap breaks text into lines of at most width, each with indent.
func wrap(text string, width int, indent string) string {
	var b strings.Builder
	line := indent
	for _, w := range strings.Fields(text) {
		if len(line) > len(indent) && len(line)+1+len(w) > width {
			b.WriteString(line + "\n")
			line = indent
		}
		if len(line) > len(indent) {
			line += " "
		}
		line += w
	}
	b.WriteString(line + "\n")
	return b.String()
}
