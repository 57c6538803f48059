package ledger

import (
	"io"
	"time"

	"github.com/replaycheck/replaycheck/fakes/fault"
	"github.com/replaycheck/replaycheck/internal/wire"
)

// DuplicateAnswer lets the tool run once, then writes the SSE event that
// carries the call's JSON-RPC response twice, byte for byte (the same event
// id), on the stream of the POST that carried it: what a buggy proxy that
// repeats an event does. The client sees the same response id twice; the
// ledger counts one call, one write and one fault event. An answer that is
// not an SSE event (a plain JSON body) is written once.
type DuplicateAnswer struct{}

// Check reports a bad setting, naming it (fault.Action).
func (d *DuplicateAnswer) Check(*Fault) error { return nil }

// Holds is zero: the kind holds no answer back (fault.Action).
func (*DuplicateAnswer) Holds(time.Duration) time.Duration { return 0 }

// writeAnswer writes event twice and records the fault once the second copy
// went out.
func (d *DuplicateAnswer) writeAnswer(s *Server, c *call, w io.Writer, event []byte) (int, error) {
	n, err := w.Write(event)
	if err != nil {
		return n, err
	}
	if _, err := w.Write(event); err != nil {
		return n, err
	}
	s.mu.Lock()
	s.eventLocked(wire.MCPEvent{Token: c.token, Protocol: c.protocol, Kind: wire.MCPFault, Tool: c.tool, RequestID: c.idText, Fault: wire.MCPFaultDuplicateAnswer})
	s.mu.Unlock()
	s.log.Info("ledger fault", "fault", wire.MCPFaultDuplicateAnswer, "tool", c.tool, "token", c.token, "request_id", c.idText)
	return n, nil
}

// duplicateAnswerKind is the fault table's row for duplicate_answer.
func duplicateAnswerKind() kindRow {
	return kindRow{
		Name: wire.MCPFaultDuplicateAnswer,
		Get: func(f *Fault) action {
			return nonNil(f.DuplicateAnswer)
		},
		Probes: duplicateAnswerProbes,
		Traits: kindTraits{transport: wire.MCPTransportHTTP},
	}
}

func duplicateAnswerProbes() []fault.Probe[Fault] {
	return []fault.Probe[Fault]{
		{Name: "mcp-duplicate", Doc: "execute the tools/call once, then write its answer's SSE event twice on the stream (the same response id twice)", At: fault.AtToolCall, Optional: true, Build: func(fault.Spot, fault.Settings) Fault {
			return Fault{DuplicateAnswer: &DuplicateAnswer{}}
		}},
	}
}
