// Package history holds the plain, serialisable record of one scenario run
// against one target: what was armed, what the client sent and received, what
// the model upstream and the ledger MCP server saw, and what the scenario
// expected. The runner writes a History; the rules read it; the reports render
// it. A History saved as JSON can be re-checked later without running anything.
// What the fakes saw is stored as the fakes recorded it, in the types of
// package wire (upstream requests, MCP events, fault reports).
package history

import (
	"encoding/json"
	"time"

	"github.com/replaycheck/replaycheck/internal/wire"
)

// History is everything observed in one run of one scenario on one target.
// Offsets (At, Start, End) are measured from Started, so a history is
// independent of the wall clock it ran at.
type History struct {
	// Scenario is the scenario's name; File is where it was loaded from.
	Scenario string `json:"scenario"`
	File     string `json:"file,omitempty"`
	// Tags are the scenario's tags, copied for selection and reports.
	Tags []string `json:"tags,omitempty"`
	// Target names the system under test, for example "builtin:guarded".
	Target string `json:"target"`
	// Token is the run token; Entry the ledger entry the scenario asked for.
	Token string `json:"token"`
	Entry string `json:"entry"`
	// Repetition, when not nil, is the run's place among the runs of a
	// repeated scenario (repeat: N, run --repeat); nil when it ran once.
	Repetition *Repetition `json:"repetition,omitempty"`
	// Started is when the run began; Duration how long it took.
	Started  string   `json:"started,omitempty"`
	Duration Duration `json:"duration"`
	// Setup is what the harness armed and the target's known limits.
	Setup Setup `json:"setup"`
	// Expect is what the scenario expects, checked by package rules.
	Expect Expect `json:"expect"`
	// Requests are the client's requests and the answers it got, in order.
	Requests []Exchange `json:"requests"`
	// Upstream are the requests the model upstream received for this token.
	Upstream []wire.UpstreamRequest `json:"upstream"`
	// MCP are the ledger server's events for this token.
	MCP []wire.MCPEvent `json:"mcp"`
	// TargetEvents are the kills and resumes of the target process in the run
	// (faults.target), in order; nil when it was never killed.
	TargetEvents []TargetEvent `json:"target_events,omitempty"`
	// Error, when set, says why the harness could not complete the run (for
	// example the target did not answer before the scenario's deadline).
	Error string `json:"error,omitempty"`
	// NotStarted reports that the target's instance for this run did not
	// start (an isolated run of a proxy whose process exited, say): Error
	// says why, and nothing of the target was judged.
	NotStarted bool `json:"not_started,omitempty"`
	// Notes say how the run differed from the plain scenario, for example a
	// retry-after hint added to injected errors; reports show them.
	Notes []string `json:"notes,omitempty"`
	// TargetOutput holds the last lines a started target (a proxy process)
	// printed by the end of the run, for diagnosing failures.
	TargetOutput []string `json:"target_output,omitempty"`
	// Faults say, for every armed fault, whether it fired.
	Faults []wire.FaultReport `json:"faults,omitempty"`
	// Unattributed is the traffic no run could own that reached the fakes
	// while this run went on; nil when there was none.
	Unattributed *Unattributed `json:"unattributed,omitempty"`
	// Harness is how well the harness itself kept time during the run; nil
	// when it was not measured (a history saved before it was).
	Harness *Harness `json:"harness,omitempty"`
}

// Harness is the evidence of the harness's own starvation during one run:
// how late its timers fired, beside the deadline it gave the run. A timeout
// that decided a run while the harness's clocks ran as late as it did
// measured how fast the machine ran, not what the target decided.
type Harness struct {
	// Lateness is the most a timer of the harness woke late at any moment
	// of the run (a probe that sleeps a few milliseconds over and over, see
	// package run): near 0 on a machine with CPU to spare, up to seconds on
	// a starved one.
	Lateness Duration `json:"lateness"`
	// Deadline is the run's deadline (--timeout or the scenario's own; it
	// restarts on the run's traffic); 0 when not known.
	Deadline Duration `json:"deadline,omitempty"`
	// Stalls are when the harness ran late during the run: each runs from
	// when a wake-up of the probe was due to when it came, where it came at
	// least StallMin late; merged where they overlap or nearly touch, in
	// order. A history whose Lateness is at least StallMin and has no
	// stalls was written without them (an older replaycheck).
	Stalls []Stall `json:"stalls,omitempty"`
}

