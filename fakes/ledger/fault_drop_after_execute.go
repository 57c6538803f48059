package ledger

import (
	"fmt"
	"time"

	"github.com/replaycheck/replaycheck/fakes/fault"
	"github.com/replaycheck/replaycheck/internal/wire"
)

// DropAfterExecute lets the tool run (the write is executed and synced), then
// closes the connection: with After unset, before any byte of the answer
// reaches the client; with After DropAfterHeaders, once the answer's status
// line and headers reached it (flushed, so an SSE answer's stream is open),
// before the JSON-RPC result. Either way the client cannot tell whether the
// write happened. When it fires on a call in a JSON-RPC batch, the whole
// POST's answer is lost.
type DropAfterExecute struct {
	// After is where the answer is cut: "" before its first byte, or
	// DropAfterHeaders after its status line and headers.
	After string `json:"after,omitempty" yaml:"after,omitempty" jsonschema:"enum=,enum=headers" jsonschema_description:"Where the answer is cut: empty (default) before its first byte; headers after its status line and headers reached the client (an SSE stream is opened), before the JSON-RPC result."`
}

// DropAfterHeaders is the DropAfterExecute.After that cuts the answer after
// its status line and headers.
const DropAfterHeaders = "headers"

// Check reports a bad setting, naming it (fault.Action).
func (d *DropAfterExecute) Check(*Fault) error {
	switch d.After {
	case "", DropAfterHeaders:
		return nil
	}
	return &FieldError{Field: "after", Err: fmt.Errorf("after %q: want %s, or none to cut before any byte of the answer", d.After, DropAfterHeaders)}
}

// Holds is zero: the kind holds no answer back (fault.Action).
func (*DropAfterExecute) Holds(time.Duration) time.Duration { return 0 }

// cut cuts before the answer, or after its headers.
func (d *DropAfterExecute) cut() (dropPoint, int) {
	if d.After == DropAfterHeaders {
		return dropAfterHeaders, 1
	}
	return dropBeforeAnswer, 1
}

func (d *DropAfterExecute) cutOff(*Server, *post) string { return wire.MCPFaultDropAfterExecute }

// dropAfterExecuteKind is the fault table's row for drop_after_execute.
func dropAfterExecuteKind() kindRow {
	return kindRow{
		Name: wire.MCPFaultDropAfterExecute,
		Get: func(f *Fault) action {
			return nonNil(f.DropAfterExecute)
		},
		Probes: dropAfterExecuteProbes,
		Traits: kindTraits{transport: wire.MCPTransportHTTP},
	}
}

func dropAfterExecuteProbes() []fault.Probe[Fault] {
	return []fault.Probe[Fault]{
		{Name: "mcp-drop", Doc: "execute the tools/call, then drop the connection before the answer", At: fault.AtToolCall, Build: func(fault.Spot, fault.Settings) Fault {
			return Fault{DropAfterExecute: &DropAfterExecute{}}
		}},
		{Name: "mcp-drop-mid", Doc: "execute the tools/call, send the answer's status line and headers, then drop the connection before the result", At: fault.AtToolCall, Build: func(fault.Spot, fault.Settings) Fault {
			return Fault{DropAfterExecute: &DropAfterExecute{After: DropAfterHeaders}}
		}},
	}
}
