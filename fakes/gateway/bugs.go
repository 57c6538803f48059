package gateway

import (
	"fmt"
	"slices"
	"strings"
)

// Bug names one replay bug the gateway can be switched to have. The zero set
// of bugs is the guarded gateway.
type Bug string

// The switches. Their behaviour is documented in [AllBugs]; mode "naive"
// turns every one on.
const (
	ReplayAfterDispatch      Bug = "replay-after-dispatch"
	StreamSplice             Bug = "stream-splice"
	MCPResendOnDisconnect    Bug = "mcp-resend-on-disconnect"
	BreakerCountsToolErrors  Bug = "breaker-counts-tool-errors"
	RetryEverything          Bug = "retry-everything"
	NoCancelOnTimeout        Bug = "no-cancel-on-timeout"
	FreshKeyPerAttempt       Bug = "fresh-key-per-attempt"
	RunToolsFromCutStream    Bug = "run-tools-from-cut-stream"
	HideServedModel          Bug = "hide-served-model"
	StaleToolList            Bug = "stale-tool-list"
	MCPResendOnSessionExpiry Bug = "mcp-resend-on-session-expiry"
	MCPRetryUnauthorized     Bug = "mcp-retry-unauthorized"
	MCPReplayAfterStdioDeath Bug = "mcp-replay-after-stdio-death"
	MCPReissueWithoutKey     Bug = "mcp-reissue-without-key"
	CheckpointAtTurnEnd      Bug = "checkpoint-at-turn-end"
)

// BugInfo is one row of the switch table: a bug and what turning it on does.
type BugInfo struct {
	Bug Bug    `json:"bug"`
	Doc string `json:"doc"`
}

// AllBugs returns the table of switches, in a fixed order, with one line of
// documentation each. The slice is a fresh copy on every call.
func AllBugs() []BugInfo {
	return []BugInfo{
		{ReplayAfterDispatch, "a failure after a tool call was sent to the MCP server is retried and falls back, re-running the whole tool loop (seed 000 Before); off: it is returned at once, while failures before any dispatch still retry"},
		{StreamSplice, "a streamed chat whose follow-up fails after chunks were delivered falls back and splices the fallback's chunks after them (seed 000 Before); off: an SSE error event follows the delivered chunks"},
		{MCPResendOnDisconnect, "a tools/call whose connection dropped is sent again on a fresh MCP session (seed 001); off: the model gets an explicit unknown-outcome result and nothing is re-sent"},
		{BreakerCountsToolErrors, "the per-server circuit breaker counts isError tool results as strikes, so 3 rejected calls make the server 'unreachable' (seed 002); off: only transport failures count and any completed round trip resets it"},
		{RetryEverything, "the router retries every failure status up to num_retries and ignores Retry-After, retry-after-ms and x-should-retry: false (seeds 003, 004 #2); off: only connection failures, 408, 429, 500, 502, 503, 504 and 529 retry (400/401/403/404/422, 501 and x-should-retry: false stop at once), with capped, jittered backoff that honours Retry-After within a total-wait budget; num_retries bounds attempts either way"},
		{NoCancelOnTimeout, "a tool call that exceeds the tool timeout is abandoned but left running on the wire (seed 004 #4); off: the call is cancelled on the wire"},
		{FreshKeyPerAttempt, "keyed writes get a new idempotency key on every attempt; off: one key per logical action (request and tool call), reused on every attempt"},
		{RunToolsFromCutStream, "a streamed model answer cut after its tool calls were complete, before its terminal event, has those tools run and the same model call sent again without their results, so the model asks again and they run twice (an agent that runs tool calls as they stream in); off: a cut stream is a failed call and none of its tool calls run"},
		{HideServedModel, "the answer to the app names the model group it asked for, also when the upstream served another model in its place (a silent fallback, seed 004 #7); off: the answer names the model the upstream served (chat and Responses pass the upstream's model id through, Messages takes it from the final upstream answer)"},
		{StaleToolList, "the MCP tool list is kept for the session's life: notifications/tools/list_changed is ignored, so the model is offered (and calls) tools the server removed or renamed, and never one it added (seed 004 #3); off: the list is dropped on the notification and listed anew, also between the rounds of one request"},
		{MCPResendOnSessionExpiry, "a tools/call whose connection dropped is sent again on a new session when its session turned out to have ended (a ping fails: the server forgot it), taking the session's end for proof that the call did not run (seed 002's session-expired retry path); off: only a call the server refused with 404, or that never left the gateway, goes on a new session, once"},
		{MCPRetryUnauthorized, "a tools/call the MCP server refused as unauthorized (401) also after the transport re-authorized and sent it again is sent again on new sessions, up to 3 more times (seed 004 #2: refresh once, then terminal); off: the model is told the call was refused and did not run"},
		{MCPReplayAfterStdioDeath, "a tools/call whose stdio MCP server died (exited, or broke its stdout) after the call was written to it is sent again on a respawned server, taking the death for a session-expired error (hermes-agent before PR #106546, \"a stdio server dying mid-call no longer replays the tool call\"); off: the model gets an explicit unknown-outcome result and nothing is re-sent, and only a call never written to the server's stdin goes on a new process, once"},
		{CheckpointAtTurnEnd, "with a checkpoint file (run as a process a resume scenario kills), the turn's tool calls are checkpointed only at the end of the turn, so a gateway resumed after a kill in the middle of a turn runs them again (microsoft/agent-framework #3938: checkpoints at superstep boundaries); off: each call is checkpointed before it is sent and with its result before the model is answered, and a resume never sends a checkpointed call again (one sent without a recorded result is reported to the model as of unknown outcome)"},
		{MCPReissueWithoutKey, "on MCP 2026-07-28 a tools/call whose response stream broke is re-issued as a new request with a new id and without the action's idempotency key (a keyed tool gets a key of the new request), as the spec's at-least-once rule allows, so a call that ran is run again; off: a keyed call is re-issued once with the same key, which the server deduplicates, and a non-idempotent one is held: the model gets an explicit unknown-outcome result"},
	}
}

