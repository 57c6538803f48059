package main

import (
	"fmt"

	"github.com/spf13/cobra"
)

// newServeCmd is a placeholder replaced by the fakes work (issue 2).
func newServeCmd() *cobra.Command {
	return &cobra.Command{
		Use:   "serve",
		Short: "Run the ledger MCP server and the faulting model upstream standalone",
		RunE: func(cmd *cobra.Command, _ []string) error {
			return fmt.Errorf("serve: not built yet")
		},
	}
}