// StallMin is the least lateness recorded as a stall (Harness.Stalls).
const StallMin = 5 * time.Millisecond

// Stall is a stretch of a run during which the harness ran late, as
// offsets from the run's start, and the most any one wake-up in it came
// late: a goroutine woken during a stall waited up to Most.
type Stall struct {
	Start Duration `json:"start"`
	End   Duration `json:"end"`
	Most  Duration `json:"most"`
}

// LateWithin returns the most any one wake-up of the harness came late
// during a stall that overlaps from to to (offsets from the run's start);
// for a history without stalls (see Harness.Stalls), its lateness.
func (h *Harness) LateWithin(from, to time.Duration) time.Duration {
	if len(h.Stalls) == 0 && h.Lateness.D() >= StallMin {
		return h.Lateness.D()
	}
	var late time.Duration
	for _, s := range h.Stalls {
		if s.Start.D() < to && s.End.D() > from {
			late = max(late, s.Most.D())
		}
	}
	return late
}

// Unattributed counts model requests and MCP messages that carried no run
// token and arrived at no run's own address, seen by the fakes during a run.
// With several runs at once they may belong to any of them.
type Unattributed struct {
	// Upstream counts model requests; MCP counts MCP messages (tool calls
	// and session steps).
	Upstream int `json:"upstream"`
	MCP      int `json:"mcp"`
	// Samples describe a few of them ("POST /v1/messages initial",
	// "tools/call commit_write").
	Samples []string `json:"samples,omitempty"`
}

// Setup records what the harness armed for the run and what it knows about
// the target's limits. Zero values mean "not known".
type Setup struct {
	// ToolCalls is the number of tool calls the fake model's script makes per
	// client request: the logical calls that may each execute once.
	ToolCalls int `json:"tool_calls"`
	// Tools are the tools the script calls, in script order.
	Tools []string `json:"tools,omitempty"`
	// NumRetries is the target's configured number of retries, or -1 when unknown.
	NumRetries int `json:"num_retries"`
	// Fallbacks reports whether the target has a fallback model group.
	Fallbacks bool `json:"fallbacks,omitempty"`
	// ToolTimeout is the target's tool timeout, when it has one.
	ToolTimeout Duration `json:"tool_timeout,omitempty"`
	// StreamIdleTimeout is the target's bound on a silent streamed model
	// answer, when it has one.
	StreamIdleTimeout Duration `json:"stream_idle_timeout,omitempty"`
	// UpstreamFaults, MCPFaults and Annotations are what was armed, as JSON.
	UpstreamFaults json.RawMessage `json:"upstream_faults,omitempty"`
	MCPFaults      json.RawMessage `json:"mcp_faults,omitempty"`
	Annotations    json.RawMessage `json:"annotations,omitempty"`
}

// Exchange is one client request to the target and the answer it got.
type Exchange struct {
	// Endpoint is chat, responses or messages; Path the URL path sent to.
	Endpoint string `json:"endpoint"`
	Path     string `json:"path"`
	Stream   bool   `json:"stream,omitempty"`
	// Start and End are offsets from the run's start.
	Start Duration `json:"start"`
	End   Duration `json:"end"`
	// Status is the HTTP status, 0 when no answer arrived.
	Status int `json:"status"`
	// Body is an excerpt of the answer's body (the first few KB).
	Body string `json:"body,omitempty"`
	// DataChunks counts SSE `data: {…}` events that are not errors;
	// ErrorEvents counts SSE events carrying an error.
	DataChunks  int `json:"data_chunks,omitempty"`
	ErrorEvents int `json:"error_events,omitempty"`
	// ResponseIDs are the distinct response ids seen in the stream's chunks,
	// in order of first appearance.
	ResponseIDs []string `json:"response_ids,omitempty"`
	// Models are the distinct model ids the answer named (chat `model`,
	// Responses `response.model`, Messages `message.model`), in order of
	// first appearance; nil when it named none.
	Models []string `json:"models,omitempty"`
	// Done reports that the stream carried its terminal event ([DONE],
	// response.completed, message_stop).
	Done bool `json:"done,omitempty"`
	// CleanEnd reports that the body was read to its end without a transport error.
	CleanEnd bool `json:"clean_end"`
	// TransportError is the error that cut the exchange, if any.
	TransportError string `json:"transport_error,omitempty"`
	// TimedOut reports that the scenario's deadline expired before the answer ended.
	TimedOut bool `json:"timed_out,omitempty"`
	// Client, when set, is the run of a client target's command that stood
	// for this request; Status is then 0, Endpoint and Path are empty (the
	// client chose what to call) and the client's outcome is here.
	Client *ClientRun `json:"client,omitempty"`
	// Paths are, for a client run, the model API paths it called, in order
	// of first call.
	Paths []string `json:"paths,omitempty"`
}

