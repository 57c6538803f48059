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
	// MCPCall is a tools/call the ledger received; UnknownTool marks one of
	// a tool it did not offer.
	MCPCall MCPKind = "call"
	// MCPWrite is a ledger line written and synced.
	MCPWrite MCPKind = "write"
	// MCPResult is a call answered; Dedup marks one answered from an earlier
	// call with the same key, Fault names the fault or failure that answered
	// it in the tool's place (MCPFaultIsError, MCPFaultWriteFailed, …), and
	// Status is the answer's HTTP status when it was an error.
	MCPResult MCPKind = "result"
	// MCPFault is a fault that fired; Fault names it (the MCPFault…
	// names), PID is the ledger-stdio process it was directed at, if any.
	MCPFault MCPKind = "fault"
	// MCPCancelled is a call the client gave up before its answer; Cause
	// says how.
	MCPCancelled MCPKind = "cancelled"
	// MCPSession is any other JSON-RPC message at the run's own address
	// (initialize, tools/list, notifications, the GET and DELETE of a
	// session); Method is its method.
	MCPSession MCPKind = "session"
	// MCPSessionRefused is a session step (initialize, tools/list) that a
	// fail_before_execute fault with that method refused before the server
	// handled it; Method is its method. It stands instead of the step's
	// MCPSession, and is recorded for the run the step arrived for, or
	// under "" (then only global faults apply).
	MCPSessionRefused MCPKind = "session_refused"
	// MCPToolsChanged is a change of the server's tool list that a
	// change_tools fault made: Tool is the tool, Change MCPToolRemoved or
	// MCPToolAdded (a rename is the old name removed and the new one
	// added); the server sent its sessions notifications/tools/list_changed.
	MCPToolsChanged MCPKind = "tools_changed"
	// MCPSpawn is a ledger-stdio process (replaycheck ledger-stdio, the
	// stdio server a client spawns) opening its session with the ledger:
	// one per process the client started. PID is its process id.
	MCPSpawn MCPKind = "spawn"
	// MCPExit is a ledger-stdio process ending: PID is its process id (as on
	// its MCPSpawn), Tool and RequestID the call it had in flight when there
	// was one, and End says how (with Fault naming the MCPFaultStdio… fault
	// when one made it exit). One per process at most.
	MCPExit MCPKind = "exit"
	// MCPUnforwarded is a tools/call a ledger-stdio process read from its
	// client and never sent to the ledger: the client gave it up
	// (notifications/cancelled, or closing the process's stdin) before the
	// process had written it out, or the process could not write it, or
	// wrote it as it closed its session and the ledger took the close
	// first (the call was refused, unknown session). Tool names it and PID the process. The
	// call did not run, and no MCPCall stands for it: it reached only the
	// harness's own stdio server, which the process reports as it ends.
	MCPUnforwarded MCPKind = "unforwarded"
)

// MCPExitEnd is how a ledger-stdio process ended: the End of its MCPExit
// event. It is written in JSON as its name.
type MCPExitEnd string

