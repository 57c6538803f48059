package main

import (
	"github.com/spf13/cobra"

	"github.com/replaycheck/replaycheck/fakes/gateway"
)

// newGatewayProcessCmd is the hidden command the harness runs the built-in
// gateway with when a scenario kills it and resumes it (faults.target).
func newGatewayProcessCmd() *cobra.Command {
	return &cobra.Command{
		Use:    gateway.ProcessCommand + " SPEC.json",
		Short:  "Run the built-in gateway as a process a scenario kills and resumes (used by run)",
		Hidden: true,
		Long: `gateway-process runs the built-in gateway as described by SPEC.json (written by
replaycheck run for a scenario with faults.target), with a checkpoint file, and
prints one JSON line when it listens and, resumed, one when it finished the
turns its checkpoint held as pending.`,
		Example: `  # started by replaycheck run; by hand, with a spec it wrote
  replaycheck gateway-process /tmp/replaycheck-run-1/gateway.json`,
		Args: cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			return gateway.ServeProcess(cmd.Context(), args[0], cmd.OutOrStdout())
		},
	}
}
