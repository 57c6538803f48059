package scenario

import (
	"errors"
	"fmt"
	"io/fs"
	"path/filepath"

	"github.com/replaycheck/replaycheck/fakes/ledger/mcpcassette"
	"github.com/replaycheck/replaycheck/internal/yamlfile"
)

// An MCP cassette ({cassette: FILE} in mcp) is recorded by `replaycheck
// serve --mcp-relay URL --record DIR` (or --mcp-command) into DIR/mcp/ (see
// package mcpcassette). The loader reads it when it loads the scenario, so
// a missing or broken cassette is an error at mcp.cassette; each run then
// replays it from its first call on a forwarding ledger of its own (see
// ledger.Forward.Cassette), with the run's token where the recorded calls
// had theirs.

// loadCassette reads m's cassette, named relative to the scenario file
// file; nothing when m sets none.
func (m *MCP) loadCassette(file string) error {
	if m == nil || m.Cassette == "" {
		return nil
	}
	path := m.Cassette
	if !filepath.IsAbs(path) {
		path = filepath.Join(filepath.Dir(file), path)
	}
	c, err := mcpcassette.Load(path)
	var pe *fs.PathError
	if errors.As(err, &pe) {
		// Name the path as the scenario resolves it, and the cause.
		return fmt.Errorf("mcp cassette %s: %s", path, yamlfile.DescribeReadError(err))
	}
	if err != nil {
		return err
	}
	m.cassette = c
	return nil
}
