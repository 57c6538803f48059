package ledger

import (
	"context"
	"errors"
	"time"

	"github.com/replaycheck/replaycheck/fakes/fault"
	"github.com/replaycheck/replaycheck/internal/wire"
)

// delay holds a tool's answer back for its duration after the tool ran, or
// until the client cancels the call (which is counted) or the server closes.
type delay fault.Duration

// Check reports a bad setting, naming it (fault.Action).
func (d delay) Check(*Fault) error {
	if d <= 0 {
		return errors.New("want a positive duration such as \"5s\"")
	}
	return nil
}

// Holds is the delay.
func (d delay) Holds(time.Duration) time.Duration { return fault.Duration(d).D() }

// dispatchedLocked records the delay as its call goes to the tools: the call
// is held from here on, whether or not the client is still there when a tool
// handler runs (the SDK may run none for a POST whose client has gone), so a
// slow ledger cannot lose it.
func (d delay) dispatchedLocked(s *Server, c *call) {
	s.eventLocked(wire.MCPEvent{Token: c.token, Protocol: c.protocol, Kind: wire.MCPFault, Tool: c.tool, RequestID: c.idText, Fault: wire.MCPFaultDelay})
	s.log.Info("ledger fault", "fault", wire.MCPFaultDelay, "delay", fault.Duration(d).D(), "tool", c.tool, "token", c.token, "request_id", c.idText)
}

// hold waits the delay, or until the client gives up (counted) or the server
// closes.
func (d delay) hold(ctx context.Context, s *Server, c *call) {
	t := time.NewTimer(fault.Duration(d).D())
	defer t.Stop()
	ended := "elapsed"
	select {
	case <-t.C:
	case <-c.gone:
		ended = "client gave up"
	case <-ctx.Done():
		s.giveUp(c, "context cancelled")
		ended = "client gave up"
	case <-s.closing:
		ended = "server closing"
	}
	s.log.Info("ledger delay ended", "tool", c.tool, "token", c.token, "request_id", c.idText, "ended", ended)
}

// delayKind is the fault table's row for delay.
func delayKind() kindRow {
	return kindRow{
		Name: wire.MCPFaultDelay,
		Get: func(f *Fault) action {
			if f.Delay == nil {
				return nil
			}
			return delay(*f.Delay)
		},
		Probes: delayProbes,
		Traits: kindTraits{transport: wire.MCPTransportAny},
	}
}

func delayProbes() []fault.Probe[Fault] {
	return []fault.Probe[Fault]{
		{Name: "mcp-slow", Doc: "execute the tools/call, then hold the answer back for --slow", At: fault.AtToolCall, Build: func(_ fault.Spot, s fault.Settings) Fault {
			d := fault.Duration(s.Slow)
			return Fault{Delay: &d}
		}},
	}
}
