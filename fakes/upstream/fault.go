package upstream

import (
	"fmt"
	"strconv"
	"strings"

	"github.com/goccy/go-yaml"
	"github.com/invopop/jsonschema"

	"github.com/replaycheck/replaycheck/fakes/fault"
	"github.com/replaycheck/replaycheck/internal/wire"
	"github.com/replaycheck/replaycheck/internal/yamlfile"
)

// Kinds of request, as classified and logged (see wire.RequestKind).
const (
	KindInitial  = string(wire.KindInitial)  // transitional: removed after the issue-19 merge
	KindFollowUp = string(wire.KindFollowUp) // transitional: removed after the issue-19 merge
	// kindAny matches both kinds in a Fault.
	kindAny = string(wire.KindAny)
)

// Outcomes logged for a request (see wire.Outcome).
const (
	OutcomeForwarded     = string(wire.OutcomeForwarded)     // transitional: removed after the issue-19 merge
	OutcomeDelayed       = string(wire.OutcomeDelayed)       // transitional: removed after the issue-19 merge
	OutcomeDroppedStream = string(wire.OutcomeDroppedStream) // transitional: removed after the issue-19 merge
	OutcomeReset         = string(wire.OutcomeReset)         // transitional: removed after the issue-19 merge
	OutcomeClientGone    = string(wire.OutcomeClientGone)    // transitional: removed after the issue-19 merge
	OutcomeBadRequest    = string(wire.OutcomeBadRequest)    // transitional: removed after the issue-19 merge
	OutcomeRelayFailed   = string(wire.OutcomeRelayFailed)   // transitional: removed after the issue-19 merge
	OutcomeCassetteMiss  = string(wire.OutcomeCassetteMiss)  // transitional: removed after the issue-19 merge
	OutcomeStreamError   = string(wire.OutcomeStreamError)   // transitional: removed after the issue-19 merge
	OutcomeStalledStream = string(wire.OutcomeStalledStream) // transitional: removed after the issue-19 merge
)

// OutcomeInjected is the outcome logged for an error response with status
// that a respond fault injected (see wire.Injected).
func OutcomeInjected(status int) string { return string(wire.Injected(status)) } // transitional: removed after the issue-19 merge

// Fault is one upstream fault: which requests it matches, how often it fires
// (Times, counted per fault entry over its matching requests), and exactly one
// action — Respond, Drop, StreamError, Stall, Reset or ServeModel — or a Delay, which may
// also precede Respond, Drop, StreamError or Stall, or a Dribble, which may
// pace Drop, StreamError or Stall. Drop, StreamError, Stall and Dribble only
// ever match streamed requests; with stream: false they are a validation
// error.
type Fault struct {
	// On is the request kind matched: initial, follow_up or any ("" = any).
	On string `json:"on,omitempty" yaml:"on,omitempty" jsonschema:"enum=initial,enum=follow_up,enum=any" jsonschema_description:"request kind matched: initial, follow_up or any (default any)"`
	// Endpoint is the dialect matched: chat, responses, messages or gemini ("" = any).
	Endpoint string `json:"endpoint,omitempty" yaml:"endpoint,omitempty" jsonschema:"enum=chat,enum=responses,enum=messages,enum=gemini" jsonschema_description:"dialect matched: chat, responses, messages or gemini (default any)"`
	// Stream matches streamed (true) or non-streamed (false) requests; nil matches both.
	Stream *bool `json:"stream,omitempty" yaml:"stream,omitempty" jsonschema_description:"match only streamed (true) or non-streamed (false) requests"`
	// Times says on which matching occurrences the fault fires (zero = always).
	Times fault.Times `json:"times,omitzero" yaml:"times,omitempty" jsonschema_description:"always, once, a count N, or {nth: K}"`
	// Respond answers with an error status in the dialect's error shape.
	Respond *Respond `json:"respond,omitempty" yaml:"respond,omitempty" jsonschema_description:"answer with an error status"`
	// Drop closes a streamed answer's connection part-way.
	Drop *Drop `json:"drop,omitempty" yaml:"drop,omitempty" jsonschema_description:"close a stream's connection part-way, optionally after lingering"`
	// StreamError ends a 200 stream with the dialect's in-stream error event.
	StreamError *StreamError `json:"stream_error,omitempty" yaml:"stream_error,omitempty" jsonschema_description:"end a streamed answer after HTTP 200 with the dialect's error event (Anthropic event: error, Responses response.failed or error, a chat error chunk, Gemini's raw error object)"`
	// Stall holds a streamed answer silent at a point, for a while or forever.
	Stall *Stall `json:"stall,omitempty" yaml:"stall,omitempty" jsonschema_description:"hold a stream silent at a point, then resume (for) or never (forever)"`
	// Dribble waits this long before each event of a streamed answer.
	Dribble *fault.Duration `json:"dribble,omitempty" yaml:"dribble,omitempty" jsonschema:"type=string" jsonschema_description:"wait this long before each event of a stream, e.g. 50ms (at most 1m); may pace drop, stream_error or stall"`
	// Delay waits before answering (or before Respond or Drop).
	Delay *fault.Duration `json:"delay,omitempty" yaml:"delay,omitempty" jsonschema:"type=string" jsonschema_description:"wait this long first, e.g. 2s"`
	// Reset closes the connection with an RST before any byte is sent.
	Reset bool `json:"reset,omitempty" yaml:"reset,omitempty" jsonschema_description:"reset the connection before any byte"`
	// ServeModel answers normally but names this model in the answer instead
	// of the requested one (scripted answers only).
	ServeModel string `json:"serve_model,omitempty" yaml:"serve_model,omitempty" jsonschema_description:"answer normally but name this model id in the answer instead of the requested one, as a silent fallback would (scripted answers)"`
}

