package ledger

import (
	"bytes"
	"context"
	"log/slog"
	"slices"
	"testing"

	"github.com/replaycheck/replaycheck/internal/wire"
)

// lineSignal is the writer of a text log: it sends on ch (without waiting)
// each time a record's line has msg.
type lineSignal struct {
	msg string
	ch  chan struct{}
}

func (w lineSignal) Write(p []byte) (int, error) {
	if bytes.Contains(p, []byte(w.msg)) {
		select {
		case w.ch <- struct{}{}:
		default:
		}
	}
	return len(p), nil
}

// TestHonourCancellation: a go-sdk client cancels a write while a delay
// holds it. A ledger that honours cancellation holds before the commit and
// writes nothing (cancelled_before_commit); one that does not wrote before
// the hold (the at-least-once server). Over a session at 2025-11-25 and
// stateless at the SDK's newest protocol (2026-07-28), for both write tools.
func TestHonourCancellation(t *testing.T) {
	for _, m := range []struct {
		name      string
		stateless bool
		protocol  string
	}{
		{"stateful 2025-11-25", false, string(wire.MCPProtocol20251125)},
		{"stateless 2026-07-28", true, string(wire.MCPProtocol20260728)},
	} {
		for _, tool := range []string{ToolCommitWrite, ToolCommitWriteKeyed} {
			for _, honour := range []bool{true, false} {
				name := m.name + "/" + tool
				if honour {
					name += "/honoured"
				}
				t.Run(name, func(t *testing.T) { testCancelledWrite(t, m.stateless, m.protocol, tool, honour) })
			}
		}
	}
}

func testCancelledWrite(t *testing.T, stateless bool, protocol, tool string, honour bool) {
	held := make(chan struct{}, 1)
	cfg := fileLedger(t)
	cfg.Stateless, cfg.HonourCancellation = stateless, honour
	cfg.Logger = slog.New(slog.NewTextHandler(lineSignal{msg: heldBeforeCommit, ch: held}, nil))
	s, url := newLedger(t, cfg)
	const tok = "rc00000cance"
	mustArm(t, s, tok, "{tool: "+tool+", delay: 1h}")
	cs := connect(t, url, protocol)

	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	args := map[string]any{"entry": "cancelled " + tok}
	if tool == ToolCommitWriteKeyed {
		args["idempotency_key"] = "k-" + tok
	}
	errc := make(chan error, 1)
	go func() {
		_, err := cs.CallTool(ctx, &mcpCallParams{Name: tool, Arguments: args})
		errc <- err
	}()
	// The write is held: before its commit when honoured, after it when not.
	if honour {
		wctx, wcancel := contextT()
		defer wcancel()
		select {
		case <-held:
		case <-wctx.Done():
			t.Fatalf("the write was not held before its commit (counts %+v)", s.Counts(tok))
		}
	} else {
		waitCounts(t, s, tok, func(c wire.MCPCounts) bool { return c.Writes == 1 })
	}
	cancel()
	if err := <-errc; err == nil {
		t.Fatal("CallTool with a cancelled context succeeded")
	}
	waitCounts(t, s, tok, func(c wire.MCPCounts) bool { return c.Cancellations == 1 })

	wantWrites := 1
	if honour {
		wantWrites = 0
		// The handler ends the call after it saw the cancellation.
		waitCounts(t, s, tok, func(wire.MCPCounts) bool {
			return slices.ContainsFunc(s.Events(tok), func(e wire.MCPEvent) bool { return e.IsFault(wire.MCPFaultCancelledBeforeCommit) })
		})
	}
	if c := s.Counts(tok); c.Writes != wantWrites || c.Calls[tool] != 1 {
		t.Errorf("counts %+v, want %d writes of 1 %s call", c, wantWrites, tool)
	}
	if lines := fileLines(t, cfg.Path); len(lines) != wantWrites {
		t.Errorf("ledger file %q, want %d lines", lines, wantWrites)
	}
	var kinds []string
	for _, e := range s.Events(tok) {
		if e.Kind != wire.MCPSession {
			kinds = append(kinds, string(e.Kind)+" "+e.Fault)
		}
	}
	want := []string{"call ", "fault delay", "write ", "cancelled "}
	if honour {
		want = []string{"call ", "fault delay", "cancelled ", "fault " + wire.MCPFaultCancelledBeforeCommit}
	}
	if !slices.Equal(kinds, want) {
		t.Errorf("events %q, want %q", kinds, want)
	}
}
