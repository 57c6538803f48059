package ledger

import (
	"fmt"
	"strings"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/replaycheck/replaycheck/fakes/fault"
	"github.com/replaycheck/replaycheck/internal/wire"
)

// StdioExit makes a ledger-stdio process exit, as a crash does: non-zero,
// without a word on stdout. At says when. At a call (before_execute,
// after_execute, after_answer) it fires only on calls that came from a
// ledger-stdio process; at start only on a ledger-stdio process's
// initialize (a spawn), and it takes no tool. Over plain HTTP it never
// matches. The ledger counts its occurrences per run, so a crash loop
// (at: start, times: N) spans the processes the client respawns.
type StdioExit struct {
	// At is when the process exits: StdioExitAtStart, StdioExitBeforeExecute,
	// StdioExitAfterExecute (the default, "") or StdioExitAfterAnswer.
	At string `json:"at,omitempty" yaml:"at,omitempty" jsonschema:"enum=,enum=start,enum=before_execute,enum=after_execute,enum=after_answer" jsonschema_description:"When the ledger-stdio process exits (non-zero, as a crash): start (as it starts, before serving any stdio request; no tool; with times N a crash loop of N spawns), before_execute (with the call in flight, nothing written), after_execute (default: the write is synced, the answer is never written: the ambiguous case) or after_answer (right after writing and flushing the answer)."`
}

// KindStdioExit is the YAML name of the stdio_exit fault kind; its fault
// events are named by At (wire.MCPFaultStdioExit…).
const KindStdioExit = "stdio_exit"

// The StdioExit.At values.
const (
	StdioExitAtStart       = "start"
	StdioExitBeforeExecute = "before_execute"
	StdioExitAfterExecute  = "after_execute"
	StdioExitAfterAnswer   = "after_answer"
)

func stdioExitAts() []string {
	return []string{StdioExitAtStart, StdioExitBeforeExecute, StdioExitAfterExecute, StdioExitAfterAnswer}
}

// Check reports a bad setting, naming it (fault.Action).
func (e *StdioExit) Check(*Fault) error {
	switch e.At {
	case "", StdioExitAtStart, StdioExitBeforeExecute, StdioExitAfterExecute, StdioExitAfterAnswer:
		return nil
	}
	return &FieldError{Field: "at", Err: fmt.Errorf("at %q: want %s, or none for %s", e.At, strings.Join(stdioExitAts(), ", "), StdioExitAfterExecute)}
}

// Holds is zero: the kind holds no answer back (fault.Action).
func (*StdioExit) Holds(time.Duration) time.Duration { return 0 }

// atSpawn reports whether the process exits as it starts.
func (e *StdioExit) atSpawn() bool { return e.At == StdioExitAtStart }

// name is the fault's MCP fault name, by At.
func (e *StdioExit) name() string {
	switch e.At {
	case StdioExitAtStart:
		return wire.MCPFaultStdioExitAtStart
	case StdioExitBeforeExecute:
		return wire.MCPFaultStdioExitBeforeExecute
	case StdioExitAfterAnswer:
		return wire.MCPFaultStdioExitAfterAnswer
	}
	return wire.MCPFaultStdioExitAfterExecute
}

// preempt keeps the tool from running when the process exits before
// execute; the answer is never written (the process dies on it).
func (e *StdioExit) preempt(s *Server, c *call) *mcp.CallToolResult {
	if e.At != StdioExitBeforeExecute {
		return nil
	}
	return textResult("ledger: not executed; the stdio process exits before execute")
}

// directive tells the process to exit: before writing the answer, or after.
func (e *StdioExit) directive() string { return e.name() }

// stdioExitKind is the fault table's row for stdio_exit.
func stdioExitKind() kindRow {
	return kindRow{
		Name: KindStdioExit,
		Get: func(f *Fault) action {
			return nonNil(f.StdioExit)
		},
		Probes: stdioExitProbes,
		Traits: kindTraits{transport: wire.MCPTransportStdio},
	}
}

func stdioExitProbes() []fault.Probe[Fault] {
	return []fault.Probe[Fault]{
		{Name: "stdio-crash-loop", Doc: "make the stdio server process exit as it starts, before serving (a crash loop when always)", At: fault.AtSpawn, Build: func(fault.Spot, fault.Settings) Fault {
			return Fault{StdioExit: &StdioExit{At: StdioExitAtStart}}
		}},
		{Name: "stdio-exit-before", Doc: "make the stdio server process exit with the tools/call in flight, before it executes", At: fault.AtToolCall, Build: func(fault.Spot, fault.Settings) Fault {
			return Fault{StdioExit: &StdioExit{At: StdioExitBeforeExecute}}
		}},
		{Name: "stdio-exit-after", Doc: "execute the tools/call, then make the stdio server process exit before it answers", At: fault.AtToolCall, Build: func(fault.Spot, fault.Settings) Fault {
			return Fault{StdioExit: &StdioExit{At: StdioExitAfterExecute}}
		}},
		{Name: "stdio-exit-after-answer", Doc: "answer the tools/call, then make the stdio server process exit", At: fault.AtToolCall, Build: func(fault.Spot, fault.Settings) Fault {
			return Fault{StdioExit: &StdioExit{At: StdioExitAfterAnswer}}
		}},
	}
}
