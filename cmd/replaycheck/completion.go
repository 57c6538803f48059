package main

import (
	"os"
	"path/filepath"
	"slices"
	"strings"

	"github.com/spf13/cobra"

	"github.com/replaycheck/replaycheck/fakes/gateway"
	"github.com/replaycheck/replaycheck/internal/harness/explore"
)

// Shell completion ('replaycheck completion bash|zsh|fish|powershell', which
// cobra provides) of the values of the flags below: the functions here are
// registered with complete.

// complete registers fn as the completion of cmd's flag.
func complete(cmd *cobra.Command, flag string, fn cobra.CompletionFunc) {
	if err := cmd.RegisterFlagCompletionFunc(flag, fn); err != nil {
		panic("completing --" + flag + " of " + cmd.Name() + ": " + err.Error())
	}
}

// noCompletion completes a flag whose value is not a file with nothing.
func noCompletion(*cobra.Command, []string, string) ([]cobra.Completion, cobra.ShellCompDirective) {
	return nil, cobra.ShellCompDirectiveNoFileComp
}

// completeFiles completes files with one of exts (and directories).
func completeFiles(exts ...string) cobra.CompletionFunc {
	return func(*cobra.Command, []string, string) ([]cobra.Completion, cobra.ShellCompDirective) {
		return exts, cobra.ShellCompDirectiveFilterFileExt
	}
}

// completeScenarioPaths completes a command's PATH arguments: scenario
// files and directories.
var completeScenarioPaths = completeFiles("yaml", "yml")

// completeTarget completes --target: builtin:guarded, builtin:naive,
// builtin:SWITCH for each switch of the built-in gateway (after a comma,
// one more switch), and target files.
func completeTarget(_ *cobra.Command, _ []string, toComplete string) ([]cobra.Completion, cobra.ShellCompDirective) {
	const builtin = "builtin:"
	var out []cobra.Completion
	if before, _, ok := strings.Cut(toComplete, ","); ok && strings.HasPrefix(before, builtin) {
		// builtin:BUG,BUG: one more switch after the last comma.
		head := toComplete[:strings.LastIndex(toComplete, ",")+1]
		given := strings.Split(strings.TrimPrefix(head, builtin), ",")
		for _, b := range gateway.AllBugs() {
			if !slices.Contains(given, string(b.Bug)) {
				out = append(out, cobra.CompletionWithDesc(head+string(b.Bug), firstClause(b.Doc)))
			}
		}
		return out, cobra.ShellCompDirectiveNoFileComp | cobra.ShellCompDirectiveNoSpace
	}
	out = append(out,
		cobra.CompletionWithDesc(builtin+gateway.ModeGuarded, "the built-in gateway with every replay bug off"),
		cobra.CompletionWithDesc(builtin+gateway.ModeNaive, "the built-in gateway with every replay bug on"))
	for _, b := range gateway.AllBugs() {
		out = append(out, cobra.CompletionWithDesc(builtin+string(b.Bug), firstClause(b.Doc)))
	}
	if strings.HasPrefix(toComplete, builtin) {
		return out, cobra.ShellCompDirectiveNoFileComp
	}
	files, dirs := yamlFiles(toComplete)
	directive := cobra.ShellCompDirectiveNoFileComp
	if dirs {
		// A directory is completed without a space, to go on into it.
		directive |= cobra.ShellCompDirectiveNoSpace
	}
	return append(out, files...), directive
}

// yamlFiles lists the *.yaml and *.yml files and the directories whose path
// starts with prefix; dirs says whether there is a directory among them.
// A prefix that is no pattern (on Windows) lists nothing.
func yamlFiles(prefix string) (paths []cobra.Completion, dirs bool) {
	matches, err := filepath.Glob(globEscape(prefix) + "*")
	if err != nil {
		return nil, false
	}
	for _, m := range matches {
		fi, err := os.Stat(m)
		switch {
		case err != nil:
		case fi.IsDir():
			paths, dirs = append(paths, m+string(filepath.Separator)), true
		case strings.HasSuffix(m, ".yaml") || strings.HasSuffix(m, ".yml"):
			paths = append(paths, m)
		}
	}
	return paths, dirs
}

// globEscape escapes the metacharacters of filepath.Match in s.
func globEscape(s string) string {
	if filepath.Separator == '\\' {
		// No escapes on Windows; a literal * or ? cannot be in a name there.
		return s
	}
	return strings.NewReplacer(`\`, `\\`, `*`, `\*`, `?`, `\?`, `[`, `\[`).Replace(s)
}

// completeTag completes --tag with the tags of the scenarios the command
// would load: its PATH arguments, or the default suite.
func completeTag(_ *cobra.Command, args []string, _ string) ([]cobra.Completion, cobra.ShellCompDirective) {
	suite, err := loadSuite(args)
	if err != nil {
		return nil, cobra.ShellCompDirectiveNoFileComp
	}
	var tags []cobra.Completion
	for _, s := range suite {
		tags = append(tags, s.Tags...)
	}
	slices.Sort(tags)
	return slices.Compact(tags), cobra.ShellCompDirectiveNoFileComp
}

// completeKinds completes explore's --kinds, a comma-separated list: one
// more fault kind after the last comma.
func completeKinds(_ *cobra.Command, _ []string, toComplete string) ([]cobra.Completion, cobra.ShellCompDirective) {
	head := toComplete[:strings.LastIndex(toComplete, ",")+1]
	var out []cobra.Completion
	for _, k := range explore.Kinds() {
		out = append(out, cobra.CompletionWithDesc(head+k.Name, k.Doc))
	}
	return out, cobra.ShellCompDirectiveNoFileComp | cobra.ShellCompDirectiveNoSpace
}

// firstClause is doc up to its first semicolon, for a completion's
// description.
func firstClause(doc string) string {
	before, _, _ := strings.Cut(doc, ";")
	return before
}
