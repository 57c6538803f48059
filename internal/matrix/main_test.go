package matrix

import (
	"os"
	"testing"

	"github.com/replaycheck/replaycheck/fakes/ledgerstdio"
)

// TestMain lets the test binary stand in for replaycheck ledger-stdio, the
// stdio server the built-in gateway spawns over stdio.
func TestMain(m *testing.M) {
	if code, ok := ledgerstdio.Main(os.Args[1:]); ok {
		os.Exit(code)
	}
	os.Exit(m.Run())
}
