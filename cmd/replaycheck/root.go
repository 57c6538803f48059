package main

import (
	"fmt"
	"io"
	"os"
	"strings"

	"github.com/spf13/cobra"
)

// version is set at build time with -ldflags "-X main.version=…".
var version = "dev"

func newRootCmd(in io.Reader, out, errOut io.Writer) *cobra.Command {
	root := &cobra.Command{
		Use:   "replaycheck",
		Short: "Prove whether a gateway or agent runs an MCP tool twice after a failure",
		Long: `replaycheck runs scenarios against an LLM gateway or agent client through two
fakes it owns — a ledger MCP server and a faulting model upstream — and checks
the counted writes and upstream calls against replay rules.

Exit codes:
  0    every rule held
  1    a replay rule was broken
  2    bad usage, or a bad scenario or target file
  3    the harness or the target could not run
  130  interrupted (Ctrl-C or SIGTERM); run's reports hold what ended`,
		Example: `  # run the built-in suite on the built-in guarded gateway
  replaycheck run

  # which replaycheck this is (as 'replaycheck version')
  replaycheck --version

  # run the fakes standalone for a hand-made reproduction
  replaycheck serve --ledger ledger.txt --upstream-log upstream.log --flags-dir .`,
		SilenceUsage: true,
		// Flags before the command name are the root's: "replaycheck -v run" is
		// refused as -v, not read as "run" being its value.
		TraverseChildren: true,
		SilenceErrors:    true,
		// --version prints what `replaycheck version` does.
		Version: versionString(),
	}
	// Cobra parses it as a template: braces would be read as actions.
	root.SetVersionTemplate(strings.NewReplacer("{{", `{{"{{"}}`).Replace(versionLine()))
	root.SetIn(in)
	root.SetOut(out)
	root.SetErr(errOut)
	// --version has no -v: -v is --verbose wherever a command has one (and
	// before its name, as in "replaycheck -v run"), an unknown flag elsewhere.
	root.Flags().Bool("version", false, "print the version of replaycheck (as 'replaycheck version')")
	root.SetFlagErrorFunc(func(c *cobra.Command, err error) error {
		if strings.Contains(err.Error(), "unknown shorthand flag: 'v'") {
			where := c.CommandPath() + " does not take it"
			if !c.HasParent() {
				where = "given after the command name, as in 'replaycheck run -v'"
			}
			err = fmt.Errorf("%w (-v is --verbose, %s; the version is --version or 'replaycheck version')", err, where)
		}
		return asUsage(err)
	})
	root.AddCommand(
		newRunCmd(),
		newReportCmd(),
		newExploreCmd(),
		newBaselineCmd(),
		newValidateCmd(),
		newListCmd(),
		newRulesCmd(),
		newSchemaCmd(),
		newVersionCmd(),
		newServeCmd(),
		newGatewayCmd(),
		newLedgerStdioCmd(),
		newGatewayProcessCmd(),
	)
	describeEnv(root)
	root.PersistentPreRunE = func(cmd *cobra.Command, _ []string) error {
		// Flags before the command name are the root's (TraverseChildren):
		// "replaycheck --version run" would run without saying the version.
		if v, _ := root.Flags().GetBool("version"); v && cmd != root {
			return asUsage(fmt.Errorf("--version takes no command: 'replaycheck --version' or 'replaycheck version' prints the version, 'replaycheck %s' runs", cmd.Name()))
		}
		return applyEnv(cmd.Flags(), os.LookupEnv)
	}
	return root
}

// isCobraUsage reports whether err is one of cobra's own usage errors, which
// it returns unwrapped (unknown command, wrong argument count, a flag
// before the command name that the root does not take).
func isCobraUsage(err error) bool {
	msg := err.Error()
	return strings.HasPrefix(msg, "unknown command") ||
		strings.HasPrefix(msg, "accepts ") ||
		strings.HasPrefix(msg, "requires ") ||
		strings.HasPrefix(msg, "unknown flag") ||
		strings.HasPrefix(msg, "unknown shorthand flag") ||
		strings.HasPrefix(msg, "if any flags in the group") ||
		strings.HasPrefix(msg, "invalid argument")
}
