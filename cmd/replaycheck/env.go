package main

import (
	"errors"
	"fmt"
	"slices"
	"strings"

	"github.com/spf13/cobra"
	"github.com/spf13/pflag"
)

// envAnnotation marks a flag that an environment variable sets; its value
// is the variable's name.
const envAnnotation = "replaycheck_env"

// envName is the variable that sets a flag: REPLAYCHECK_ and the flag's
// name in capitals, dashes as underscores (--keep-run-dirs:
// REPLAYCHECK_KEEP_RUN_DIRS).
func envName(flag string) string {
	return "REPLAYCHECK_" + strings.ToUpper(strings.ReplaceAll(flag, "-", "_"))
}

// bindEnv lets the named flags of cmd be set by their variables (envName)
// when the command line does not give them; applyEnv does it.
func bindEnv(cmd *cobra.Command, flags ...string) {
	for _, name := range flags {
		if err := cmd.Flags().SetAnnotation(name, envAnnotation, []string{envName(name)}); err != nil {
			panic(fmt.Sprintf("binding --%s of %s to the environment: %v", name, cmd.Name(), err))
		}
	}
}

// applyEnv sets each flag of flags bound by bindEnv that the command line
// did not give from its variable, which lookup reads; an unset or empty
// variable leaves the flag alone, and a repeatable flag takes a
// comma-separated list. A bad value is a usage error naming the variable.
func applyEnv(flags *pflag.FlagSet, lookup func(string) (string, bool)) error {
	var errs []error
	flags.VisitAll(func(f *pflag.Flag) {
		names := f.Annotations[envAnnotation]
		if len(names) == 0 || f.Changed {
			return
		}
		v, ok := lookup(names[0])
		if !ok || v == "" {
			return
		}
		var err error
		if list, ok := f.Value.(pflag.SliceValue); ok {
			err = list.Replace(strings.Split(v, ","))
		} else {
			err = f.Value.Set(v)
		}
		if err != nil {
			errs = append(errs, fmt.Errorf("%s=%q (for --%s): %w", names[0], v, f.Name, err))
		}
	})
	return asUsage(errors.Join(errs...))
}

// describeEnv adds to the help of root the variables the commands under it
// bind, each with the commands whose flag it sets, and to the help of each
// of those commands the names of its variables.
func describeEnv(root *cobra.Command) {
	var names []string
	flag, commands := map[string]string{}, map[string][]string{}
	for _, c := range root.Commands() {
		var own []string
		c.Flags().VisitAll(func(f *pflag.Flag) {
			if v := f.Annotations[envAnnotation]; len(v) > 0 {
				if _, seen := commands[v[0]]; !seen {
					names = append(names, v[0])
				}
				flag[v[0]] = f.Name
				commands[v[0]] = append(commands[v[0]], c.Name())
				own = append(own, v[0])
			}
		})
		if len(own) > 0 {
			c.Long += "\n\nEnvironment (see 'replaycheck --help'): these variables set the flags\nof the same name the command line does not give:\n" + strings.TrimSuffix(wrap(strings.Join(own, ", "), 78, "  "), "\n")
		}
	}
	slices.Sort(names)
	var b strings.Builder
	b.WriteString(`

Environment:
  REPLAYCHECK_<FLAG> sets --<flag> when the command line does not give it
  (the command line wins; an empty variable is unset; a repeatable flag
  takes a comma-separated list). The keys in $REPLAYCHECK_MASTER_KEY
  (gateway) and $REPLAYCHECK_CONTROL_KEY (serve) are never printed.
`)
	for _, n := range names {
		fmt.Fprintf(&b, "  %-24s --%s of %s\n", n, flag[n], strings.Join(commands[n], ", "))
	}
	root.Long += strings.TrimSuffix(b.String(), "\n")
}
