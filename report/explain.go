package report

import (
	"fmt"
	"slices"
	"sort"
	"strconv"
	"strings"
	"time"
	"unicode"

	"github.com/replaycheck/replaycheck/internal/dialect"
	"github.com/replaycheck/replaycheck/internal/harness/history"
	"github.com/replaycheck/replaycheck/internal/harness/rules"
	"github.com/replaycheck/replaycheck/internal/wire"
)

// Party is a lifeline of a run's sequence: the app (or client command),
// the target under test, the model upstream and the ledger MCP server.
type Party int

// The parties, in the order the diagram draws them.
const (
	PartyApp Party = iota
	PartyTarget
	PartyModel
	PartyLedger
)

// parties are the lifelines in drawing order.
var parties = []Party{PartyApp, PartyTarget, PartyModel, PartyLedger}

// String names the party as reports show it.
func (p Party) String() string {
	return [...]string{"app", "target", "model", "ledger"}[p]
}

// StepKind says what a Step is.
type StepKind string

// The kinds of step.
const (
	// StepRequest is the app's request to the target.
	StepRequest StepKind = "request"
	// StepUpstream is the target's request to the model upstream.
	StepUpstream StepKind = "upstream"
	// StepModelAnswer is the model upstream's answer to it.
	StepModelAnswer StepKind = "model_answer"
	// StepToolCall is a tools/call the ledger received.
	StepToolCall StepKind = "tool_call"
	// StepLedger is what the ledger did with a call: a write, a result, a
	// fault, a cancellation.
	StepLedger StepKind = "ledger"
	// StepSession is an MCP session step (initialize, tools/list, …).
	StepSession StepKind = "session"
	// StepAnswer is the answer the app got.
	StepAnswer StepKind = "answer"
	// StepNote is a remark on one lifeline (traffic no run owned).
	StepNote StepKind = "note"
)

// Step is one message of a run's explained timeline: an arrow From one
// party To another (a note when they are the same), at an offset of the
// run, with what ties it to the rest of the run.
type Step struct {
	At       time.Duration
	From, To Party
	Kind     StepKind
	// Label is what the arrow says ("POST " and the request's path, "HTTP 500").
	Label string
	// Request is the app's request the step belongs to (1-based).
	Request int
	// Attempt is the target's attempt at the request's tool loop (1-based:
	// each initial model request starts one) for a model request or answer
	// and for a tool call the attempt's answer caused; 0 when none.
	Attempt int
	// Try counts a model request sent again within its attempt (2 for the
	// first resend of a follow-up); 0 or 1 for the first.
	Try int
	// ModelCall is the model request's number in the run (1-based) for a
	// model request or answer, and for a tool call the number of the model
	// request whose answer asked for it; 0 when unknown.
	ModelCall int
	// CallID is the tool call's id (call_…, toolu_…) for a tool call and
	// for the model answer that made it; "" when the answer gave none.
	CallID string
	// Execution is a tool call's place among the executions of one logical
	// call (1 the first; 2 and up are replays); 0 when the call did not
	// execute (refused, deduplicated by key) or is not a tool call. A
	// ledger step (a write, a result) has its call's.
	Execution int
	// FirstAt is when the logical call first executed, for a replay.
	FirstAt time.Duration
	// Fault names the injected fault that hit here; "" when none did.
	Fault string
	// Failed reports an error answer or a cut that no injected fault made.
	Failed bool
	// Notes explain the step (a gateway's dialect translation, a re-send).
	Notes []string
	// Body is an excerpt of the answer the app got (StepAnswer).
	Body string
}

// Replay reports whether the step is a repeated execution of a tool call.
func (s Step) Replay() bool { return s.Kind == StepToolCall && s.Execution > 1 }

