package history

import (
	"slices"
	"strconv"
	"strings"
)

// Outcome is what became of one model request at the upstream fake: a normal
// answer, an injected error status, a cut connection and so on. It is written
// in JSON as its name ("forwarded", "injected_500"); an outcome this version
// does not know reads back as itself, and Known says so.
type Outcome string

// Outcomes besides the injected ones (see Injected).
const (
	// OutcomeForwarded is a normal answer, scripted or relayed.
	OutcomeForwarded Outcome = "forwarded"
	// OutcomeDelayed is a normal answer held back by a delay fault alone, a
	// dribble, or a stall that resumed.
	OutcomeDelayed Outcome = "delayed"
	// OutcomeDroppedStream is a stream whose connection was closed mid-way.
	OutcomeDroppedStream Outcome = "dropped_stream"
	// OutcomeReset is a connection reset before any byte.
	OutcomeReset Outcome = "reset"
	// OutcomeClientGone is a request whose client left before its answer.
	OutcomeClientGone Outcome = "client_gone"
	// OutcomeBadRequest is a request refused as malformed or oversized.
	OutcomeBadRequest Outcome = "bad_request"
	// OutcomeRelayFailed is a relay whose provider could not be reached.
	OutcomeRelayFailed Outcome = "relay_failed"
	// OutcomeCassetteMiss is a replayed request no cassette entry matched.
	OutcomeCassetteMiss Outcome = "cassette_miss"
	// OutcomeStreamError is a 200 stream the upstream ended with its
	// dialect's in-stream error event (stream_error).
	OutcomeStreamError Outcome = "stream_error"
	// OutcomeStalledStream is a stream the upstream held silent until the
	// client left (a stall forever).
	OutcomeStalledStream Outcome = "stalled_stream"
	// OutcomeTruncatedBody is a non-streamed 200 answer whose body the
	// upstream cut short (truncate), closing the connection.
	OutcomeTruncatedBody Outcome = "truncated_body"
)

// NamedOutcomes returns the outcomes that are not injected statuses, in a
// fixed order.
func NamedOutcomes() []Outcome {
	return []Outcome{OutcomeForwarded, OutcomeDelayed, OutcomeDroppedStream, OutcomeReset,
		OutcomeClientGone, OutcomeBadRequest, OutcomeRelayFailed, OutcomeCassetteMiss,
		OutcomeStreamError, OutcomeStalledStream, OutcomeTruncatedBody}
}

const injectedPrefix = "injected_"

// Injected returns the outcome of an error response with status that a
// respond fault injected ("injected_500"). status must be 100–599.
func Injected(status int) Outcome { return Outcome(injectedPrefix + strconv.Itoa(status)) }

// Injected returns the status of an injected error response, and ok false
// when o is not one.
func (o Outcome) Injected() (status int, ok bool) {
	s, ok := strings.CutPrefix(string(o), injectedPrefix)
	if !ok {
		return 0, false
	}
	n, err := strconv.Atoi(s)
	if err != nil || n < 100 || n > 599 || strconv.Itoa(n) != s {
		return 0, false
	}
	return n, true
}

// Known reports whether o is a named outcome or an injected status.
func (o Outcome) Known() bool {
	_, injected := o.Injected()
	return injected || slices.Contains(NamedOutcomes(), o)
}

// Cut reports whether the upstream broke the answer: it reset the
// connection, cut a plain answer's body short, or broke a stream after it
// began (see Dropped).
func (o Outcome) Cut() bool { return o == OutcomeReset || o == OutcomeTruncatedBody || o.Dropped() }

// Dropped reports whether the upstream broke a stream after it began: it
// dropped the connection, ended the stream with an error event, or stalled
// it until the client gave up. Each leaves the client with part of an
// answer and a failure a client may retry.
func (o Outcome) Dropped() bool {
	return o == OutcomeDroppedStream || o == OutcomeStreamError || o == OutcomeStalledStream
}

// MCPKind is the kind of an MCP event the ledger reported.
type MCPKind string

// MCP event kinds.
const (
	// MCPCall is a tools/call the ledger received.
	MCPCall MCPKind = "call"
	// MCPWrite is a ledger line written and synced.
	MCPWrite MCPKind = "write"
	// MCPResult is a call answered; Detail may say "dedup" or "is_error".
	MCPResult MCPKind = "result"
	// MCPFault is a fault that fired; Detail names it.
	MCPFault MCPKind = "fault"
	// MCPCancelled is a call the client gave up before its answer.
	MCPCancelled MCPKind = "cancelled"
	// MCPSession is any other JSON-RPC message (initialize, tools/list,
	// notifications); Detail is its method.
	MCPSession MCPKind = "session"
	// MCPSessionRefused is a session step (initialize, tools/list) that a
	// fail_before_execute fault refused before the server handled it;
	// Detail is its method. It stands instead of the step's MCPSession.
	MCPSessionRefused MCPKind = "session_refused"
	// MCPToolsChanged is a change of the server's tool list (a
	// change_tools fault): Tool is the tool, Detail MCPToolRemoved or
	// MCPToolAdded; the server sent its sessions
	// notifications/tools/list_changed.
	MCPToolsChanged MCPKind = "tools_changed"
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

// MCP fault names: the Detail of an MCPFault event, naming the fault that
// fired (see MCPEvent.IsFault).
const (
	MCPFaultDelay             = "delay"
	MCPFaultDropAfterExecute  = "drop_after_execute"
	MCPFaultFailBeforeExecute = "fail_before_execute"
	MCPFaultIsError           = "is_error"
	// MCPFaultWriteFailed is the ledger's own failure to persist a write.
	MCPFaultWriteFailed = "write_failed"
	MCPFaultChangeTools = "change_tools"
	// MCPFaultExpireSession forgot the call's session before it ran (404).
	MCPFaultExpireSession = "expire_session"
	// MCPFaultExpireSessionAfterExecute forgot the call's session after it
	// ran and closed the connection before the answer: the ambiguous case.
	MCPFaultExpireSessionAfterExecute = "expire_session_after_execute"
	// MCPFaultUnauthorized refused the call with 401.
	MCPFaultUnauthorized = "unauthorized"
	// MCPFaultDuplicateAnswer wrote the event answering the call twice on
	// its POST's stream; the call ran once.
	MCPFaultDuplicateAnswer = "duplicate_answer"
)

// MCPResultDedup is the Detail of an MCPResult event answered from an
// earlier call with the same idempotency key.
const MCPResultDedup = "dedup"

// IsFault reports whether e is the firing of the MCP fault called name.
func (e MCPEvent) IsFault(name string) bool { return e.Kind == MCPFault && e.Detail == name }

// IsDedup reports whether e is a result answered from an earlier call with
// the same idempotency key.
func (e MCPEvent) IsDedup() bool { return e.Kind == MCPResult && e.Detail == MCPResultDedup }
