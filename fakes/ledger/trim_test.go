package ledger

import (
	"context"
	"fmt"
	"net/http"
	"testing"

	"github.com/google/go-cmp/cmp"
	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/replaycheck/replaycheck/internal/wire"
)

// stdioSession writes entry with commit_write and commit_write_keyed (key
// key) on a session of its own that announces itself as a ledger-stdio
// process, then closes it, so the ledger records the process's end: for
// the run whose address url is, or under "" at the shared one.
func stdioSession(t *testing.T, s *Server, url, owner, entry, key string) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), testTimeout)
	defer cancel()
	c := mcp.NewClient(&mcp.Implementation{Name: "trim-test", Version: "1"}, nil)
	hc := &http.Client{Transport: headerTransport{StdioSpawnHeader, "4711"}}
	cs, err := c.Connect(ctx, &mcp.StreamableClientTransport{Endpoint: url, HTTPClient: hc}, nil)
	if err != nil {
		t.Fatal(err)
	}
	exits := s.Counts(owner).Exits
	for _, p := range []*mcp.CallToolParams{
		{Name: ToolCommitWrite, Arguments: map[string]any{"entry": entry}},
		{Name: ToolCommitWriteKeyed, Arguments: map[string]any{"entry": entry + " keyed", "idempotency_key": key}},
	} {
		if res, err := cs.CallTool(ctx, p); err != nil || res.IsError {
			t.Fatalf("%s %q: %v %+v", p.Name, entry, err, res)
		}
	}
	if err := cs.Close(); err != nil {
		t.Fatal(err)
	}
	waitCounts(t, s, owner, func(c wire.MCPCounts) bool { return c.Exits > exits })
}

// kept returns how many ledger-stdio process ends the ledger remembers.
func keptEnds(s *Server) int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return len(s.stdioEnded)
}

// TestForgetAndTrimBoundWhatServeKeeps: Forget lets go of a run's ledger
// lines and the ends of its ledger-stdio processes with its keys; Trim
// keeps the newest of what came without a token (keys, lines, process ends,
// events) and forgets the rest. read_ledger and Entries return the lines
// kept, in write order; Lines counts kept and forgotten; the file keeps
// every line, and line numbers stay the file's. A keyed call with a key
// trimmed writes again; one with a key kept does not.
func TestForgetAndTrimBoundWhatServeKeeps(t *testing.T) {
	cfg := fileLedger(t)
	s, shared := newLedger(t, cfg)
	const a, b = "rcaaaaaaaaaa", "rcbbbbbbbbbb"
	stdioSession(t, s, ownAddress(t, s, a), a, "a", "key-a")
	stdioSession(t, s, ownAddress(t, s, b), b, "b", "key-b")
	for i := range 5 {
		stdioSession(t, s, shared, "", fmt.Sprintf("none-%d", i), fmt.Sprintf("key-none-%d", i))
	}
	type kept struct {
		Lines Lines
		Keys  Keys
		Ends  int
	}
	state := func() kept { return kept{s.Lines(), s.Keys(), keptEnds(s)} }
	if diff := cmp.Diff(kept{Lines{Kept: 14}, Keys{Kept: 7}, 7}, state()); diff != "" {
		t.Errorf("before Forget (-want +got):\n%s", diff)
	}

	s.Forget(a)
	if diff := cmp.Diff(kept{Lines{Kept: 12, Forgotten: 2}, Keys{Kept: 6, Forgotten: 1}, 6}, state()); diff != "" {
		t.Errorf("after Forget(a) (-want +got):\n%s", diff)
	}
	s.Trim(2)
	if diff := cmp.Diff(kept{Lines{Kept: 4, Forgotten: 10}, Keys{Kept: 3, Forgotten: 4}, 3}, state()); diff != "" {
		t.Errorf("after Trim(2) (-want +got):\n%s", diff)
	}
	if n := len(s.Events("")); n > 2 {
		t.Errorf("%d events of no token kept after Trim(2), want at most 2", n)
	}
	want := []string{"b", "b keyed", "none-4", "none-4 keyed"}
	if diff := cmp.Diff(want, s.Entries()); diff != "" {
		t.Errorf("Entries after Forget and Trim (-want +got):\n%s", diff)
	}
	cs := connect(t, shared, "")
	res, err := callTool(t, cs, ToolReadLedger, nil)
	if err != nil || res.IsError {
		t.Fatalf("read_ledger: %v %+v", err, res)
	}
	if diff := cmp.Diff(map[string]any{"entries": []any{"b", "b keyed", "none-4", "none-4 keyed"}}, res.StructuredContent); diff != "" {
		t.Errorf("read_ledger after Forget and Trim (-want +got):\n%s", diff)
	}

	writes := s.Total().Writes
	for _, key := range []string{"key-none-4", "key-none-0"} { // kept, then trimmed
		if res, err := callTool(t, cs, ToolCommitWriteKeyed, map[string]any{"entry": "again " + key, "idempotency_key": key}); err != nil || res.IsError {
			t.Fatalf("commit_write_keyed %s: %v %+v", key, err, res)
		}
	}
	if got := s.Total().Writes - writes; got != 1 {
		t.Errorf("%d writes of a kept and a trimmed key, want 1 (the trimmed one)", got)
	}
	res, err = callTool(t, cs, ToolCommitWrite, map[string]any{"entry": "last"})
	if err != nil || res.IsError {
		t.Fatalf("commit_write: %v %+v", err, res)
	}
	if got := res.StructuredContent.(map[string]any)["line"]; got != float64(16) {
		t.Errorf("the 16th line written is numbered %v, want 16 (the file's numbering)", got)
	}
	if n := len(fileLines(t, cfg.Path)); n != 16 {
		t.Errorf("the ledger file has %d lines, want every one of 16", n)
	}
	s.Trim(0)
	if got := s.Lines(); got.Kept != 2 { // b's
		t.Errorf("after Trim(0) %d lines kept, want b's 2", got.Kept)
	}
	if got := keptEnds(s); got != 1 {
		t.Errorf("after Trim(0) %d process ends kept, want b's 1", got)
	}
}

