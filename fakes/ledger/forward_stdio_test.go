package ledger

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// itemServerArg makes the test binary the itemServer over stdio (see
// TestMain): os.Args[0] itemServerArg JOURNAL.
const itemServerArg = "forward-item-server"

// TestMain lets the test binary stand in for a real MCP server spawned over
// stdio: with itemServerArg it serves an itemServer on stdin and stdout,
// its journal at the path that follows, until stdin closes.
func TestMain(m *testing.M) {
	if len(os.Args) == 3 && os.Args[1] == itemServerArg {
		os.Exit(serveItemsOverStdio(os.Args[2]))
	}
	os.Exit(m.Run())
}

func serveItemsOverStdio(journal string) int {
	f, err := os.OpenFile(journal, os.O_CREATE|os.O_APPEND|os.O_WRONLY, 0o644)
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	defer f.Close()
	is := &itemServer{journal: f}
	if err := is.mcpServer().Run(context.Background(), &mcp.StdioTransport{}); err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	return 0
}

// journalRecord reads a stdio itemServer's journal: the items it created and
// the calls it ran.
func journalRecord(t *testing.T, path string) ([]string, int) {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil && !os.IsNotExist(err) {
		t.Fatal(err)
	}
	var items []string
	ran := 0
	for line := range strings.Lines(string(b)) {
		line = strings.TrimSuffix(line, "\n")
		switch {
		case line == "ran":
			ran++
		case strings.HasPrefix(line, "item "):
			items = append(items, strings.TrimPrefix(line, "item "))
		}
	}
	return items, ran
}

// TestForwardStdio runs the forwarding cases with the server spawned as a
// process over stdio (this test binary, see TestMain): the server's own
// record, written by that process, is what the ledger counted.
func TestForwardStdio(t *testing.T) {
	for _, tt := range forwardCases() {
		t.Run(tt.name, func(t *testing.T) {
			journal := filepath.Join(t.TempDir(), "items.log")
			fwd := Forward{Command: []string{os.Args[0], itemServerArg, journal}}
			runForwardCase(t, fwd, tt, func() ([]string, int) { return journalRecord(t, journal) })
		})
	}
}
