// Command hello is a cobra hello-world: one root command with a flag, the
// baseline of BenchmarkStartup.
package main

import (
	"fmt"
	"os"

	"github.com/spf13/cobra"
)

func main() {
	var name string
	root := &cobra.Command{
		Use:   "hello",
		Short: "Say hello",
		RunE: func(cmd *cobra.Command, _ []string) error {
			fmt.Fprintf(cmd.OutOrStdout(), "hello, %s\n", name)
			return nil
		},
	}
	root.Flags().StringVar(&name, "name", "world", "whom to greet")
	if err := root.Execute(); err != nil {
		os.Exit(1)
	}
}
