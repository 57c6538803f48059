package ledger

import (
	"os"
	"path/filepath"
	"testing"

	"github.com/replaycheck/replaycheck/internal/itemserver"
)

// TestMain lets the test binary stand in for a real MCP server spawned over
// stdio (see itemserver.Main).
func TestMain(m *testing.M) {
	if code, ok := itemserver.Main(os.Args[1:]); ok {
		os.Exit(code)
	}
	os.Exit(m.Run())
}

// TestForwardStdio runs the forwarding cases with the server spawned as a
// process over stdio (this test binary, see TestMain): the server's own
// record, written by that process, is what the ledger counted.
func TestForwardStdio(t *testing.T) {
	for _, tt := range forwardCases() {
		t.Run(tt.name, func(t *testing.T) {
			journal := filepath.Join(t.TempDir(), "items.log")
			fwd := Forward{Command: []string{os.Args[0], itemserver.Arg, journal}}
			runForwardCase(t, fwd, tt, func() ([]string, int) { return itemserver.Journal(t, journal) })
		})
	}
}