// Explain returns h's timeline explained, in time order: the app's requests
// and answers, the target's model requests (with their attempt, and the
// dialect translation when the target spoke another API upstream) and their
// answers, and the ledger's tool calls, each tied to the model answer that
// asked for it, with repeated executions of one logical call numbered.
func Explain(h *history.History) []Step {
	steps := requestSteps(h)
	model, answers := modelSteps(h)
	steps = append(steps, model...)
	steps = append(steps, ledgerSteps(h, answers)...)
	steps = append(steps, answerSteps(h)...)
	steps = append(steps, lifeSteps(h)...)
	if u := h.Unattributed; u != nil {
		steps = append(steps, Step{At: h.Duration.D(), From: PartyTarget, To: PartyTarget, Kind: StepNote,
			Label: fmt.Sprintf("no run owned %s and %s during this run: %s",
				plural(u.Upstream, "model request"), plural(u.MCP, "tool call"), strings.Join(u.Samples, "; "))})
	}
	sort.SliceStable(steps, func(i, j int) bool { return steps[i].At < steps[j].At })
	return joinSessions(steps)
}

// requestSteps are the app's requests to the target.
func requestSteps(h *history.History) []Step {
	var steps []Step
	for i, x := range h.Requests {
		st := Step{At: x.Start.D(), From: PartyApp, To: PartyTarget, Kind: StepRequest, Request: i + 1}
		if x.Client != nil {
			called := "no model API call"
			if len(x.Paths) > 0 {
				called = "called " + strings.Join(x.Paths, ", ")
			}
			st.Label = "run of the client command (" + called + ")"
		} else {
			st.Label = "POST " + x.Path
			if x.Stream {
				st.Label += " (stream)"
			}
		}
		steps = append(steps, st)
	}
	return steps
}

// answerSteps are the answers the app got.
func answerSteps(h *history.History) []Step {
	var steps []Step
	for i, x := range h.Requests {
		st := Step{At: x.End.D(), From: PartyTarget, To: PartyApp, Kind: StepAnswer, Request: i + 1, Label: answer(x)}
		if c := x.Client; c != nil {
			st.Body = strings.Join(lastLines(c.Stdout, 5), "\n")
			st.Failed = c.Exit != 0 || c.Killed || c.Error != ""
		} else {
			st.Body = x.Body
			st.Failed = x.Status >= 400 || x.Status == 0 || x.TransportError != "" || x.ErrorEvents > 0
		}
		steps = append(steps, st)
	}
	return steps
}

// modelSteps are the target's model requests and the upstream's answers,
// each request numbered with its attempt and try, the first that speaks
// another API than the app's explained; answers are those that asked for
// tool calls, for ledgerSteps to tie the calls to.
func modelSteps(h *history.History) (steps []Step, answers []*toolAnswer) {
	attempts := map[int]int{}              // request -> attempts so far
	tries := map[int]int{}                 // request -> tries of the latest kind
	lastKind := map[int]wire.RequestKind{} // request -> kind of the latest model request
	lastResults := map[int][]string{}      // request -> result ids of the latest follow-up
	translated := map[int]bool{}           // request -> translation explained
	for n, u := range h.Upstream {
		req := h.ExchangeAt(u.At.D()) + 1
		switch {
		case u.Kind != wire.KindFollowUp || attempts[req] == 0:
			attempts[req]++
			tries[req] = 1
		case lastKind[req] == u.Kind && !carriesNew(u.ResultIDs, lastResults[req]):
			tries[req]++
		default:
			// A follow-up with a result the last one did not carry is the
			// next step of the tool loop, not that follow-up sent again.
			tries[req] = 1
		}
		lastKind[req] = u.Kind
		if u.Kind == wire.KindFollowUp {
			lastResults[req] = u.ResultIDs
		}
		kind := strings.ReplaceAll(string(u.Kind), "_", "-")
		up := Step{At: u.At.D(), From: PartyTarget, To: PartyModel, Kind: StepUpstream, Request: req,
			Attempt: attempts[req], Try: tries[req], ModelCall: n + 1}
		up.Label = "POST " + u.Path + " " + kind
		if u.Stream {
			up.Label += " (stream)"
		}
		if len(u.ResultIDs) > 0 {
			up.Label += " with the result of " + resultsText(u)
		}
		if tries[req] > 1 {
			up.Notes = append(up.Notes, fmt.Sprintf("sent again: try %d of this %s", tries[req], kind))
		}
		if req > 0 && req <= len(h.Requests) && !translated[req] {
			if x := h.Requests[req-1]; x.Client == nil && x.Endpoint != "" && u.Endpoint != "" && x.Endpoint != u.Endpoint {
				translated[req] = true
				up.Notes = append(up.Notes, fmt.Sprintf("translated: the app sent %s (%s); the target asked the model in %s (%s)",
					dialectName(x.Endpoint), x.Path, dialectName(u.Endpoint), u.Path))
			}
		}
		ans := Step{At: u.At.D(), From: PartyModel, To: PartyTarget, Kind: StepModelAnswer, Request: req,
			Attempt: attempts[req], Try: tries[req], ModelCall: n + 1, Label: modelAnswer(u)}
		if u.Fault != "" {
			ans.Fault = u.Fault
		} else if u.Failed() {
			ans.Failed = true
		}
		for _, c := range u.Calls {
			if c.AgainFor != "" {
				ans.Notes = append(ans.Notes, fmt.Sprintf("model asks again for %s after the client reported %s failed", c.Tool, c.AgainFor))
			}
		}
		for _, c := range u.AgainUnmatched {
			ans.Notes = append(ans.Notes, fmt.Sprintf("model cannot ask again for %s after the client reported %s failed: no offered tool matches it", c.Tool, c.AgainFor))
		}
		for _, t := range u.Unmatched {
			ans.Notes = append(ans.Notes, fmt.Sprintf("the script's call %s matched no offered tool: left out of the answer", t))
		}
		steps = append(steps, up, ans)
		if len(u.Calls) > 0 || u.ToolCalls > 0 {
			answers = append(answers, &toolAnswer{u: u, used: make([]bool, max(len(u.Calls), u.ToolCalls)),
				attempt: attempts[req], call: n + 1})
		}
	}
	return steps, answers
}

