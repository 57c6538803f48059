package ledger

import (
	"maps"
	"time"
)

// Counts are what the ledger counted for one run token or in total.
type Counts struct {
	// Calls counts tools/call requests received, by tool name, including
	// faulted ones and calls of tools the ledger does not have.
	Calls map[string]int `json:"calls"`
	// Writes counts ledger lines written and synced.
	Writes int `json:"writes"`
	// Keys counts distinct idempotency keys seen by commit_write_keyed.
	Keys int `json:"keys"`
	// Cancellations counts calls the client cancelled, or whose stream it
	// closed, before the answer; a cancel notice for an answered call is not one.
	Cancellations int `json:"cancellations"`
	// WriteFailures counts writes that could not be persisted (a full disk,
	// a failing file): each call was answered with an isError result saying
	// nothing was recorded, and none counts in Writes.
	WriteFailures int `json:"write_failures"`
	// Messages counts the other MCP messages: initialize, tools/list,
	// notifications, and GETs and DELETEs of a session.
	Messages int `json:"messages"`
}

// CallsTotal returns the number of tools/call requests over all tools.
func (c Counts) CallsTotal() int {
	n := 0
	for _, v := range c.Calls {
		n += v
	}
	return n
}

func (c Counts) clone() Counts {
	c.Calls = maps.Clone(c.Calls)
	if c.Calls == nil {
		c.Calls = map[string]int{}
	}
	return c
}

// Event kinds. A new kind also needs a constant in harness/history
// (outcome.go) and a row in harness/run/facts.go, whose test lists these.
const (
	EventCall      = "call"      // a tools/call was received
	EventWrite     = "write"     // a ledger line was written and synced
	EventResult    = "result"    // the call was answered
	EventFault     = "fault"     // a fault fired; Detail names it
	EventCancelled = "cancelled" // the client gave up before the answer; Detail says how
	EventSession   = "session"   // another MCP message at the run's own address; Detail is its method
	// EventSessionRefused is a session step (initialize, tools/list) that a
	// fail_before_execute fault with that method refused; Detail is the
	// method. It stands instead of the step's EventSession, and is recorded
	// for the run the step arrived for, or under "" (then only global
	// faults apply).
	EventSessionRefused = "session_refused"
	// EventToolsChanged is a change of the server's tool list that a
	// change_tools fault made: Tool is the tool, Detail ToolRemoved or
	// ToolAdded (a rename is the old name removed and the new one added).
	EventToolsChanged = "tools_changed"
)

// The Detail of an EventToolsChanged.
const (
	ToolRemoved = "removed"
	ToolAdded   = "added"
)

// CallUnknownTool is the Detail of the EventCall of a tools/call for a tool
// the server did not offer when it arrived (the SDK answers it with its
// "unknown tool" error; nothing runs).
const CallUnknownTool = "unknown_tool"

// The Detail of the EventFault of the faults that forget a session or
// refuse a call as unauthorized, and of change_tools.
const (
	FaultChangeTools               = "change_tools"
	FaultExpireSession             = "expire_session"               // forgotten before the call ran
	FaultExpireSessionAfterExecute = "expire_session_after_execute" // forgotten after it ran
	FaultUnauthorized              = "unauthorized"
)

// FaultWriteFailed is the Detail of the EventFault, and of the EventResult,
// of a call whose write could not be persisted. Unlike the armed faults it
// is the ledger's own failure, counted in Counts.WriteFailures.
const FaultWriteFailed = "write_failed"

// Event is one thing the ledger saw. Events are JSON-serialisable; the harness
// builds its history from them.
type Event struct {
	Time      time.Time `json:"time"`
	Token     string    `json:"token,omitempty"`
	Kind      string    `json:"kind"` // one of the Event… constants
	Tool      string    `json:"tool,omitempty"`
	RequestID string    `json:"request_id,omitempty"` // JSON-RPC id as text
	Entry     string    `json:"entry,omitempty"`
	Key       string    `json:"key,omitempty"`
	Detail    string    `json:"detail,omitempty"` // fault name, "is_error", "dedup", cancel cause…
}

// run is what the ledger keeps for one run token. Guarded by Server.mu.
type run struct {
	counts Counts
	keys   map[string]struct{}
	events []Event
	faults []*armed
}

func newRun() *run {
	return &run{counts: Counts{Calls: map[string]int{}}, keys: map[string]struct{}{}}
}
