package wire

import (
	"slices"
	"strconv"
	"strings"
)

// RequestKind is how the upstream fake classified a model request: initial
// (no tool result) or follow_up (it carries one). It is written in JSON as
// its name.
type RequestKind string

// Request kinds.
const (
	// KindInitial is a request that carries no tool result.
	KindInitial RequestKind = "initial"
	// KindFollowUp is a request that carries a tool result.
	KindFollowUp RequestKind = "follow_up"
	// KindAny is no kind of request: in a count key it counts both kinds.
	KindAny RequestKind = "any"
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
	// OutcomeClientGone is a request whose client left during a delay (or
	// during a relayed stream) before its outcome was decided.
	OutcomeClientGone Outcome = "client_gone"
	// OutcomeBadRequest is a request refused as malformed (400) or oversized (413).
	OutcomeBadRequest Outcome = "bad_request"
	// OutcomeRelayFailed is a relay whose provider could not be reached (502).
	OutcomeRelayFailed Outcome = "relay_failed"
	// OutcomeCassetteMiss is a replayed request that no cassette entry
	// matches (404, naming the closest entry).
	OutcomeCassetteMiss Outcome = "cassette_miss"
	// OutcomeStreamError is a 200 stream the upstream ended with its
	// dialect's in-stream error event (a stream_error fault).
	OutcomeStreamError Outcome = "stream_error"
	// OutcomeStalledStream is a stream that a stall fault held forever: it
	// went silent until the client left or the server shut down.
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
