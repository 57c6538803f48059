package ledger

import (
	"context"
	"errors"

	"github.com/replaycheck/replaycheck/internal/wire"
)

// errNotCommitted is the tool error of a write whose client gave up before
// it committed, on a ledger that honours cancellation: nothing was written.
var errNotCommitted = errors.New("the call was cancelled before its write committed: nothing was written")

// heldBeforeCommit is what the ledger logs when a write's holds (delay)
// begin before its commit, on a ledger that honours cancellation.
const heldBeforeCommit = "ledger write held before its commit"

// commit writes entry for c (see write), unless the ledger honours
// cancellation (Config.HonourCancellation) and c's client gave up first.
// Such a ledger commits last, as a server that honours cancellation does:
// the faults that hold a call's answer (delay) hold before the write, and
// a call whose client gave up by then — its stream closed, a
// notifications/cancelled, or its context ended — writes nothing: the
// fault cancelled_before_commit is recorded and errNotCommitted returned.
// Otherwise the call writes once it ran, whether its client is there or not.
func (s *Server) commit(ctx context.Context, c *call, entry, key string) (commitOutput, error) {
	if !s.honourCancel {
		return s.write(c, entry, key)
	}
	for range hooks[holder](c) {
		s.log.Info(heldBeforeCommit, "tool", c.tool, "token", c.token, "request_id", c.idText)
		break
	}
	s.holdAnswer(ctx, c)
	if !s.gaveUp(ctx, c) {
		return s.write(c, entry, key)
	}
	s.mu.Lock()
	s.eventLocked(wire.MCPEvent{Token: c.token, Kind: wire.MCPFault, Tool: c.tool, RequestID: c.idText, Entry: oneLine(entry), Key: key, Fault: wire.MCPFaultCancelledBeforeCommit})
	s.mu.Unlock()
	s.log.Info("ledger write not committed: the client gave up", "tool", c.tool, "token", c.token, "request_id", c.idText)
	return commitOutput{}, errNotCommitted
}

// afterCommit does what follows a committed write before its answer: what
// the faults that fired on c do after the tool ran, then the holds (see
// hold), which a ledger that honours cancellation held before the commit.
func (s *Server) afterCommit(ctx context.Context, c *call) {
	if !s.honourCancel {
		s.hold(ctx, c)
		return
	}
	s.afterExecute(ctx, c)
}

// gaveUp reports whether c's client gave up on it: the wrapper saw its
// stream close or a notifications/cancelled (recorded there), or the
// handler's context ended (recorded here: the SDK cancels it for a closed
// stream of a stateless protocol, and on a notice).
func (s *Server) gaveUp(ctx context.Context, c *call) bool {
	select {
	case <-c.gone:
		return true
	default:
	}
	if ctx.Err() == nil {
		return false
	}
	s.giveUp(c, "context cancelled")
	return true
}
