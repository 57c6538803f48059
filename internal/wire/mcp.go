package wire

import (
	"time"

	"github.com/replaycheck/replaycheck/internal/duration"
)

// MCPKind is the kind of an MCP event the ledger reported. It is written in
// JSON as its name.
type MCPKind string

// MCP event kinds.
const (
	// MCPCall is a tools/call the ledger received; Detail is
	// MCPCallUnknownTool for a tool it did not offer.
	MCPCall MCPKind = "call"
	// MCPWrite is a ledger line written and synced.
	MCPWrite MCPKind = "write"
	// MCPResult is a call answered; Detail may say MCPResultDedup or
	// MCPFaultIsError.
	MCPResult MCPKind = "result"
	// MCPFault is a fault that fired; Detail names it (the MCPFault…
	// names).
	MCPFault MCPKind = "fault"
	// MCPCancelled is a call the client gave up before its answer; Detail
	// says how.
	MCPCancelled MCPKind = "cancelled"
	// MCPSession is any other JSON-RPC message at the run's own address
	// (initialize, tools/list, notifications); Detail is its method.
	MCPSession MCPKind = "session"
	// MCPSessionRefused is a session step (initialize, tools/list) that a
	// fail_before_execute fault with that method refused before the server
	// handled it; Detail is its method. It stands instead of the step's
	// MCPSession, and is recorded for the run the step arrived for, or
	// under "" (then only global faults apply).
	MCPSessionRefused MCPKind = "session_refused"
	// MCPToolsChanged is a change of the server's tool list that a
	// change_tools fault made: Tool is the tool, Detail MCPToolRemoved or
	// MCPToolAdded (a rename is the old name removed and the new one
	// added); the server sent its sessions notifications/tools/list_changed.
	MCPToolsChanged MCPKind = "tools_changed"
	// MCPSpawn is a ledger-stdio process (replaycheck ledger-stdio, the
	// stdio server a client spawns) opening its session with the ledger:
	// one per process the client started. Detail is its process id.
	MCPSpawn MCPKind = "spawn"
	// MCPExit is a ledger-stdio process ending: PID is its process id, Tool
	// and RequestID the call it had in flight when there was one, and
	// Detail says how: the MCPFaultStdio… name of the fault that made it
	// exit, MCPExitStdinClosed or MCPExitStopped (a clean end: it closed its
	// session with the ledger), or MCPExitGone (it went away without closing
	// its session: killed or crashed). One per process at most.
	MCPExit MCPKind = "exit"
)

// The Detail of an MCPExit event that no fault caused.
const (
	// MCPExitStdinClosed: the client closed the process's stdin and the
	// process closed its ledger session and exited 0: a clean end.
	MCPExitStdinClosed = "stdin_closed"
	// MCPExitStopped: the process was stopped (a signal, or it failed) and
	// closed its ledger session as it ended.
	MCPExitStopped = "stopped"
	// MCPExitGone: the process's connections to the ledger closed while its
	// session was open (its standalone stream ended without a DELETE): it
	// was killed or crashed.
	MCPExitGone = "gone"
)

// MCPTransport is how a client reaches the MCP server: over Streamable HTTP,
// or over stdio, spawning the server as a process (replaycheck
// ledger-stdio). The zero value is either.
type MCPTransport string

// The MCP transports.
const (
	MCPTransportAny   MCPTransport = ""
	MCPTransportHTTP  MCPTransport = "http"
	MCPTransportStdio MCPTransport = "stdio"
)

// The Detail of an MCPToolsChanged event.
const (
	MCPToolRemoved = "removed"
	MCPToolAdded   = "added"
)

// MCPCallUnknownTool is the Detail of an MCPCall for a tool the server did
// not offer when the call arrived: it got the MCP unknown-tool error and ran
// nothing.
const MCPCallUnknownTool = "unknown_tool"

// MCPResultDedup is the Detail of an MCPResult event answered from an
// earlier call with the same idempotency key.
const MCPResultDedup = "dedup"

// MCPEvent is one thing the ledger MCP server saw or did: the record the
// ledger keeps, the control API's timeline shows and a run's history
// stores. In JSON it is the history's record: Time and Token are the
// ledger's own (the history has At, the offset of Time from the run's start,
// and the run's token once).
type MCPEvent struct {
	// Time is when the ledger saw it, by its clock.
	Time time.Time `json:"-"`
	// Token is the run token the event belongs to, "" when none.
	Token string `json:"-"`
	// At is Time as an offset from the run's start; set by the history.
	At   duration.Duration `json:"at"`
	Kind MCPKind           `json:"kind"`
	Tool string            `json:"tool,omitempty"`
	// RequestID is the JSON-RPC id as text.
	RequestID string `json:"request_id,omitempty"`
	Entry     string `json:"entry,omitempty"`
	// Key is the idempotency key a write, a write failure or an MCPCall
	// carried (its KeyArgument argument).
	Key string `json:"key,omitempty"`
	// Args, on an MCPCall, are the call's arguments as CallArgs renders
	// them (canonical JSON without the idempotency key): what tells two
	// calls of one tool apart. "" in a history that predates them.
	Args string `json:"args,omitempty"`
	// PID is the process id a ledger-stdio process announced, on its
	// MCPExit events (its MCPSpawn carries it in Detail).
	PID string `json:"pid,omitempty"`
	// Detail says more: the fault's name, "is_error", "dedup", the cancel
	// cause, the session step's method (see the kinds).
	Detail string `json:"detail,omitempty"`
}

// IsFault reports whether e is the firing of the MCP fault called name.
func (e MCPEvent) IsFault(name string) bool { return e.Kind == MCPFault && e.Detail == name }

// IsExit reports whether e is a ledger-stdio process ending, and whether it
// died with a call in flight (Tool is set): its client got no answer to that
// call from it.
func (e MCPEvent) IsExit() (exit, inFlight bool) {
	if e.Kind != MCPExit {
		return false, false
	}
	m, _ := MCPFaultMeaningOf(e.Detail)
	return true, e.Tool != "" && m.Stdio != StdioExitAfterAnswer
}

// IsDedup reports whether e is a result answered from an earlier call with
// the same idempotency key.
func (e MCPEvent) IsDedup() bool { return e.Kind == MCPResult && e.Detail == MCPResultDedup }
