package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"strings"

	"github.com/spf13/cobra"

	"github.com/replaycheck/replaycheck/internal/harness/scenario"
	"github.com/replaycheck/replaycheck/internal/harness/targetfile"
)

// validateOptions are the arguments of `replaycheck validate`.
type validateOptions struct {
	Paths []string
	// Targets are target files to check (--target); with no Paths, only
	// they are checked.
	Targets []string
	Out     io.Writer
	ErrOut  io.Writer
}

func newValidateCmd() *cobra.Command {
	opts := &validateOptions{}
	cmd := &cobra.Command{
		Use:   "validate [PATH...]",
		Short: "Check scenario files without running them",
		Long: `validate loads scenario files strictly and reports every problem with its file,
line and column and the line itself: unknown fields, wrong types, bad durations,
unknown faults, rules, endpoints and template variables, duplicate names, bad
counts (a negative number, min above max, an unknown bound). It warns, without
failing, about request fields that client targets ignore (endpoint, stream,
prompt, model, body, headers) in scenarios that set expect.client.
PATH is a file or a directory searched for *.yaml files; with none, ./scenarios
(or the built-in suite). --target checks target files the same way (and then,
with no PATH, only them). It exits 2 when any file is bad; warnings alone
exit 0.`,
		Example: `  # check the suite
  replaycheck validate scenarios

  # check one file
  replaycheck validate scenarios/seed/fault-on-chat.yaml

  # check target files
  replaycheck validate --target targets/gateway-process.yaml --target targets/agent.yaml`,
		RunE: func(cmd *cobra.Command, args []string) error {
			opts.Paths = args
			opts.Out, opts.ErrOut = cmd.OutOrStdout(), cmd.ErrOrStderr()
			return runValidate(cmd.Context(), opts)
		},
	}
	cmd.Flags().StringArrayVar(&opts.Targets, "target", nil, "check this target file (repeatable)")
	cmd.ValidArgsFunction = completeScenarioPaths
	complete(cmd, "target", completeFiles("yaml", "yml"))
	return cmd
}

// runValidate loads the scenarios and prints every problem, or a summary.
func runValidate(_ context.Context, opts *validateOptions) error {
	if len(opts.Targets) > 0 {
		if err := validateTargets(opts); err != nil || len(opts.Paths) == 0 {
			return err
		}
	}
	ss, err := loadSuite(opts.Paths)
	if err != nil {
		var list scenario.ErrorList
		n := 1
		if errors.As(err, &list) {
			n = len(list)
		}
		fmt.Fprintf(opts.ErrOut, "%s\n\n", err)
		return asUsage(fmt.Errorf("%d %s in the scenario files", n, pluralize(n, "problem")))
	}
	if len(ss) == 0 {
		return asUsage(fmt.Errorf("no scenario in %s: want scenario files (*.yaml, *.yml)", strings.Join(opts.Paths, ", ")))
	}
	files := map[string]bool{}
	warnings := 0
	for _, s := range ss {
		files[s.File] = true
		for _, w := range s.Warnings {
			warnings++
			fmt.Fprintf(opts.ErrOut, "%s\n\n", w)
		}
	}
	note := ""
	if warnings > 0 {
		note = fmt.Sprintf(" (%d %s)", warnings, pluralize(warnings, "warning"))
	}
	_, err = fmt.Fprintf(opts.Out, "ok: %d %s in %d %s%s\n", len(ss), pluralize(len(ss), "scenario"), len(files), pluralize(len(files), "file"), note)
	return err
}

func pluralize(n int, w string) string {
	if n == 1 {
		return w
	}
	return w + "s"
}

// validateTargets loads each target file and prints every problem, or one
// line per good file.
func validateTargets(opts *validateOptions) error {
	bad := 0
	for _, path := range opts.Targets {
		t, err := targetfile.Load(path, targetfile.Options{})
		if err != nil {
			bad++
			fmt.Fprintf(opts.ErrOut, "%s\n\n", err)
			continue
		}
		fmt.Fprintf(opts.Out, "ok: target %s (%s)\n", t.Name(), path)
	}
	if bad > 0 {
		return asUsage(fmt.Errorf("%d bad target %s", bad, pluralize(bad, "file")))
	}
	return nil
}
