package ledger

import (
	"time"

	"github.com/replaycheck/replaycheck/fakes/fault"
	"github.com/replaycheck/replaycheck/internal/wire"
)

// StdioMalformedLine lets the tool run, then makes the ledger-stdio process
// that carried the call write one line on stdout that is not JSON-RPC (a log
// line, as a server that prints to stdout does; StdioMalformedText), then
// the real answer. It fires only on calls from a ledger-stdio process.
type StdioMalformedLine struct{}

// StdioMalformedText is the line a stdio_malformed_line fault writes on the
// process's stdout before the answer.
const StdioMalformedText = "ledger-stdio: INFO committed the entry, sending the answer"

// Check reports a bad setting, naming it (fault.Action).
func (m *StdioMalformedLine) Check(*Fault) error { return nil }

// Holds is zero: the kind holds no answer back (fault.Action).
func (*StdioMalformedLine) Holds(time.Duration) time.Duration { return 0 }

// directive tells the process to write the line before the answer.
func (m *StdioMalformedLine) directive() string { return wire.MCPFaultStdioMalformedLine }

// stdioMalformedLineKind is the fault table's row for stdio_malformed_line.
func stdioMalformedLineKind() kindRow {
	return kindRow{
		Name: wire.MCPFaultStdioMalformedLine,
		Get: func(f *Fault) action {
			return nonNil(f.StdioMalformedLine)
		},
		Probes: stdioMalformedLineProbes,
		Traits: kindTraits{transport: wire.MCPTransportStdio},
	}
}

func stdioMalformedLineProbes() []fault.Probe[Fault] {
	return []fault.Probe[Fault]{
		{Name: "stdio-malformed", Doc: "execute the tools/call, then write a line that is not JSON-RPC on the stdio server's stdout before the answer", At: fault.AtToolCall, Build: func(fault.Spot, fault.Settings) Fault {
			return Fault{StdioMalformedLine: &StdioMalformedLine{}}
		}},
	}
}
