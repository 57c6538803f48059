// Package gobuild builds a main package for tests as replaycheck's release
// builds it, offline.
package gobuild

import (
	"fmt"
	"os"
	"os/exec"
)

// Release builds the main package in dir (a directory of this module or a
// module of its own) into out as .goreleaser.yaml's build does:
// CGO_ENABLED=0, -trimpath, -ldflags '-s -w'. It builds from the module
// cache (GOPROXY=off) and leaves go.mod as it is. Builds with the same
// settings share the build cache's compiled packages, so the tests' several
// builds of replaycheck compile its dependencies once.
func Release(dir, out string) error {
	cmd := exec.Command("go", "build", "-trimpath", "-ldflags", "-s -w", "-o", out, ".")
	cmd.Dir = dir
	cmd.Env = append(os.Environ(), "GOPROXY=off", "GOFLAGS=-mod=readonly", "CGO_ENABLED=0")
	if msg, err := cmd.CombinedOutput(); err != nil {
		return fmt.Errorf("building %s: %w\n%s", dir, err, msg)
	}
	return nil
}