// JSONSchemaExtend makes the JSON Schema of Fault (github.com/invopop/jsonschema)
// want what Validate wants of its actions: at least one, at most one besides
// delay and dribble, no delay with reset, no dribble with reset or respond,
// and no stream-only action (drop, stream_error, stall, dribble) with
// stream: false.
func (Fault) JSONSchemaExtend(s *jsonschema.Schema) {
	// set is the schema of a fault that uses action name: reset: false and
	// serve_model: "" use none.
	set := func(name string) *jsonschema.Schema {
		sub := &jsonschema.Schema{Required: []string{name}}
		switch name {
		case "reset":
			sub.Properties = jsonschema.NewProperties()
			sub.Properties.Set(name, &jsonschema.Schema{Const: true})
		case "serve_model":
			sub.Properties = jsonschema.NewProperties()
			one := uint64(1)
			sub.Properties.Set(name, &jsonschema.Schema{MinLength: &one})
		}
		return sub
	}
	both := func(a, b *jsonschema.Schema) *jsonschema.Schema {
		return &jsonschema.Schema{AllOf: []*jsonschema.Schema{a, b}}
	}
	var named []string
	for _, name := range actionNames() {
		s.AnyOf = append(s.AnyOf, set(name))
		if name != "delay" && name != "dribble" {
			named = append(named, name)
		}
	}
	var refused []*jsonschema.Schema
	for i, a := range named {
		for _, b := range named[i+1:] {
			refused = append(refused, both(set(a), set(b)))
		}
	}
	notStreamed := &jsonschema.Schema{Required: []string{"stream"}, Properties: jsonschema.NewProperties()}
	notStreamed.Properties.Set("stream", &jsonschema.Schema{Const: false})
	refused = append(refused, both(set("delay"), set("reset")), both(set("dribble"), set("reset")), both(set("dribble"), set("respond")))
	for _, name := range []string{"drop", "stream_error", "stall", "dribble"} {
		refused = append(refused, both(notStreamed, set(name)))
	}
	s.Not = &jsonschema.Schema{AnyOf: refused,
		Description: "one action (delay may precede it, dribble pace a stream), and stream-only actions not with stream: false"}
}

// Respond is the action that answers with an error status.
type Respond struct {
	// Status is the HTTP status, 400–599.
	Status int `json:"status" yaml:"status" jsonschema:"minimum=400,maximum=599" jsonschema_description:"HTTP status to answer"`
	// Headers are added to the answer, e.g. Retry-After, retry-after-ms, x-should-retry.
	Headers map[string]string `json:"headers,omitempty" yaml:"headers,omitempty" jsonschema_description:"headers added to the answer, e.g. Retry-After"`
	// Message is the error message; "" = "injected follow-up failure" (or "injected initial failure").
	Message string `json:"message,omitempty" yaml:"message,omitempty" jsonschema_description:"error message in the dialect's error body"`
}

