package main

import (
	"context"
	"io"
	"regexp"
	"strings"

	"github.com/spf13/cobra"

	"github.com/replaycheck/replaycheck/internal/harness/scenario"
	"github.com/replaycheck/replaycheck/internal/harness/targetfile"
)

// schemaOptions are the arguments of `replaycheck schema`.
type schemaOptions struct {
	// TargetSchema prints the target file schema (--target) instead of
	// the scenario one.
	TargetSchema bool

	Out io.Writer
}

func newSchemaCmd() *cobra.Command {
	opts := &schemaOptions{}
	cmd := &cobra.Command{
		Use:   "schema",
		Short: "Print the JSON Schema of scenario files or, with --target, of target files",
		Long: `schema prints the JSON Schema of a scenario file, generated from the Go types
the loader decodes into, with the endpoints, rule names, fault kinds and fault
timings as enums. Point an editor's YAML support at it to complete and check
scenario files. The repository publishes it as schemas/scenario.schema.json
(kept current by a test); it rejects what validate rejects within a file. Its
$id is that file's URL in the repository at this release's tag (on main for a
build that is not a release), so the $id resolves to the same schema.

With --target it prints the schema of a target file instead: one of kind
proxy or kind client. The two are separate files because editors pick a
schema per file name; name target files *.target.yaml or map the folder.`,
		Example: `  replaycheck schema > scenario.schema.json
  replaycheck schema --target > target.schema.json
  # then, first line of a scenario or target file, for the YAML language server:
  # yaml-language-server: $schema=./scenario.schema.json`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			opts.Out = cmd.OutOrStdout()
			return runSchema(cmd.Context(), opts)
		},
	}
	cmd.Flags().BoolVar(&opts.TargetSchema, "target", false, "print the schema of target files (kind proxy or client)")
	return cmd
}

// runSchema prints the schema.
func runSchema(_ context.Context, opts *schemaOptions) error {
	schema := func() ([]byte, error) { return scenario.SchemaAt(releaseTag(versionString())) }
	if opts.TargetSchema {
		schema = targetfile.Schema
	}
	b, err := schema()
	if err != nil {
		return err
	}
	_, err = opts.Out.Write(b)
	return err
}

// releaseTag is the repository's tag of a release version (1.2.3 as
// goreleaser stamps it, v1.2.3 as go install records it), or main for any
// other build (dev, a pseudo-version, a prerelease).
func releaseTag(version string) string {
	if releaseVersion.MatchString(version) {
		return "v" + strings.TrimPrefix(version, "v")
	}
	return "main"
}

var releaseVersion = regexp.MustCompile(`^v?[0-9]+\.[0-9]+\.[0-9]+$`)