// ledgerSteps are the ledger's events: each tool call tied to the latest
// model answer before it that asked for its tool (answers, in order) and
// numbered among the executions of its logical call (rules.Replays: against
// the model's asks, as no-replay-after-dispatch counts them), MCP sessions, and
// what the ledger did with each call, a write with its call's number.
func ledgerSteps(h *history.History, answers []*toolAnswer) []Step {
	replays := rules.Replays(h)
	callExec := map[string]int{} // tool and request id -> the call's execution
	executed := map[int]bool{}
	for _, i := range rules.Executed(h) {
		executed[i] = true
	}
	var steps []Step
	var shown wire.MCPProtocol // the protocol version the timeline last named
	for i, e := range h.MCP {
		req := h.ExchangeAt(e.At.D()) + 1
		switch e.Kind {
		case wire.MCPCall:
			st := Step{At: e.At.D(), From: PartyTarget, To: PartyLedger, Kind: StepToolCall, Request: req, Label: "tools/call " + e.Tool}
			if e.UnknownTool {
				st.Label += " (a tool the server did not offer)"
			}
			if e.Protocol != "" && e.Protocol != shown {
				st.Notes = append(st.Notes, "at MCP protocol "+string(e.Protocol))
				shown = e.Protocol
			}
			causedBy(&st, answers, e)
			switch {
			case !executed[i] && dedupAnswered(h, i):
				st.Notes = append(st.Notes, "answered from an earlier call with the same idempotency key: not run again")
			case !executed[i]:
				st.Notes = append(st.Notes, "refused before it ran")
			default:
				st.Execution = 1
				if r, ok := replays[i]; ok && r.N > 1 {
					st.Execution, st.FirstAt = r.N, h.MCP[r.First].At.D()
				}
			}
			callExec[e.Tool+"\x00"+e.RequestID] = st.Execution
			steps = append(steps, st)
		case wire.MCPSession, wire.MCPSessionRefused:
			label := "MCP " + e.Method
			if e.Kind == wire.MCPSessionRefused {
				label += " refused"
			}
			if says := protocolText(e, shown); says != "" {
				label += " (" + says + ")"
				if e.Kind == wire.MCPSession {
					shown = e.Protocol
				}
			}
			steps = append(steps, Step{At: e.At.D(), From: PartyTarget, To: PartyLedger, Kind: StepSession, Request: req, Label: strings.TrimSpace(label)})
		case wire.MCPCancelled:
			steps = append(steps, Step{At: e.At.D(), From: PartyTarget, To: PartyLedger, Kind: StepLedger, Request: req, Label: "cancelled " + e.Tool})
		case wire.MCPSpawn:
			steps = append(steps, Step{At: e.At.D(), From: PartyTarget, To: PartyLedger, Kind: StepLedger, Request: req, Label: spawnText(e.PID)})
		case wire.MCPUnforwarded:
			steps = append(steps, Step{At: e.At.D(), From: PartyTarget, To: PartyLedger, Kind: StepLedger, Request: req, Label: unforwardedText(e)})
		case wire.MCPExit:
			st := Step{At: e.At.D(), From: PartyLedger, To: PartyTarget, Kind: StepLedger, Request: req, Label: exitText(e)}
			if e.End == wire.MCPExitFault {
				st.Fault = e.Fault
			}
			steps = append(steps, st)
		default:
			steps = append(steps, ledgerStep(e, req, callExec[e.Tool+"\x00"+e.RequestID]))
		}
	}
	return steps
}

