package wire

import (
	"strconv"
	"strings"
	"time"

	"github.com/replaycheck/replaycheck/internal/duration"
)

// UpstreamRequest is one model request the upstream fake received: the
// record the fake keeps, the control API's timeline shows and a run's
// history stores. In JSON it is the history's record: Time and Token are
// the fake's own (the history has At, the offset of Time from the run's
// start, and the run's token once).
type UpstreamRequest struct {
	// Time is when the request's outcome was decided, by the fake's clock.
	Time time.Time `json:"-"`
	// Token is the run token found in the body, "" when none.
	Token string `json:"-"`
	// At is Time as an offset from the run's start; set by the history.
	At duration.Duration `json:"at"`
	// Path is the URL path (never its query, which may hold a key), e.g.
	// /v1/chat/completions.
	Path string `json:"path"`
	// Endpoint is the dialect: chat, responses, messages or gemini.
	Endpoint string `json:"endpoint,omitempty"`
	// Kind is initial or follow_up.
	Kind RequestKind `json:"kind"`
	// Outcome is forwarded, injected_500, dropped_stream and so on.
	Outcome Outcome `json:"outcome"`
	// Stream reports whether the request asked for a stream.
	Stream bool `json:"stream,omitempty"`
	// Status is the HTTP status the upstream answered with (0 for a reset).
	Status int `json:"status,omitempty"`
	// Fault describes the fault that fired, if any.
	Fault string `json:"fault,omitempty"`
	// Headers are the notable headers the fault added (Retry-After,
	// retry-after-ms, x-should-retry).
	Headers map[string]string `json:"headers,omitempty"`
	// Model is the model the request named.
	Model string `json:"model,omitempty"`
	// ServedModel is the model a scripted answer named: the requested one,
	// or the one a serve_model fault put in its place ("" for an error,
	// relayed or replayed answer).
	ServedModel string `json:"served_model,omitempty"`
	// ToolCalls is the number of tool calls in the answer (see SetCalls).
	ToolCalls int `json:"tool_calls,omitempty"`
	// Calls are the tool calls of the answer (scripted and replayed), in
	// its order, each as its offered name (see Offered) with its id where
	// the answer gave one; nil when it made none or the history predates
	// them.
	Calls []ToolCall `json:"calls,omitempty"`
	// ResultIDs are the ids of the tool calls whose results a follow-up
	// carries, in its order; nil when it names none.
	ResultIDs []string `json:"result_ids,omitempty"`
	// Results are what a follow-up told the model about each call whose
	// result it carries, in its order: the call's id, the dialect's error
	// flag and the result's text (whitespace collapsed, at most
	// MaxResultText runes, credentials scrubbed). Nil when it carries none
	// or the history predates them.
	Results []ToolResult `json:"results,omitempty"`
	// Offered are the names of the tools the request offered, in its order:
	// a tool's name, or "namespace.name" for a tool inside a Responses
	// namespace tool (ledger.commit_write). Nil when it offered none.
	Offered []string `json:"offered,omitempty"`
	// ResponseID is the id of a scripted answer (chatcmpl-…, msg_…,
	// resp_…), which names the run token and the request's number, or of a
	// replayed one (the provider's id); a client stream whose response ids
	// hold it carried chunks of this answer.
	ResponseID string `json:"response_id,omitempty"`
	// Events is the number of SSE events of a streamed scripted answer as
	// the script renders it (also when a drop cut it short); ContentEvents
	// how many of them complete its content (its tool calls): the point a
	// drop after tool_call cuts at. Both are 0 for a plain, relayed or
	// refused answer.
	Events        int `json:"events,omitempty"`
	ContentEvents int `json:"content_events,omitempty"`
	// Unmatched are the script's calls for this answer that matched no
	// offered tool (scripted mode), in script order; the answer left them
	// out.
	Unmatched []string `json:"unmatched,omitempty"`
	// AgainUnmatched are the calls the model was due to ask for again but
	// could not, because no tool the request offered matches the step's
	// call (see Offered): a result of the latest round reported a call of a
	// step with again_if_failed failed, and the step's count allowed
	// another ask. Each is the script's call name with AgainFor, Step and
	// Attempt as the re-ask would have had them; nil when none was missed.
	// Unmatched does not repeat them.
	AgainUnmatched []ToolCall `json:"again_unmatched,omitempty"`
	// Error is the message of an error the fake answered on its own
	// account: with outcome bad_request (an unreadable body, or a script
	// call that more than one offered tool matches), relay_failed or
	// cassette_miss (naming the closest entry and what differs).
	Error string `json:"error,omitempty"`
	// Replayed is the cassette entry a replayed answer came from, as
	// file:line; "" when the answer was not replayed.
	Replayed string `json:"replayed,omitempty"`
	// Recorded is where the exchange was recorded, as file:line; "" when
	// it was not.
	Recorded string `json:"recorded,omitempty"`
	// Unrecorded, on a relayed exchange that was being recorded, says why
	// its answer, relayed to the client, is not in the cassette; "" when it
	// was recorded or nothing was being recorded.
	Unrecorded Unrecorded `json:"unrecorded,omitempty"`
}

// Unrecorded is why a relayed answer that was being recorded is not in the
// cassette: the Unrecorded of its UpstreamRequest. It is written in JSON as
// its name.
type Unrecorded string