// Bugs is a set of switched-on bugs. A nil or empty Bugs is the guarded
// gateway. Bugs is not safe for concurrent mutation; the gateway copies it.
type Bugs map[Bug]bool

// Has reports whether b is switched on. It is safe on a nil Bugs.
func (bs Bugs) Has(b Bug) bool { return bs[b] }

// Names returns the switched-on bugs in table order.
func (bs Bugs) Names() []Bug {
	var out []Bug
	for _, info := range AllBugs() {
		if bs[info.Bug] {
			out = append(out, info.Bug)
		}
	}
	return out
}

// String renders the set as a comma-separated list in table order, or "none".
func (bs Bugs) String() string {
	names := bs.Names()
	if len(names) == 0 {
		return "none"
	}
	parts := make([]string, len(names))
	for i, n := range names {
		parts[i] = string(n)
	}
	return strings.Join(parts, ",")
}

// Modes of ParseBugs.
const (
	ModeNaive   = "naive"
	ModeGuarded = "guarded"
)

// ParseBugs builds a switch set from a mode and single switch names. Mode
// "naive" turns every switch on, "guarded" (or "") none; names add single
// switches. An unknown mode or name is an error that lists the valid ones.
func ParseBugs(mode string, names []string) (Bugs, error) {
	bs := Bugs{}
	switch mode {
	case ModeNaive:
		for _, info := range AllBugs() {
			bs[info.Bug] = true
		}
	case ModeGuarded, "":
	default:
		return nil, fmt.Errorf("unknown gateway mode %q: want %s or %s", mode, ModeNaive, ModeGuarded)
	}
	for _, n := range names {
		b := Bug(strings.TrimSpace(n))
		if !slices.ContainsFunc(AllBugs(), func(i BugInfo) bool { return i.Bug == b }) {
			return nil, fmt.Errorf("unknown gateway bug %q: valid names are %s", n, validBugNames())
		}
		bs[b] = true
	}
	return bs, nil
}

func validBugNames() string {
	var names []string
	for _, info := range AllBugs() {
		names = append(names, string(info.Bug))
	}
	return strings.Join(names, ", ")
}
