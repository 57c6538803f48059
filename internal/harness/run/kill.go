package run

import (
	"context"
	"fmt"
	"net/http"
	"sync"
	"time"

	"github.com/replaycheck/replaycheck/fakes/fault"
	"github.com/replaycheck/replaycheck/fakes/ledger"
	"github.com/replaycheck/replaycheck/fakes/upstream"
	"github.com/replaycheck/replaycheck/internal/ctxwait"
	"github.com/replaycheck/replaycheck/internal/fakepair"
	"github.com/replaycheck/replaycheck/internal/harness/history"
	"github.com/replaycheck/replaycheck/internal/harness/scenario"
	"github.com/replaycheck/replaycheck/internal/harness/target"
	"github.com/replaycheck/replaycheck/internal/wire"
)

// maxKillHold bounds the hold of a kill point's answer (the fakes' own
// bound of a delay fault).
const maxKillHold = 10 * time.Minute

// armKill makes the target.Kill of s's target fault for the run of token
// on env, recording its events in h: where a point must hold the target
// still until the kill is done (execute: the tool's answer; follow_up: the
// answer to the next follow-up model request; stream: the
// stream after its first chunk), it arms a hold of its own on the fake for
// the fault's cycles, disarmed by the returned function before the run's
// fault reports are read. Nil when s kills nothing.
func armKill(s *scenario.Scenario, env *fakepair.Pair, token string, hold time.Duration, h *history.History, at func(time.Time) history.Duration) (*target.Kill, func(), error) {
	if !s.Resumes() {
		return nil, func() {}, nil
	}
	f := s.Faults.Target[0]
	k := f.Kill
	held := fault.Duration(min(max(hold, time.Second), maxKillHold))
	kill := &target.Kill{Fault: f, At: at, Record: func(e history.TargetEvent) { h.TargetEvents = append(h.TargetEvents, e) }}
	l, up := env.Ledger(), env.Upstream()
	// Each life gets a hold of its own, armed as it starts and disarmed once
	// it was killed: a hold never catches a later life.
	var holds lifeHolds
	var arm func() (uint64, error)
	switch k.After {
	case history.KillAfterExecute:
		arm = func() (uint64, error) {
			ids, err := l.AddFaults(token, []ledger.Fault{{Tool: k.KillTool(), Delay: &held, Times: fault.Once}})
			if err != nil {
				return 0, err
			}
			holds.add(func() { l.RemoveFault(ids[0]) })
			return ids[0], nil
		}
	case history.KillAtFollowUp, history.KillInStream:
		uf := upstream.Fault{On: wire.KindFollowUp, Delay: &held, Times: fault.Once}
		if k.After == history.KillInStream {
			stream := true
			uf = upstream.Fault{Stream: &stream, Stall: &upstream.Stall{After: "events", Events: 1, Forever: true}, Times: fault.Once}
		}
		arm = func() (uint64, error) {
			ids, err := up.AddFaults(token, []upstream.Fault{uf})
			if err != nil {
				return 0, err
			}
			holds.add(func() { up.RemoveFault(ids[0]) })
			return ids[0], nil
		}
	}
	kill.Arm = func(life int) (func(context.Context) error, error) {
		holds.release()
		var id uint64
		if arm != nil {
			var err error
			if id, err = arm(); err != nil {
				return nil, fmt.Errorf("arming the kill point %s: %w", k.After, err)
			}
		}
		return func(ctx context.Context) error {
			switch k.After {
			case history.KillAfterExecute:
				_, err := l.WaitFor(ctx, token, func(wire.MCPCounts) bool { return countEvents(l.Events(token), wire.MCPWrite, k.KillTool()) >= life })
				return err
			case history.KillAtFollowUp:
				// The follow-up arrived: matched, and held.
				_, err := up.WaitFault(ctx, token, id, func(p upstream.FaultProgress) bool { return p.Matched >= 1 })
				return err
			case history.KillInStream:
				// The stream's first chunk was flushed to the target, which
				// now waits on the stalled stream.
				_, err := up.WaitFault(ctx, token, id, func(p upstream.FaultProgress) bool { return p.Reached >= 1 })
				return err
			}
			return ctxwait.Sleep(ctx, k.Delay.D())
		}, nil
	}
	kill.Killed = holds.release
	kill.Finished = func(ctx context.Context, since time.Time) error {
		_, err := up.WaitRequests(ctx, token, func(rs []wire.UpstreamRequest) bool { return finalAnswerSince(rs, since) })
		return err
	}
	return kill, holds.release, nil
}

// finalAnswerSince reports whether one of rs, decided after since, was a
// model answer without tool calls: the end of the conversation's turn. A
// run's model answers from its script or a cassette, both of which count
// their tool calls; a relayed answer counts none, and a run never relays.
func finalAnswerSince(rs []wire.UpstreamRequest, since time.Time) bool {
	for _, r := range rs {
		if r.Time.After(since) && r.Status == http.StatusOK && r.ToolCalls == 0 &&
			(r.Outcome == wire.OutcomeForwarded || r.Outcome == wire.OutcomeDelayed) {
			return true
		}
	}
	return false
}

// lifeHolds are the holds armed for the current life, released as the next
// life starts and at the end of the run. Safe for concurrent use.
type lifeHolds struct {
	mu      sync.Mutex
	disarms []func()
}

// add adds a hold's disarm.
func (l *lifeHolds) add(disarm func()) {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.disarms = append(l.disarms, disarm)
}

// release disarms the holds armed so far.
func (l *lifeHolds) release() {
	l.mu.Lock()
	defer l.mu.Unlock()
	for _, d := range l.disarms {
		d()
	}
	l.disarms = nil
}

// countEvents counts the events of kind for tool in evs.
func countEvents(evs []wire.MCPEvent, kind wire.MCPKind, tool string) int {
	n := 0
	for _, e := range evs {
		if e.Kind == kind && e.Tool == tool {
			n++
		}
	}
	return n
}