// Drop points.
const (
	// DropAfterHeaders closes the stream right after its headers.
	DropAfterHeaders = "headers"
	// DropAfterToolCall closes the stream after the event that completes the
	// answer's content (its tool calls) and before the terminal event.
	DropAfterToolCall = "tool_call"
	// DropAfterEvents closes the stream after Events events.
	DropAfterEvents = "events"
	// DropAfterElapsed closes the stream once Elapsed has passed since its
	// headers, if it is still going (a drop only).
	DropAfterElapsed = "elapsed"
)

// Drop is the action that closes a streamed answer's connection part-way, so
// the client sees a truncated body (an error), not a clean end. When the
// answer has no more than Events events it completes normally (and the
// fault does not count as fired).
type Drop struct {
	// After is the drop point: headers, tool_call, events or elapsed.
	After string `json:"after" yaml:"after" jsonschema:"enum=headers,enum=tool_call,enum=events,enum=elapsed" jsonschema_description:"where the stream is cut: after the headers, the tool call, N events, or a duration (elapsed)"`
	// Events is the number of events sent before the cut (after: events).
	Events int `json:"events,omitempty" yaml:"events,omitempty" jsonschema_description:"events sent before the cut, with after: events"`
	// Elapsed is how long after its headers the stream is cut (after:
	// elapsed), at most 10m. Only a stream still going then is cut: one
	// paced by a dribble, or replayed with its timing.
	Elapsed fault.Duration `json:"elapsed,omitzero" yaml:"elapsed,omitempty" jsonschema:"type=string" jsonschema_description:"with after: elapsed, cut the stream this long after its headers if it is still going (paced by dribble or replay timing), e.g. 1500ms"`
	// Linger is how long the connection stays open, silent, after the events
	// before the cut have been flushed; 0 cuts at once. The wait ends early
	// when the client leaves or the server's base context ends; at most 10m.
	Linger fault.Duration `json:"linger,omitzero" yaml:"linger,omitempty" jsonschema:"type=string" jsonschema_description:"keep the connection open this long after flushing the events before the cut, then cut, e.g. 500ms (default 0: cut at once; at most 10m)"`
}

// ParseFault parses one fault from a YAML flow mapping such as
// "{on: follow_up, respond: {status: 500}, times: once}", strictly, and
// validates it.
func ParseFault(s string) (Fault, error) {
	var f Fault
	if strings.TrimSpace(s) == "" {
		return Fault{}, fmt.Errorf("fault: empty; want a mapping such as {on: follow_up, respond: {status: 500}}")
	}
	if err := yamlfile.CheckNesting("fault", []byte(s)); err != nil {
		return Fault{}, err
	}
	if err := yaml.UnmarshalWithOptions([]byte(s), &f, yaml.Strict()); err != nil {
		// The YAML error already carries its line:column and source excerpt.
		return Fault{}, fmt.Errorf("fault %q (fields: on, endpoint, stream, times, %s): %w", s, strings.Join(actionNames(), ", "), err)
	}
	if err := f.Validate(); err != nil {
		return Fault{}, fmt.Errorf("fault %q: %w", s, err)
	}
	return f, nil
}