// ClientRun is the outcome of one run of a client target's command.
type ClientRun struct {
	// Exit is the exit code; -1 when the command was killed or never started.
	Exit int `json:"exit"`
	// Killed reports that the command was killed at its deadline.
	Killed bool `json:"killed,omitempty"`
	// RunDelay, for a command killed at its deadline, is the longest any
	// of its processes had waited by then for a CPU while it could run:
	// how much of the deadline the machine's load took from it.
	RunDelay Duration `json:"run_delay,omitempty"`
	// Error says why the command could not be run at all.
	Error string `json:"error,omitempty"`
	// Stdout and Stderr are the ends of what it printed (the last few KB).
	Stdout string `json:"stdout,omitempty"`
	Stderr string `json:"stderr,omitempty"`
	// RunDir is the run's scratch directory ({{run_dir}}) when it was kept.
	RunDir string `json:"run_dir,omitempty"`
}

// Calls returns the tools/call events, optionally only those of tool.
func (h *History) Calls(tool string) []wire.MCPEvent { return h.mcp(wire.MCPCall, tool) }

// Writes returns the executed ledger writes.
func (h *History) Writes() []wire.MCPEvent { return h.mcp(wire.MCPWrite, "") }

// MCPOf returns the MCP events of kind, optionally only those of tool.
func (h *History) MCPOf(kind wire.MCPKind, tool string) []wire.MCPEvent { return h.mcp(kind, tool) }

func (h *History) mcp(kind wire.MCPKind, tool string) []wire.MCPEvent {
	var out []wire.MCPEvent
	for _, e := range h.MCP {
		if e.Kind == kind && (tool == "" || e.Tool == tool) {
			out = append(out, e)
		}
	}
	return out
}

// UpstreamOf returns the upstream requests of kind (initial, follow_up; ""
// for all).
func (h *History) UpstreamOf(kind wire.RequestKind) []wire.UpstreamRequest {
	var out []wire.UpstreamRequest
	for _, u := range h.Upstream {
		if kind == "" || u.Kind == kind {
			out = append(out, u)
		}
	}
	return out
}

// Keys returns the distinct idempotency keys the ledger acted on, in order.
// The ledger reports a key on the write it caused; a later call with the same
// key is answered from the first (a "dedup" result) and adds no key. The key a
// tools/call carried (on its MCPCall event) counts only through its write.
func (h *History) Keys() []string {
	seen := map[string]bool{}
	var out []string
	for _, e := range h.MCP {
		if e.Key != "" && e.Kind != wire.MCPCall && !seen[e.Key] {
			seen[e.Key] = true
			out = append(out, e.Key)
		}
	}
	return out
}

// ExchangeAt returns the index of the client exchange whose span holds t;
// when none does, the last exchange that started before t (the one whose
// aftermath t belongs to), or the first when t comes before every exchange;
// -1 when there are no exchanges.
func (h *History) ExchangeAt(t time.Duration) int {
	last := -1
	for i, x := range h.Requests {
		if t >= x.Start.D() && t <= x.End.D() {
			return i
		}
		if x.Start.D() <= t && (last < 0 || x.Start.D() >= h.Requests[last].Start.D()) {
			last = i
		}
	}
	if last < 0 && len(h.Requests) > 0 {
		return 0
	}
	return last
}

// LogicalCalls is the number of tool calls the scenario asked for across all
// its client requests: the script's calls times the number of requests.
func (h *History) LogicalCalls() int { return h.Setup.ToolCalls * len(h.Requests) }
