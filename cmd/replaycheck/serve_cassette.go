package main

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"time"

	"github.com/replaycheck/replaycheck/fakes/upstream"
	"github.com/replaycheck/replaycheck/fakes/upstream/cassette"
)

// cassetteFlags checks serve's record and replay flags (--record,
// --cassette, --miss, --replay-timing) and sets them in ucfg: a cassette
// to replay, and a recorder for what is relayed. Every error is the user's.
// The caller closes the recorder (nil when nothing is recorded) after the
// upstream has stopped.
func cassetteFlags(opts *serveOptions, ucfg *upstream.Config, now time.Time) (*cassette.Recorder, error) {
	switch opts.Miss {
	case "", upstream.MissError, upstream.MissRelay:
	default:
		return nil, fmt.Errorf("--miss %q: want %s (answer 404 naming the closest entry) or %s (relay and record)", opts.Miss, upstream.MissError, upstream.MissRelay)
	}
	missRelay := opts.Miss == upstream.MissRelay
	switch {
	case opts.RecordDir != "" && opts.Relay == "" && !opts.forwardsMCP():
		return nil, errors.New("--record needs --relay, --mcp-relay or --mcp-command: only relayed and forwarded exchanges are recorded")
	case missRelay && (opts.CassettePath == "" || opts.Relay == ""):
		return nil, errors.New("--miss relay needs --cassette and --relay")
	case opts.CassettePath != "" && opts.Relay != "" && !missRelay:
		return nil, errors.New("--cassette with --relay: add --miss relay to relay the requests no entry matches")
	case opts.ReplayTiming && opts.CassettePath == "":
		return nil, errors.New("--replay-timing needs --cassette")
	}
	if opts.CassettePath != "" {
		player, err := cassette.Open(opts.CassettePath)
		if err != nil {
			return nil, fmt.Errorf("--cassette: %w", err)
		}
		ucfg.Cassette, ucfg.Miss, ucfg.ReplayTiming = player, opts.Miss, opts.ReplayTiming
	}
	dir := opts.RecordDir
	if opts.Relay == "" {
		dir = "" // --record is for the MCP side only (see mcpCassetteFlags)
	}
	if dir == "" && missRelay {
		// What a miss relays is recorded next to the cassette it missed.
		dir = opts.CassettePath
		if st, err := os.Stat(dir); err == nil && !st.IsDir() {
			dir = filepath.Dir(dir)
		}
	}
	if dir == "" {
		return nil, nil
	}
	if st, err := os.Stat(dir); err == nil && !st.IsDir() {
		return nil, fmt.Errorf("--record %s: not a directory", dir)
	}
	rec, err := newSessionCassette(dir, now)
	if err != nil {
		return nil, fmt.Errorf("--record: %w", err)
	}
	ucfg.Record = rec
	return rec, nil
}

// newSessionCassette creates this session's cassette in dir (see
// newSessionFile).
func newSessionCassette(dir string, now time.Time) (*cassette.Recorder, error) {
	return newSessionFile(dir, now, cassette.Create)
}

// newSessionFile creates this session's cassette in dir with create, named
// after the time it started (session-20250102T150405Z.jsonl, then -2, -3…
// when taken).
func newSessionFile[R any](dir string, now time.Time, create func(path string) (R, error)) (R, error) {
	base := "session-" + now.UTC().Format("20060102T150405Z")
	for n := 1; n <= 100; n++ {
		name := base
		if n > 1 {
			name += "-" + strconv.Itoa(n)
		}
		rec, err := create(filepath.Join(dir, name+".jsonl"))
		if err == nil || !errors.Is(err, os.ErrExist) {
			return rec, err
		}
	}
	var none R
	return none, fmt.Errorf("%s: 100 cassettes named %s* already", dir, base)
}

// cassetteBanner describes the record and replay settings for serve's
// banner; "" when there are none.
func cassetteBanner(opts *serveOptions, fk *servedFakes) string {
	s := ""
	if opts.CassettePath != "" {
		miss := opts.Miss
		if miss == "" {
			miss = upstream.MissError
		}
		timing := ""
		if opts.ReplayTiming {
			timing = ", recorded timing"
		}
		s += fmt.Sprintf("  cassette:     %s (replay; a miss: %s%s)\n", opts.CassettePath, miss, timing)
	}
	if fk.recorder != nil {
		s += fmt.Sprintf("  recording to: %s\n", fk.recorder.Path())
	}
	return s
}