// Validate reports the first bad field of f, by name.
func (f Fault) Validate() error {
	switch f.On {
	case "", kindAny, KindInitial, KindFollowUp:
	default:
		return fmt.Errorf("on: %q is not initial, follow_up or any", f.On)
	}
	if f.Endpoint != "" {
		if _, ok := dialectByName(f.Endpoint); !ok {
			return fmt.Errorf("endpoint: %q is not chat, responses, messages or gemini", f.Endpoint)
		}
	}
	if f.Times.Count < 0 || f.Times.Nth < 0 {
		return fmt.Errorf("times: %s must be positive", f.Times)
	}
	var named []string
	var pacers []string
	for _, a := range actionTable() {
		act := a.get(&f)
		if act == nil {
			continue
		}
		if err := act.validate(&f); err != nil {
			return fmt.Errorf("%s: %w", a.name, err)
		}
		if a.name == "delay" || a.name == "dribble" {
			pacers = append(pacers, a.name)
		} else {
			named = append(named, a.name)
		}
	}
	switch {
	case len(named) == 0 && len(pacers) == 0:
		return fmt.Errorf("action: want one of %s", strings.Join(actionNames(), ", "))
	case len(named) > 1:
		return fmt.Errorf("action: %s are exclusive; a fault has one action", strings.Join(named, " and "))
	case f.Reset && f.Delay != nil:
		return fmt.Errorf("delay: does not combine with reset")
	case f.Dribble != nil && (f.Reset || f.Respond != nil):
		return fmt.Errorf("dribble: paces a stream; it does not combine with %s", named[0])
	}
	return nil
}

// String describes f for logs and records, e.g. "follow_up respond 500 once".
func (f Fault) String() string {
	var b strings.Builder
	on := f.On
	if on == "" {
		on = kindAny
	}
	b.WriteString(on)
	if f.Endpoint != "" {
		b.WriteString(" " + f.Endpoint)
	}
	if f.Stream != nil {
		b.WriteString(" stream=" + strconv.FormatBool(*f.Stream))
	}
	if f.Delay != nil {
		b.WriteString(" delay " + f.Delay.String())
	}
	if f.Dribble != nil {
		b.WriteString(" dribble " + f.Dribble.String())
	}
	switch {
	case f.Respond != nil:
		b.WriteString(" respond " + strconv.Itoa(f.Respond.Status))
	case f.Drop != nil:
		b.WriteString(" drop after " + f.Drop.After)
		switch f.Drop.After {
		case DropAfterEvents:
			b.WriteString(" " + strconv.Itoa(f.Drop.Events))
		case DropAfterElapsed:
			b.WriteString(" " + f.Drop.Elapsed.String())
		}
		if f.Drop.Linger > 0 {
			b.WriteString(" linger " + f.Drop.Linger.String())
		}
	case f.StreamError != nil:
		b.WriteString(" stream_error after " + f.StreamError.After)
		if f.StreamError.After == DropAfterEvents {
			b.WriteString(" " + strconv.Itoa(f.StreamError.Events))
		}
		if f.StreamError.Type != "" {
			b.WriteString(" " + f.StreamError.Type)
		}
	case f.Stall != nil:
		b.WriteString(" stall after " + f.Stall.After)
		if f.Stall.After == DropAfterEvents {
			b.WriteString(" " + strconv.Itoa(f.Stall.Events))
		}
		if f.Stall.Forever {
			b.WriteString(" forever")
		} else {
			b.WriteString(" for " + f.Stall.For.String())
		}
	case f.Reset:
		b.WriteString(" reset")
	case f.ServeModel != "":
		b.WriteString(" serve_model " + f.ServeModel)
	}
	b.WriteString(" " + f.Times.String())
	return b.String()
}

// matches reports whether f applies to a request of this kind, dialect and
// stream flag.
func (f *Fault) matches(kind, endpoint string, stream bool) bool {
	if f.On != "" && f.On != kindAny && f.On != kind {
		return false
	}
	if f.Endpoint != "" && f.Endpoint != endpoint {
		return false
	}
	if f.Stream != nil && *f.Stream != stream {
		return false
	}
	if !stream && f.StreamOnly() {
		return false
	}
	return true
}

// StreamOnly reports whether f has an action that applies only to streams
// (drop, stream_error, stall, dribble): it matches streamed requests only.
func (f *Fault) StreamOnly() bool {
	return f.Drop != nil || f.StreamError != nil || f.Stall != nil || f.Dribble != nil
}

// delayAlone reports whether f's only action is its delay.
func (f *Fault) delayAlone() bool {
	return f.Respond == nil && f.Drop == nil && f.StreamError == nil && f.Stall == nil && f.Dribble == nil && !f.Reset && f.ServeModel == ""
}

// dribbleAlone reports whether f's only action is its dribble (with or
// without a delay).
func (f *Fault) dribbleAlone() bool {
	return f.Dribble != nil && f.Respond == nil && f.Drop == nil && f.StreamError == nil && f.Stall == nil && !f.Reset && f.ServeModel == ""
}