// TestResetKeepsLinesAsNoRuns: Reset forgets the runs but keeps the lines
// (read_ledger still returns them) and the ends of ledger-stdio processes
// recorded, as those of no run, so Trim bounds them, and Lines keeps
// counting.
func TestResetKeepsLinesAsNoRuns(t *testing.T) {
	s, shared := newLedger(t, Config{})
	const a = "rcaaaaaaaaaa"
	stdioSession(t, s, ownAddress(t, s, a), a, "a", "key-a")
	stdioSession(t, s, shared, "", "none", "key-none")
	s.Forget("rcnotarun000") // forgets nothing
	s.Reset()
	if diff := cmp.Diff([]string{"a", "a keyed", "none", "none keyed"}, s.Entries()); diff != "" {
		t.Errorf("Entries after Reset (-want +got):\n%s", diff)
	}
	if got, want := s.Lines(), (Lines{Kept: 4}); got != want {
		t.Errorf("Lines after Reset (-want +got):\n%s", cmp.Diff(want, got))
	}
	if got, want := s.Keys(), (Keys{}); got != want {
		t.Errorf("Keys after Reset (-want +got):\n%s", cmp.Diff(want, got))
	}
	if got := keptEnds(s); got != 2 {
		t.Errorf("%d process ends kept after Reset, want 2 (each end is recorded once)", got)
	}
	s.Forget(a) // a's lines are no run's now
	if got := s.Lines().Kept; got != 4 {
		t.Errorf("Forget of a run from before Reset left %d lines, want 4", got)
	}
	s.Trim(1)
	if diff := cmp.Diff([]string{"none keyed"}, s.Entries()); diff != "" {
		t.Errorf("Entries after Reset and Trim(1) (-want +got):\n%s", diff)
	}
	if got, want := s.Lines(), (Lines{Kept: 1, Forgotten: 3}); got != want {
		t.Errorf("Lines after Trim(1) (-want +got):\n%s", cmp.Diff(want, got))
	}
	if got := keptEnds(s); got != 1 {
		t.Errorf("%d process ends kept after Trim(1), want 1", got)
	}
}