// How a ledger-stdio process ended.
const (
	// MCPExitStdinClosed: the client closed the process's stdin and the
	// process closed its ledger session and exited 0: a clean end.
	MCPExitStdinClosed MCPExitEnd = "stdin_closed"
	// MCPExitStopped: the process was stopped (a signal, or it failed) and
	// closed its ledger session as it ended.
	MCPExitStopped MCPExitEnd = "stopped"
	// MCPExitGone: the process's connections to the ledger closed while its
	// session was open (its standalone stream ended without a DELETE): it
	// was killed or crashed.
	MCPExitGone MCPExitEnd = "gone"
	// MCPExitFault: a stdio fault the ledger directed at the process made it
	// exit; the event's Fault names it (MCPFaultStdio…), and its row in
	// MCPFaultMeanings says when it exited.
	MCPExitFault MCPExitEnd = "fault"
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

// MCPProtocol is an MCP protocol version, as the specification names it
// (its release date). The zero value is none: negotiate.
type MCPProtocol string

// The MCP protocol versions replaycheck's MCP sides speak, newest first.
// From MCPProtocol20260728 on (SEP-2575) requests are self-describing: no
// initialize, no session; a request whose response stream broke is lost
// and the client must re-issue it with a new id. Before it, a client
// initializes a session and a broken stream's request is its own to retry
// or not.
const (
	MCPProtocol20260728 MCPProtocol = "2026-07-28"
	MCPProtocol20251125 MCPProtocol = "2025-11-25"
	MCPProtocol20250618 MCPProtocol = "2025-06-18"
	MCPProtocol20250326 MCPProtocol = "2025-03-26"
	MCPProtocol20241105 MCPProtocol = "2024-11-05"
)

// MCPProtocols returns the protocol versions replaycheck speaks, newest first.
func MCPProtocols() []MCPProtocol {
	return []MCPProtocol{MCPProtocol20260728, MCPProtocol20251125, MCPProtocol20250618, MCPProtocol20250326, MCPProtocol20241105}
}

// Served returns the versions a server pinned to p speaks, newest first:
// every version when p is none; p alone when p is self-describing
// (2026-07-28 on: there is no initialize to negotiate down with); else p
// and the older initialize-era versions, as a server of p's release
// answers a client that initializes with an older one (Codex CLI and
// Gemini CLI ask for 2025-06-18).
func (p MCPProtocol) Served() []MCPProtocol {
	switch {
	case p == "":
		return MCPProtocols()
	case p.Stateless():
		return []MCPProtocol{p}
	}
	var out []MCPProtocol
	for _, v := range MCPProtocols() {
		if !v.Stateless() && v <= p {
			out = append(out, v)
		}
	}
	return out
}

// Stateless reports whether p is a protocol of self-describing requests
// (2026-07-28 and later), where a re-issue after a broken stream is what
// the client must do.
func (p MCPProtocol) Stateless() bool { return p >= MCPProtocol20260728 }

// MCPToolChange is what a change_tools fault did to one tool: the Change of
// an MCPToolsChanged event. It is written in JSON as its name.
type MCPToolChange string

// The changes of a tool list.
const (
	MCPToolRemoved MCPToolChange = "removed"
	MCPToolAdded   MCPToolChange = "added"
)

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
	// PID is the process id a ledger-stdio process announced: on its
	// MCPSpawn and its MCPExit, and on an MCPFault the ledger directed at it.
	PID string `json:"pid,omitempty"`
	// Fault is an MCP fault name (the MCPFault… names; MCPFaultMeaningOf says
	// what it means): on an MCPFault the fault that fired, on an MCPResult the
	// fault or failure that answered the call in the tool's place, on an
	// MCPExit whose End is MCPExitFault the fault that made the process exit.
	// It is a plain string, as the fault names are the ledger's YAML names
	// and header values, and a newer history's name reads back as itself.
	Fault string `json:"fault,omitempty"`
	// Method is the method of an MCPSession or MCPSessionRefused step: a
	// JSON-RPC method, or GET or DELETE for a session's stream.
	Method string `json:"method,omitempty"`
	// End is how the process of an MCPExit ended.
	End MCPExitEnd `json:"end,omitempty"`
	// Change is what an MCPToolsChanged did to Tool.
	Change MCPToolChange `json:"change,omitempty"`
	// Cause is why the client of an MCPCancelled call gave up, as the ledger
	// saw it: "notifications/cancelled", "stream closed" (its POST's
	// connection closed) or "context cancelled".
	Cause string `json:"cause,omitempty"`
	// UnknownTool marks an MCPCall of a tool the server did not offer when
	// the call arrived: it got the MCP unknown-tool error and ran nothing.
	UnknownTool bool `json:"unknown_tool,omitempty"`
	// Dedup marks an MCPResult answered from an earlier call with the same
	// idempotency key: the tool did not run again.
	Dedup bool `json:"dedup,omitempty"`
	// Status is the HTTP status an MCPResult's answer went out with when it
	// was an error (400 or more); 0 otherwise.
	Status int `json:"status,omitempty"`
	// Protocol is the MCP protocol version the message was served at: on
	// the MCPSession of an initialize, the version the server answered (the
	// session's negotiated version); on server/discover, on any request of a
	// stateless protocol and on an MCPCall, the version the request or its
	// session used. "" where the ledger could not tell, and in a history
	// that predates it.
	Protocol MCPProtocol `json:"protocol,omitempty"`
}

// IsFault reports whether e is the firing of the MCP fault called name.
func (e MCPEvent) IsFault(name string) bool { return e.Kind == MCPFault && e.Fault == name }

// IsExit reports whether e is a ledger-stdio process ending, and whether it
// died with a call in flight (Tool is set): its client got no answer to that
// call from it.
func (e MCPEvent) IsExit() (exit, inFlight bool) {
	if e.Kind != MCPExit {
		return false, false
	}
	m, _ := MCPFaultMeaningOf(e.Fault)
	return true, e.Tool != "" && m.Stdio != StdioExitAfterAnswer
}

// IsDedup reports whether e is a result answered from an earlier call with
// the same idempotency key.
func (e MCPEvent) IsDedup() bool { return e.Kind == MCPResult && e.Dedup }
