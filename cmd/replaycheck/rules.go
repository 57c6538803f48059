package main

import (
	"context"
	"fmt"
	"io"
	"strings"

	"github.com/spf13/cobra"

	"github.com/replaycheck/replaycheck/internal/harness/rules"
	"github.com/replaycheck/replaycheck/internal/suggest"
)

// rulesOptions are the flags and argument of `replaycheck rules`.
type rulesOptions struct {
	// Name is the one rule to print; "" lists the catalogue.
	Name string
	// AsMarkdown and AsJSON print the catalogue (or the rule Name) as
	// Markdown (--markdown) or JSON (--json) instead of text.
	AsMarkdown bool
	AsJSON     bool
	Out        io.Writer
}

func newRulesCmd() *cobra.Command {
	opts := &rulesOptions{}
	cmd := &cobra.Command{
		Use:   "rules [NAME]",
		Short: "List the replay rules; with NAME, print one with its fix and an example",
		Long: `rules lists every replay rule a scenario can name in expect.rules, one line
each. rules NAME prints one rule: what it requires, when it cannot judge
(unknown, never a pass), the seed case it comes from, what a fix looks like
and a small scenario that exercises it.

--markdown prints the catalogue (or the rule NAME) as Markdown: the whole of
it is rules.md. --json prints it as JSON: an array of {name, summary, doc,
seed, fix, example}, or that one object for NAME.`,
		Example: `  replaycheck rules
  replaycheck rules no-replay-after-dispatch
  replaycheck rules --markdown > rules.md
  replaycheck rules --json | jq -r '.[].name'

  # a rule's example as a scenario file, run where the bug is
  replaycheck rules no-splice --json | jq -r .example > no-splice.yaml
  replaycheck run no-splice.yaml --target builtin:naive`,
		Args: cobra.MaximumNArgs(1),
		ValidArgsFunction: func(_ *cobra.Command, args []string, _ string) ([]string, cobra.ShellCompDirective) {
			if len(args) > 0 {
				return nil, cobra.ShellCompDirectiveNoFileComp
			}
			var names []string
			for _, r := range rules.All() {
				names = append(names, r.Name+"\t"+r.Summary)
			}
			return names, cobra.ShellCompDirectiveNoFileComp
		},
		RunE: func(cmd *cobra.Command, args []string) error {
			if len(args) == 1 {
				opts.Name = args[0]
			}
			opts.Out = cmd.OutOrStdout()
			return runRules(cmd.Context(), opts)
		},
	}
	cmd.Flags().BoolVar(&opts.AsMarkdown, "markdown", false, "print the catalogue as Markdown (rules.md), or the rule NAME's section of it")
	cmd.Flags().BoolVar(&opts.AsJSON, "json", false, "print the catalogue, or the rule NAME, as JSON, for tools built on top")
	cmd.MarkFlagsMutuallyExclusive("markdown", "json")
	return cmd
}

// ruleJSON is a rule as `rules --json` prints it.
type ruleJSON struct {
	Name    string `json:"name"`
	Summary string `json:"summary"`
	Doc     string `json:"doc"`
	Seed    string `json:"seed"`
	Fix     string `json:"fix"`
	Example string `json:"example"`
}

// runRules prints the rule catalogue, or the rule opts.Name; an unknown
// name is a usage error that lists the names.
func runRules(_ context.Context, opts *rulesOptions) error {
	all := rules.All()
	if opts.Name != "" {
		r, ok := rules.Lookup(opts.Name)
		if !ok {
			return asUsage(unknownRule(opts.Name))
		}
		all = []rules.Rule{r}
	}
	var out []ruleJSON
	for _, r := range all {
		out = append(out, ruleJSON{r.Name, r.Summary, r.Doc, r.Seed, r.Fix, r.Example})
	}
	var b strings.Builder
	switch {
	case opts.AsJSON && opts.Name != "":
		return writeIndentedJSON(opts.Out, out[0])
	case opts.AsJSON:
		return writeIndentedJSON(opts.Out, out)
	case opts.AsMarkdown && opts.Name != "":
		b.WriteString(all[0].Markdown())
	case opts.AsMarkdown:
		b.WriteString(rules.Markdown())
	case opts.Name != "":
		writeRule(&b, all[0])
	default:
		fmt.Fprintf(&b, "%d replay rules (a scenario names those that must hold in expect.rules):\n", len(all))
		width := 0
		for _, r := range all {
			width = max(width, len(r.Name))
		}
		for _, r := range all {
			fmt.Fprintf(&b, "  %-*s  %s\n", width, r.Name, r.Summary)
		}
		b.WriteString("\n'replaycheck rules NAME' prints one rule: what it requires, when it cannot judge,\nthe seed case it comes from, what a fix looks like and an example scenario.\n")
	}
	_, err := io.WriteString(opts.Out, b.String())
	return err
}

// writeRule writes one rule as `rules NAME` prints it.
func writeRule(b *strings.Builder, r rules.Rule) {
	requires, cannotJudge := r.Requirement()
	fmt.Fprintf(b, "%s: %s\n", r.Name, r.Summary)
	for _, part := range []struct{ head, text string }{
		{"requires", requires},
		{"cannot judge (the verdict is unknown, never a pass)", cannotJudge},
		{"seed", r.Seed},
		{"fix", r.Fix},
	} {
		if part.text != "" {
			fmt.Fprintf(b, "\n%s:\n%s", part.head, wrap(part.text, 78, "  "))
		}
	}
	b.WriteString("\nexample (a scenario: save it as FILE and run replaycheck run FILE --target TARGET):\n")
	for _, line := range strings.SplitAfter(strings.TrimSuffix(r.Example, "\n"), "\n") {
		b.WriteString("  " + line)
	}
	b.WriteString("\n")
}

// unknownRule says that name is no rule, with the rules it may have meant
// and every rule's name.
func unknownRule(name string) error {
	mean := ""
	if similar := suggest.Similar(name, rules.Names()); len(similar) > 0 {
		mean = "; did you mean " + strings.Join(similar, " or ") + "?"
	}
	return fmt.Errorf("unknown rule %q%s\nthe rules: %s", name, mean, strings.Join(rules.Names(), ", "))
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
