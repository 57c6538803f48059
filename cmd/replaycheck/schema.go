package main

import (
	"context"
	"io"

	"github.com/spf13/cobra"

	"github.com/replaycheck/replaycheck/harness/scenario"
)

// schemaOptions are the arguments of `replaycheck schema`.
type schemaOptions struct {
	Out io.Writer
}

func newSchemaCmd() *cobra.Command {
	opts := &schemaOptions{}
	return &cobra.Command{
		Use:   "schema",
		Short: "Print the JSON Schema of scenario files",
		Long: `schema prints the JSON Schema of a scenario file, generated from the Go types
the loader decodes into, with the endpoints, rule names, fault kinds and fault
timings as enums. Point an editor's YAML support at it to complete and check
scenario files.`,
		Example: `  replaycheck schema > scenario.schema.json
  # then, first line of a scenario file, for the YAML language server:
  # yaml-language-server: $schema=./scenario.schema.json`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			opts.Out = cmd.OutOrStdout()
			return runSchema(cmd.Context(), opts)
		},
	}
}

// runSchema prints the schema.
func runSchema(_ context.Context, opts *schemaOptions) error {
	b, err := scenario.Schema()
	if err != nil {
		return err
	}
	_, err = opts.Out.Write(b)
	return err
}
