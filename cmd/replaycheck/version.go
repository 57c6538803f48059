package main

import (
	"fmt"
	"io"
	"runtime"
	"runtime/debug"

	"github.com/spf13/cobra"
)

func newVersionCmd() *cobra.Command {
	return &cobra.Command{
		Use:     "version",
		Short:   "Print the version of replaycheck",
		Example: "  replaycheck version",
		Args:    cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			_, err := io.WriteString(cmd.OutOrStdout(), versionLine())
			return err
		},
	}
}

// versionLine is what `replaycheck version` and `replaycheck --version`
// print: "replaycheck VERSION OS/ARCH GOVERSION" and a newline.
func versionLine() string {
	return fmt.Sprintf("replaycheck %s %s/%s %s\n", versionString(), runtime.GOOS, runtime.GOARCH, runtime.Version())
}

// versionString is replaycheck's version: the one set at build time, else
// the module version go install recorded, else "dev".
func versionString() string {
	v := version
	if info, ok := debug.ReadBuildInfo(); ok && v == "dev" && info.Main.Version != "" && info.Main.Version != "(devel)" {
		v = info.Main.Version
	}
	return v
}