// action is one fault action. Adding an action is one file implementing it
// plus one row in actionTable.
type action interface {
	// validate reports a bad setting of the action, naming the field.
	validate(f *Fault) error
	// apply performs the action on the exchange and reports whether the
	// exchange has been answered (no further action or answer follows).
	apply(x *exchange) (answered bool)
}

// actionNames returns the YAML names of the fault actions, in table order.
func actionNames() []string {
	var names []string
	for _, a := range actionTable() {
		names = append(names, a.name)
	}
	return names
}

// actionEntry is one row of the action table: the YAML name and how to get
// the action from a Fault (nil when the fault does not use it).
type actionEntry struct {
	name string
	get  func(f *Fault) action
}

// actionTable lists the fault actions keyed by YAML name, in the order they
// apply: a delay waits before the others; a dribble, drop, stream_error or
// stall only sets how the stream is written.
func actionTable() []actionEntry {
	return []actionEntry{
		{"delay", func(f *Fault) action {
			if f.Delay == nil {
				return nil
			}
			return delayAction{d: *f.Delay}
		}},
		{"reset", func(f *Fault) action {
			if !f.Reset {
				return nil
			}
			return resetAction{}
		}},
		{"respond", func(f *Fault) action {
			if f.Respond == nil {
				return nil
			}
			return respondAction{r: f.Respond}
		}},
		{"drop", func(f *Fault) action {
			if f.Drop == nil {
				return nil
			}
			return dropAction{d: f.Drop}
		}},
		{"stream_error", func(f *Fault) action {
			if f.StreamError == nil {
				return nil
			}
			return streamErrorAction{e: f.StreamError}
		}},
		{"stall", func(f *Fault) action {
			if f.Stall == nil {
				return nil
			}
			return stallAction{s: f.Stall}
		}},
		{"dribble", func(f *Fault) action {
			if f.Dribble == nil {
				return nil
			}
			return dribbleAction{d: *f.Dribble}
		}},
		{"serve_model", func(f *Fault) action {
			if f.ServeModel == "" {
				return nil
			}
			return serveModelAction{model: f.ServeModel}
		}},
	}
}

// armedFault is a Fault with its counters, guarded by Server.mu: seen
// counts its matching occurrences, fired those it acted on.
type armedFault struct {
	Fault
	seen  int
	fired int
}

// FaultReport is what became of one armed fault.
type FaultReport struct {
	// Fault is the fault as armed; its pointer fields are shared with the
	// server's copy and must not be modified.
	Fault Fault `json:"fault"`
	// Matched counts the requests the fault matched (its occurrences, as
	// Times counts them; a fault stops counting once an earlier one in its
	// list fires on a request, and a run's faults that fire keep the global
	// ones from counting it).
	Matched int `json:"matched"`
	// Fired counts the requests it acted on, as the client saw it: an
	// error answered (respond), a connection reset, a stream actually cut (a
	// drop whose cut point lies past the answer's last event, or whose
	// request was refused first, acted on nothing; a drop after elapsed
	// whose stream ended first, likewise), an error event sent
	// (stream_error), a stream held at its point (stall; one whose point lies
	// past the last event acted on nothing), a scripted answer naming
	// another model (serve_model), or — for a delay or dribble
	// alone — an answer held back. A delay or dribble before another action
	// fires when that action does.
	Fired int `json:"fired"`
}

// FaultReports returns, in armed order, what became of the faults armed
// for token ("" = the global faults); nil when none are armed. Counts are
// exact under concurrent requests: each is taken under the server's lock.
func (s *Server) FaultReports(token string) []FaultReport {
	s.mu.Lock()
	defer s.mu.Unlock()
	list := s.global
	if token != "" {
		st, ok := s.runs[token]
		if !ok {
			return nil
		}
		list = st.faults
	}
	if len(list) == 0 {
		return nil
	}
	out := make([]FaultReport, len(list))
	for i, af := range list {
		out[i] = FaultReport{Fault: af.Fault, Matched: af.seen, Fired: af.fired}
	}
	return out
}
