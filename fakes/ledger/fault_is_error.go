package ledger

import (
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/replaycheck/replaycheck/fakes/fault"
	"github.com/replaycheck/replaycheck/internal/wire"
)

// IsError answers a tools/call with an MCP tool result whose isError is true,
// carrying Message, without running the tool: nothing is written.
type IsError struct {
	// Message is the text of the error result; "" means a default message.
	Message string `json:"message,omitempty" yaml:"message,omitempty" jsonschema_description:"Text of the error result; a default message when unset."`
}

// defaultIsErrorMessage is the text of an is_error result without a message.
const defaultIsErrorMessage = "ledger: injected tool error"

// Check reports a bad setting, naming it (fault.Action).
func (f *IsError) Check(*Fault) error { return nil }

// Holds is zero: the kind holds no answer back (fault.Action).
func (*IsError) Holds(time.Duration) time.Duration { return 0 }

// preempt answers c with the error result; nothing is written.
func (f *IsError) preempt(s *Server, c *call) *mcp.CallToolResult {
	s.mu.Lock()
	s.eventLocked(wire.MCPEvent{Token: c.token, Protocol: c.protocol, Kind: wire.MCPFault, Tool: c.tool, RequestID: c.idText, Fault: wire.MCPFaultIsError})
	c.outcome = wire.MCPFaultIsError
	s.mu.Unlock()
	s.log.Info("ledger fault", "fault", wire.MCPFaultIsError, "tool", c.tool, "token", c.token, "request_id", c.idText)
	res := textResult(f.message())
	res.IsError = true
	return res
}

// message returns the text of the error result.
func (f *IsError) message() string {
	if f.Message == "" {
		return defaultIsErrorMessage
	}
	return f.Message
}

// isErrorKind is the fault table's row for is_error.
func isErrorKind() kindRow {
	return kindRow{
		Name: wire.MCPFaultIsError,
		Get: func(f *Fault) action {
			return nonNil(f.IsError)
		},
		Probes: isErrorProbes,
		Traits: kindTraits{transport: wire.MCPTransportAny},
	}
}

func isErrorProbes() []fault.Probe[Fault] {
	return []fault.Probe[Fault]{
		{Name: "mcp-is-error", Doc: "answer the tools/call with isError instead of executing it", At: fault.AtToolCall, Build: func(fault.Spot, fault.Settings) Fault {
			return Fault{IsError: &IsError{Message: "replaycheck explore: injected tool error"}}
		}},
	}
}
