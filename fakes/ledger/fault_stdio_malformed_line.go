package ledger

import (
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

func (m *StdioMalformedLine) check() error { return nil }

// directive tells the process to write the line before the answer.
func (m *StdioMalformedLine) directive() string { return wire.MCPFaultStdioMalformedLine }

func stdioMalformedLineProbes() []fault.Probe[Fault] {
	return []fault.Probe[Fault]{
		{Name: "stdio-malformed", Doc: "execute the tools/call, then write a line that is not JSON-RPC on the stdio server's stdout before the answer", At: fault.AtToolCall, Build: func(fault.Spot, fault.Settings) Fault {
			return Fault{StdioMalformedLine: &StdioMalformedLine{}}
		}},
	}
}