// protocolText words the protocol version of a session event when it is
// news (not the version last shown): "negotiated 2026-07-28" on the
// initialize or server/discover that chose it, "asked 2026-07-28" on one
// the ledger refused, the bare version on another method; "" otherwise.
func protocolText(e wire.MCPEvent, shown wire.MCPProtocol) string {
	switch {
	case e.Protocol == "" || (e.Protocol == shown && e.Kind == wire.MCPSession):
		return ""
	case e.Kind == wire.MCPSessionRefused:
		return "asked " + string(e.Protocol)
	case e.Method == "initialize" || e.Method == "server/discover":
		return "negotiated " + string(e.Protocol)
	}
	return string(e.Protocol)
}

// spawnText words a spawn event: the client started a ledger-stdio process
// (pid, "" when it did not say) that opened its session with the ledger.
func spawnText(pid string) string {
	if pid == "" {
		return "stdio server spawned"
	}
	return "stdio server spawned (pid " + pid + ")"
}

// unforwardedText words a call the target sent a ledger-stdio process and
// gave up before the process forwarded it: "tools/call commit_write given
// up before stdio server pid 4711 forwarded it (never ran)".
func unforwardedText(e wire.MCPEvent) string {
	who := "stdio server"
	if e.PID != "" {
		who += " pid " + e.PID
	}
	return "tools/call " + e.Tool + " given up before " + who + " forwarded it (never ran)"
}

// exitText words the end of a ledger-stdio process: its pid, the call it
// left unanswered (or had just answered), and how it ended, e.g. "stdio
// server pid 4711 exited before answering tools/call commit_write [3]
// (fault stdio_exit_after_execute)".
func exitText(e wire.MCPEvent) string {
	who := "stdio server"
	if e.PID != "" {
		who += " pid " + e.PID
	}
	var how string
	switch e.End {
	case wire.MCPExitStdinClosed:
		how = "stdin closed"
	case wire.MCPExitStopped:
		how = "stopped"
	case wire.MCPExitGone:
		how = "went away without closing its session: killed or crashed"
	case wire.MCPExitFault:
		how = "fault " + e.Fault
	default:
		how = string(e.End)
	}
	call := ""
	if e.Tool != "" {
		call = " tools/call " + e.Tool
		if e.RequestID != "" {
			call += " [" + e.RequestID + "]"
		}
	}
	switch m, _ := wire.MCPFaultMeaningOf(e.Fault); {
	case m.Stdio == wire.StdioExitAtStart:
		return who + " exited as it started, before serving (" + how + ")"
	case m.Stdio == wire.StdioExitAfterAnswer && call != "":
		return who + " exited after answering" + call + " (" + how + ")"
	case call != "":
		return who + " exited before answering" + call + " (" + how + ")"
	}
	return who + " exited (" + how + ")"
}

