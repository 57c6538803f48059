package ledger

import (
	"fmt"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/replaycheck/replaycheck/fakes/fault"
	"github.com/replaycheck/replaycheck/internal/wire"
)

// InputRequired answers a tools/call with an input-required result (MRTR,
// SEP-2322: an IncompleteResult): it asks the client to confirm the call
// (a form elicitation with no fields) and hands it a request state. A
// compliant client retries the call with its answer (inputResponses) and
// that state (requestState), and the retry runs the tool: one logical call,
// one execution. A 2026-07-28 client retries it itself; for an older
// session go-sdk's server asks the client (elicitation/create) and calls the
// tool again within the same tools/call. With After unset the tool does not
// run on the first delivery; with After InputRequiredAfterExecute it runs
// first, and then the input-required result goes back in place of its
// answer, so the retry runs it again: the server bug the rules catch as a
// replay.
type InputRequired struct {
	// After is when the input-required result is sent: "" before the tool
	// runs, or InputRequiredAfterExecute after it ran.
	After string `json:"after,omitempty" yaml:"after,omitempty" jsonschema:"enum=,enum=execute" jsonschema_description:"When the input-required result is sent: empty (default) before the tool runs, so the retry that carries the client's answer and the request state runs it once; execute after it ran, so the retry runs it again (a server bug: one logical call executed twice)."`
}

// InputRequiredAfterExecute is the InputRequired.After that runs the tool
// before asking for input.
const InputRequiredAfterExecute = "execute"

// inputRequiredState is the request state an input_required result hands
// the client; a call that carries it back is the retry, which runs.
const inputRequiredState = "replaycheck-input-required"

// inputRequiredKey is the key of the input request (and of the client's
// answer) in an input_required result.
const inputRequiredKey = "confirm"

// Check reports a bad setting, naming it (fault.Action).
func (f *InputRequired) Check(*Fault) error {
	switch f.After {
	case "", InputRequiredAfterExecute:
		return nil
	}
	return &FieldError{Field: "after", Err: fmt.Errorf("after %q: want %s, or none to ask before the tool runs", f.After, InputRequiredAfterExecute)}
}

// Holds is zero: the kind holds no answer back (fault.Action).
func (*InputRequired) Holds(time.Duration) time.Duration { return 0 }

// retried reports whether params are those of the retry of a call this
// kind answered: they carry its request state back.
func (*InputRequired) retried(params *mcp.CallToolParamsRaw) bool {
	return params != nil && params.RequestState == inputRequiredState
}

// runsFirst reports whether the tool runs before the input-required result.
func (f *InputRequired) runsFirst() bool { return f.After == InputRequiredAfterExecute }

// ask records the fault on c and returns the input-required result.
func (f *InputRequired) ask(s *Server, c *call) *mcp.CallToolResult {
	name := wire.MCPFaultInputRequired
	if f.runsFirst() {
		name = wire.MCPFaultInputRequiredAfterExecute
	}
	s.mu.Lock()
	s.eventLocked(wire.MCPEvent{Token: c.token, Protocol: c.protocol, Kind: wire.MCPFault, Tool: c.tool, RequestID: c.idText, Fault: name})
	c.outcome = name
	s.mu.Unlock()
	s.log.Info("ledger fault", "fault", name, "tool", c.tool, "token", c.token, "request_id", c.idText)
	return &mcp.CallToolResult{
		InputRequests: mcp.InputRequestMap{inputRequiredKey: &mcp.ElicitParams{
			Message:         "Confirm the call of " + c.tool + ".",
			RequestedSchema: map[string]any{"type": "object", "properties": map[string]any{}},
		}},
		RequestState: inputRequiredState,
	}
}

// inputRequiredKind is the fault table's row for input_required.
func inputRequiredKind() kindRow {
	return kindRow{
		Name: wire.MCPFaultInputRequired,
		Get: func(f *Fault) action {
			return nonNil(f.InputRequired)
		},
		Probes: inputRequiredProbes,
		Traits: kindTraits{transport: wire.MCPTransportAny},
	}
}

func inputRequiredProbes() []fault.Probe[Fault] {
	return []fault.Probe[Fault]{
		{Name: "mcp-input-required", Doc: "answer the tools/call with an input-required result (MRTR) before it runs; the retry runs it", At: fault.AtToolCall, Optional: true, Build: func(fault.Spot, fault.Settings) Fault {
			return Fault{InputRequired: &InputRequired{}}
		}},
	}
}
