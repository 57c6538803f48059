package explore

import (
	"os"
	"testing"

	"github.com/replaycheck/replaycheck/fakes/gateway"
	"github.com/replaycheck/replaycheck/fakes/ledgerstdio"
)

// TestMain lets the test binary stand in for replaycheck ledger-stdio, the
// stdio server the built-in gateway spawns over stdio, and for replaycheck
// gateway-process, the gateway a kill sweeps kill and resume.
func TestMain(m *testing.M) {
	if code, ok := ledgerstdio.Main(os.Args[1:]); ok {
		os.Exit(code)
	}
	if code, ok := gateway.ProcessMain(os.Args[1:]); ok {
		os.Exit(code)
	}
	os.Exit(m.Run())
}