// causedBy ties the tool call st (of event e) to the latest model answer
// before it that asked for e's tool: its number, attempt and call id.
func causedBy(st *Step, answers []*toolAnswer, e wire.MCPEvent) {
	for j := len(answers) - 1; j >= 0; j-- {
		a := answers[j]
		if a.u.At.D() > e.At.D() {
			continue
		}
		idx, again := a.take(e.Tool)
		if idx < 0 {
			continue
		}
		st.Attempt, st.ModelCall = a.attempt, a.call
		if idx < len(a.u.Calls) {
			st.CallID = a.u.Calls[idx].ID
		}
		if again {
			st.Notes = append(st.Notes, "the same tool call sent again")
		} else if idx < len(a.u.Calls) && a.u.Calls[idx].AgainFor != "" {
			st.Notes = append(st.Notes, "a new call the model asked for because the client reported "+a.u.Calls[idx].AgainFor+" failed")
		}
		return
	}
}

// ledgerStep is what the ledger did with a call (a write, a result, a
// fault), in app request req; exec is the call's execution number.
func ledgerStep(e wire.MCPEvent, req, exec int) Step {
	st := Step{At: e.At.D(), From: PartyLedger, To: PartyTarget, Kind: StepLedger, Request: req, Execution: exec}
	switch e.Kind {
	case wire.MCPWrite:
		st.To = PartyLedger
		st.Label = "wrote " + e.Entry
		if exec > 1 {
			st.Label += " (replay #" + strconv.Itoa(exec) + ")"
		}
	case wire.MCPResult:
		st.Label = "result"
		if says := resultText(e); says != "" {
			st.Label += " (" + says + ")"
		}
	case wire.MCPFault:
		m, _ := wire.MCPFaultMeaningOf(e.Fault)
		st.Label = m.Words
		if m.Source == wire.FromForwarder && m.Ran == wire.ToolRanUnknown {
			st.Label = "forwarded tools/call " + e.Tool + ": " + st.Label
		}
		st.Fault = e.Fault
	case wire.MCPToolsChanged:
		st.Label = "tool list changed: " + e.Tool + " " + string(e.Change)
	default:
		st.Label = string(e.Kind)
	}
	if e.Key != "" {
		st.Label += " key=" + e.Key
	}
	return st
}

// resultText words what else a result event says: answered from an earlier
// call's key ("dedup"), the fault that answered in the tool's place, the
// HTTP error status ("http 404"); "" when nothing.
func resultText(e wire.MCPEvent) string {
	var says []string
	if e.Dedup {
		says = append(says, "dedup")
	}
	if e.Fault != "" {
		says = append(says, e.Fault)
	}
	if e.Status != 0 {
		says = append(says, "http "+strconv.Itoa(e.Status))
	}
	return strings.Join(says, ", ")
}

// joinSessions joins each run of consecutive MCP session steps into one
// ("MCP session: initialize, notifications/initialized, tools/list").
func joinSessions(steps []Step) []Step {
	out := steps[:0]
	for _, st := range steps {
		if n := len(out); st.Kind == StepSession && n > 0 && out[n-1].Kind == StepSession {
			out[n-1].Label += ", " + strings.TrimPrefix(st.Label, "MCP ")
			continue
		}
		if st.Kind == StepSession {
			st.Label = "MCP session: " + strings.TrimPrefix(st.Label, "MCP ")
		}
		out = append(out, st)
	}
	return out
}

// toolAnswer is a model answer that asked for tool calls, and which of
// them the ledger has seen.
type toolAnswer struct {
	u       wire.UpstreamRequest
	used    []bool
	attempt int
	call    int
}

// take marks the answer's first unused call of tool as used and returns
// its index; when every call of tool was used, the last one again (a
// re-send: again is true); -1 when the answer made no call of tool. An
// answer that names its calls only by count (an older history) stands
// for calls of any tool.
func (a *toolAnswer) take(tool string) (idx int, again bool) {
	idx = -1
	for i := range a.used {
		if i < len(a.u.Calls) && !sameTool(a.u.Calls[i].Tool, tool) {
			continue
		}
		if !a.used[i] {
			a.used[i] = true
			return i, false
		}
		idx = i
	}
	return idx, idx >= 0
}

