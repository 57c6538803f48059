package ledger

import (
	"time"

	"github.com/replaycheck/replaycheck/fakes/fault"
	"github.com/replaycheck/replaycheck/internal/wire"
)

// StdioHang lets the tool run (the write is synced), then makes the
// ledger-stdio process that carried the call hang as a deadlocked server
// does: it writes nothing more on stdout — not this call's answer, nor any
// other — until its stdin closes (then it ends cleanly) or it is killed. It
// fires only on calls from a ledger-stdio process.
type StdioHang struct{}

// Check reports a bad setting, naming it (fault.Action).
func (h *StdioHang) Check(*Fault) error { return nil }

// Holds is how long the caller waits before it gives up: a hung server
// never answers.
func (h *StdioHang) Holds(giveUp time.Duration) time.Duration { return giveUp }

// directive tells the process to hang instead of answering.
func (h *StdioHang) directive() string { return wire.MCPFaultStdioHang }

// stdioHangKind is the fault table's row for stdio_hang.
func stdioHangKind() kindRow {
	return kindRow{
		Name: wire.MCPFaultStdioHang,
		Get: func(f *Fault) action {
			return nonNil(f.StdioHang)
		},
		Probes: stdioHangProbes,
		Traits: kindTraits{transport: wire.MCPTransportStdio},
	}
}

func stdioHangProbes() []fault.Probe[Fault] {
	return []fault.Probe[Fault]{
		{Name: "stdio-hang", Doc: "execute the tools/call, then make the stdio server process hang: it never answers", At: fault.AtToolCall, Build: func(fault.Spot, fault.Settings) Fault {
			return Fault{StdioHang: &StdioHang{}}
		}},
	}
}