// Why a relayed answer was not recorded.
const (
	// UnrecordedTooLarge: a plain answer over the recorder's size limit
	// (upstream.MaxRecordedBody) was relayed whole but not recorded.
	UnrecordedTooLarge Unrecorded = "too_large"
)

// ToolCall is one tool call a model answer made.
type ToolCall struct {
	// Tool is the tool's name as offered; ID the call's id (call_…,
	// toolu_…), "" when the answer gave none.
	Tool string `json:"tool"`
	ID   string `json:"id,omitempty"`
	// AgainFor, when set, is the id of the call the client reported failed
	// and this call asks for again (a script step's again_if_failed): a new
	// logical call of the model, not a re-send of the first.
	AgainFor string `json:"again_for,omitempty"`
	// Args are the call's arguments as CallArgs renders them, "" when the
	// record predates them or the call's input is not JSON arguments (a
	// custom tool's free-form input).
	Args string `json:"args,omitempty"`
	// Step is, for a scripted call, the script step it came from (from 1),
	// and Attempt the model's ask of that step: 0 its own call, k the k-th
	// time the model asked again (AgainFor). A re-sent model request that
	// the fake answers from the same step and attempt repeats the same ask
	// under a new ID; Step is 0 for a replayed or relayed call.
	Step    int `json:"step,omitempty"`
	Attempt int `json:"attempt,omitempty"`
}

// Ask returns what identifies the model's ask of c, the logical tool call:
// for a scripted call its step and attempt (the same across re-sent
// requests answered from the same step), else its id (a replayed answer
// re-issues its recorded ids); "" when neither is known.
func (c ToolCall) Ask() string {
	switch {
	case c.Step > 0:
		return "step " + strconv.Itoa(c.Step) + "." + strconv.Itoa(c.Attempt)
	case c.ID != "":
		return "id " + c.ID
	}
	return ""
}

// ToolResult is what a follow-up told the model about one tool call.
type ToolResult struct {
	// ID is the id of the call the result answers ("" when it names none).
	ID string `json:"id,omitempty"`
	// Error is the dialect's error flag (Anthropic is_error, a Gemini
	// response with an error); chat and Responses function outputs have none.
	Error bool `json:"error,omitempty"`
	// Text is the result's text, whitespace collapsed, cut to MaxResultText
	// runes (ending in "…" when cut), credentials scrubbed.
	Text string `json:"text,omitempty"`
	// Read is how the fake model read a result of a call whose script step
	// asks again (again_if_failed): "failed" (it asked again, or would have
	// past the step's count), "unknown" (the client said the outcome is
	// unknown: not a failure) or "ok"; "" when no step asked.
	Read string `json:"read,omitempty"`
}

// MaxResultText bounds ToolResult.Text, in runes.
const MaxResultText = 200

// The readings of ToolResult.Read.
const (
	ResultFailed  = "failed"
	ResultUnknown = "unknown"
	ResultOK      = "ok"
)

// AgainFor returns, for each call of the answer that asked again for a call
// the client reported failed, that call's id; nil when none did.
func (u UpstreamRequest) AgainFor() []string {
	var out []string
	for _, c := range u.Calls {
		if c.AgainFor != "" {
			out = append(out, c.AgainFor)
		}
	}
	return out
}

// SetCalls records the answer's tool calls: their names, and their ids in
// the same order (ids may be fewer, or nil: a call without one gets "").
func (u *UpstreamRequest) SetCalls(names, ids []string) {
	u.ToolCalls, u.Calls = len(names), nil
	for i, n := range names {
		c := ToolCall{Tool: n}
		if i < len(ids) {
			c.ID = ids[i]
		}
		u.Calls = append(u.Calls, c)
	}
}

// Tools returns the names of the answer's tool calls, in its order; nil
// when it made none.
func (u UpstreamRequest) Tools() []string {
	var out []string
	for _, c := range u.Calls {
		out = append(out, c.Tool)
	}
	return out
}

// CountKey returns the count key that counts u by its kind and outcome.
func (u UpstreamRequest) CountKey() CountKey { return CountKey{Kind: u.Kind, Outcome: u.Outcome} }

// AskedWait returns the wait the upstream's answer asked for: retry-after-ms,
// or Retry-After in seconds. ok is false when it asked for none, or only
// with an HTTP date, which a run's offsets cannot measure against.
func (u UpstreamRequest) AskedWait() (wait time.Duration, ok bool) {
	var ms, secs string
	for k, v := range u.Headers {
		switch strings.ToLower(k) {
		case "retry-after-ms":
			ms = v
		case "retry-after":
			secs = v
		}
	}
	if n, err := strconv.ParseFloat(ms, 64); err == nil && n >= 0 {
		return time.Duration(n * float64(time.Millisecond)), true
	}
	if n, err := strconv.ParseFloat(secs, 64); err == nil && n >= 0 {
		return time.Duration(n * float64(time.Second)), true
	}
	return 0, false
}

// Failed reports whether the upstream answered with an error or cut the answer.
func (u UpstreamRequest) Failed() bool {
	return u.Status >= 400 || u.Status == 0 || u.Fault != "" && u.Outcome != OutcomeForwarded
}