// sameTool reports whether offered, a tool's name as the model was offered
// it (commit_write, ledger.commit_write, ledger-commit_write), names the
// MCP tool tool.
func sameTool(offered, tool string) bool {
	if offered == tool {
		return true
	}
	rest, ok := strings.CutSuffix(offered, tool)
	if !ok || rest == "" {
		return false
	}
	r := []rune(rest)
	return !unicode.IsLetter(r[len(r)-1]) && !unicode.IsDigit(r[len(r)-1])
}

// dedupAnswered reports whether the ledger answered the tools/call event
// h.MCP[i] as a duplicate of an earlier call with the same key.
func dedupAnswered(h *history.History, i int) bool {
	c := h.MCP[i]
	for _, e := range h.MCP[i+1:] {
		if e.Tool != c.Tool || e.RequestID != c.RequestID {
			continue
		}
		if e.Kind == wire.MCPCall {
			return false
		}
		if e.IsDedup() {
			return true
		}
	}
	return false
}

// modelAnswer renders what the model upstream answered.
func modelAnswer(u wire.UpstreamRequest) string {
	var parts []string
	switch {
	case u.Status == 0:
		parts = append(parts, "no answer")
	default:
		parts = append(parts, "HTTP "+strconv.Itoa(u.Status))
	}
	if _, injected := u.Outcome.Injected(); u.Outcome != wire.OutcomeForwarded && u.Outcome != "" && !injected {
		parts = append(parts, strings.ReplaceAll(string(u.Outcome), "_", " "))
	}
	if len(u.Calls) > 0 {
		calls := make([]string, len(u.Calls))
		for i, c := range u.Calls {
			calls[i] = c.Tool
			if c.ID != "" {
				calls[i] += " " + c.ID
			}
		}
		parts = append(parts, "asks for "+strings.Join(calls, ", "))
	} else if u.ToolCalls > 0 {
		parts = append(parts, "asks for "+plural(u.ToolCalls, "tool call"))
	}
	if u.ServedModel != "" && u.ServedModel != u.Model {
		parts = append(parts, "served "+u.ServedModel+" for "+u.Model)
	}
	if ra := headerValue(u.Headers, "retry-after", "retry-after-ms", "x-should-retry"); ra != "" {
		parts = append(parts, ra)
	}
	return strings.Join(parts, ", ")
}

// carriesNew reports whether ids holds an id that prev does not.
func carriesNew(ids, prev []string) bool {
	for _, id := range ids {
		if !slices.Contains(prev, id) {
			return true
		}
	}
	return false
}

// maxResultWords bounds the text of a result a timeline line quotes, in runes.
const maxResultWords = 80

// resultsText names the results a follow-up carried, each with what the
// client told the model where the history has it: `call_X: error "connection
// closed"`; else their ids.
func resultsText(u wire.UpstreamRequest) string {
	if len(u.Results) == 0 {
		return strings.Join(u.ResultIDs, ", ")
	}
	parts := make([]string, 0, len(u.Results))
	for _, r := range u.Results {
		if r.ID == "" {
			continue
		}
		var said []string
		if r.Error {
			said = append(said, "error")
		}
		if r.Text != "" {
			said = append(said, strconv.Quote(clipRunes(r.Text, maxResultWords)))
		}
		if len(said) == 0 {
			parts = append(parts, r.ID)
			continue
		}
		parts = append(parts, r.ID+": "+strings.Join(said, " "))
	}
	return strings.Join(parts, "; ")
}

// clipRunes cuts s to n runes, the last "…" when it was cut.
func clipRunes(s string, n int) string {
	r := []rune(s)
	if len(r) <= n {
		return s
	}
	return string(r[:n-1]) + "…"
}

// dialectName names an API dialect for people (its Title).
func dialectName(endpoint string) string {
	if d, ok := dialect.ByName(endpoint); ok {
		return d.Title
	}
	return endpoint
}
