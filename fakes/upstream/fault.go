package upstream

import (
	"context"
	"fmt"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/goccy/go-yaml"
	"github.com/invopop/jsonschema"

	"github.com/replaycheck/replaycheck/fakes/fault"
	api "github.com/replaycheck/replaycheck/internal/dialect"
	"github.com/replaycheck/replaycheck/internal/wire"
	"github.com/replaycheck/replaycheck/internal/yamlfile"
)

// Fault is one upstream fault: which requests it matches, how often it fires
// (Times, counted per fault entry over its matching requests), and exactly one
// action — Respond, Drop, StreamError, Stall, Reset, ServeModel or Truncate —
// or a Delay, which may also precede Respond, Drop, StreamError, Stall or
// Truncate, or a Dribble, which may pace Drop, StreamError or Stall. Drop,
// StreamError, Stall and Dribble only ever match streamed requests, Truncate
// only non-streamed ones; with stream: false (stream: true) they are a
// validation error. Each action is a kind of its own file (kindTable).
type Fault struct {
	// On is the request kind matched: initial, follow_up or any ("" = any).
	On wire.RequestKind `json:"on,omitempty" yaml:"on,omitempty" jsonschema:"enum=initial,enum=follow_up,enum=any" jsonschema_description:"request kind matched: initial, follow_up or any (default any)"`
	// Endpoint is the dialect matched: chat, responses, messages or gemini ("" = any).
	Endpoint string `json:"endpoint,omitempty" yaml:"endpoint,omitempty" jsonschema_description:"dialect matched: chat, responses, messages or gemini (default any)"`
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
	// Truncate sends a non-streamed 200 answer's headers, with the whole
	// body's Content-Length, and part of its body, then closes the connection.
	Truncate *Truncate `json:"truncate,omitempty" yaml:"truncate,omitempty" jsonschema_description:"send a non-streamed 200 answer with the whole body's Content-Length but only part of the body, then close the connection, as a proxy's idle timeout would"`
}

// JSONSchemaExtend makes the JSON Schema of Fault (github.com/invopop/jsonschema)
// want what Validate wants of its kinds: at least one, at most one besides
// the pacers (delay, dribble), no pacer with a kind it refuses, no
// stream-only kind with stream: false and no kind for non-streamed answers
// with stream: true.
func (Fault) JSONSchemaExtend(s *jsonschema.Schema) {
	endpointEnum(s)
	table := kindTable()
	// set is the schema of a fault that uses kind e.
	set := func(e *kindRow) *jsonschema.Schema {
		sub := &jsonschema.Schema{Required: []string{e.Name}}
		if e.Traits.used != nil {
			sub.Properties = jsonschema.NewProperties()
			sub.Properties.Set(e.Name, e.Traits.used)
		}
		return sub
	}
	byName := func(name string) *kindRow {
		e, ok := table.Lookup(name)
		if !ok {
			panic("kind " + name + " is refused but not in the kind table")
		}
		return e
	}
	both := func(a, b *jsonschema.Schema) *jsonschema.Schema {
		return &jsonschema.Schema{AllOf: []*jsonschema.Schema{a, b}}
	}
	var named []*kindRow
	for i := range table {
		e := &table[i]
		s.AnyOf = append(s.AnyOf, set(e))
		if !e.Traits.pacer {
			named = append(named, e)
		}
	}
	var refused []*jsonschema.Schema
	for i, a := range named {
		for _, b := range named[i+1:] {
			refused = append(refused, both(set(a), set(b)))
		}
	}
	for i := range table {
		for _, other := range table[i].Traits.refuses {
			refused = append(refused, both(set(&table[i]), set(byName(other))))
		}
	}
	streamed := func(v bool) *jsonschema.Schema {
		sub := &jsonschema.Schema{Required: []string{"stream"}, Properties: jsonschema.NewProperties()}
		sub.Properties.Set("stream", &jsonschema.Schema{Const: v})
		return sub
	}
	for i := range table {
		switch table[i].Traits.streams {
		case streamedOnly:
			refused = append(refused, both(streamed(false), set(&table[i])))
		case plainOnly:
			refused = append(refused, both(streamed(true), set(&table[i])))
		}
	}
	s.Not = &jsonschema.Schema{AnyOf: refused,
		Description: "one action (delay may precede it, dribble pace a stream), and stream-only actions not with stream: false, plain-only ones not with stream: true"}
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
		return Fault{}, fmt.Errorf("fault %q (fields: on, endpoint, stream, times, %s): %w", s, strings.Join(kindTable().Names(), ", "), err)
	}
	if err := f.Validate(); err != nil {
		return Fault{}, fmt.Errorf("fault %q: %w", s, err)
	}
	return f, nil
}

// Validate reports the first bad field of f, by name.
func (f Fault) Validate() error {
	switch f.On {
	case "", wire.KindAny, wire.KindInitial, wire.KindFollowUp:
	default:
		return fmt.Errorf("on: %q is not initial, follow_up or any", f.On)
	}
	if f.Endpoint != "" {
		if _, ok := dialectByName(f.Endpoint); !ok {
			names := api.Names()
			return fmt.Errorf("endpoint: %q is not %s or %s", f.Endpoint, strings.Join(names[:len(names)-1], ", "), names[len(names)-1])
		}
	}
	if f.Times.Count < 0 || f.Times.Nth < 0 {
		return fmt.Errorf("times: %s must be positive", f.Times)
	}
	table := kindTable()
	if err := table.Check(&f); err != nil {
		return err
	}
	used := table.Uses(&f)
	var named []string
	for _, u := range used {
		if !u.Kind.Traits.pacer {
			named = append(named, u.Kind.Name)
		}
	}
	slices.Sort(named)
	switch {
	case len(used) == 0:
		return fmt.Errorf("action: want one of %s", strings.Join(kindTable().Names(), ", "))
	case len(named) > 1:
		return fmt.Errorf("action: %s are exclusive; a fault has one action", strings.Join(named, " and "))
	}
	for _, e := range used {
		for _, o := range used {
			if slices.Contains(e.Kind.Traits.refuses, o.Kind.Name) {
				return fmt.Errorf("%s: %s %s", e.Kind.Name, e.Kind.Traits.refusal, o.Kind.Name)
			}
		}
	}
	return nil
}

// String describes f for logs and records, e.g. "follow_up respond 500 once":
// its match, then each of its kinds (pacers first), then its Times.
func (f Fault) String() string {
	var b strings.Builder
	on := f.On
	if on == "" {
		on = wire.KindAny
	}
	b.WriteString(string(on))
	if f.Endpoint != "" {
		b.WriteString(" " + f.Endpoint)
	}
	if f.Stream != nil {
		b.WriteString(" stream=" + strconv.FormatBool(*f.Stream))
	}
	var ks [maxKinds]kind
	used, _ := f.kinds(ks[:0])
	for _, k := range used {
		b.WriteByte(' ')
		k.describe(&b)
	}
	b.WriteString(" " + f.Times.String())
	return b.String()
}

// matches reports whether f applies to a request of this kind, dialect and
// stream flag; streams is f.streams().
func (f *Fault) matches(kind wire.RequestKind, endpoint string, stream bool, streams streamMatch) bool {
	if f.On != "" && f.On != wire.KindAny && f.On != kind {
		return false
	}
	if f.Endpoint != "" && f.Endpoint != endpoint {
		return false
	}
	if f.Stream != nil && *f.Stream != stream {
		return false
	}
	switch streams {
	case streamedOnly:
		return stream
	case plainOnly:
		return !stream
	}
	return true
}

// StreamOnly reports whether f has a kind that applies only to streams
// (drop, stream_error, stall, dribble): it matches streamed requests only.
func (f *Fault) StreamOnly() bool { return f.streams() == streamedOnly }

// PlainOnly reports whether f has a kind that applies only to non-streamed
// answers (truncate): it matches non-streamed requests only.
func (f *Fault) PlainOnly() bool { return f.streams() == plainOnly }

// streams returns which requests f's kinds act on.
func (f *Fault) streams() streamMatch {
	for _, u := range kindTable().Uses(f) {
		if u.Kind.Traits.streams != anyStream {
			return u.Kind.Traits.streams
		}
	}
	return anyStream
}

// maxKinds is the most kinds one valid fault uses: a delay, a dribble and
// one other.
const maxKinds = 3

// kinds appends the kinds f uses to dst, pacers first (in table order), then
// its other kind: the order they act in. It also returns how many of them
// are pacers.
func (f *Fault) kinds(dst []kind) (_ []kind, pacers int) {
	used := kindTable().Uses(f)
	for _, pacer := range []bool{true, false} {
		for _, u := range used {
			if u.Kind.Traits.pacer != pacer {
				continue
			}
			dst = append(dst, u.Act)
			if pacer {
				pacers++
			}
		}
	}
	return dst, pacers
}

// kind is one upstream fault kind, as a toxic is in toxiproxy: its settings
// are a field of Fault, and it acts on an exchange at the hooks it
// implements — beforeAnswer, atScripted, atBody, atStream (with atPoint,
// atEvent), notRelayed.
// Every kind also says how long a firing holds its run back (Holds; see
// Fault.Hold). Adding a kind is the checklist in the package doc.
type kind interface {
	fault.Action[Fault]
	// describe writes the kind's part of Fault.String, e.g. "respond 500".
	describe(b *strings.Builder)
}

// beforeAnswer is a kind that acts before any byte of the answer (delay,
// reset, respond).
type beforeAnswer interface {
	// before acts on the exchange and reports whether it has been answered
	// (no further kind acts and no answer follows).
	before(x *exchange) (answered bool)
}

// atScripted is a kind that changes a scripted answer before it is rendered
// (serve_model).
type atScripted interface {
	scripted(x *exchange, a *answer)
}

// atBody is a kind that sends a non-streamed answer's body (truncate).
type atBody interface {
	// writeBody sends body with status, its headers set but not written,
	// and records the outcome.
	writeBody(x *exchange, status int, body []byte)
}

// atStream is a kind that acts on a streamed answer (drop, stream_error,
// stall, dribble): the stream writer asks its plan before the headers.
type atStream interface {
	// plan says what the kind does to s; it is called before the headers.
	plan(s *stream) streamPlan
}

// atPoint is a stream kind that acts at a point of the stream (drop,
// stream_error, stall): its plan says which.
type atPoint interface {
	// act is called once s has sent plan.at events; it reports whether the
	// stream goes on.
	act(s *stream) bool
}

// atEvent is a stream kind that acts before each event (dribble).
type atEvent interface {
	// beforeEvent reports whether the stream goes on.
	beforeEvent(s *stream) bool
}

// notRelayed is a kind that relayed streams cannot carry out in some or all
// of its settings.
type notRelayed interface {
	// relayUnsupported names the setting relay mode refuses ("" = none).
	relayUnsupported() string
}

// streamMatch says which requests a kind acts on.
type streamMatch int

const (
	anyStream    streamMatch = iota // streamed and non-streamed requests
	streamedOnly                    // streamed requests only
	plainOnly                       // non-streamed requests only
)

// kindRow is one row of the kind table; each kind's file returns its row.
type kindRow = fault.Kind[Fault, kind, kindTraits]

// kindTraits is what the upstream fake knows of a kind besides its name,
// settings and probes: how it combines with others and which requests it
// acts on.
type kindTraits struct {
	// used is the JSON Schema f's field meets when f uses the kind; nil
	// means present (a false or "" field uses none).
	used *jsonschema.Schema
	// pacer kinds (delay, dribble) may go with one other kind; a fault of
	// pacers alone fires by holding its answer back.
	pacer bool
	// streams says which requests the kind acts on: a fault using it
	// matches only those.
	streams streamMatch
	// refuses names kinds the kind does not combine with, refusal says so:
	// "dribble: " + refusal + " respond".
	refuses []string
	refusal string
}

// kindTable lists the fault kinds, keyed by YAML name, in explore's sweep
// order (Probes).
func kindTable() fault.KindTable[Fault, kind, kindTraits] {
	return fault.KindTable[Fault, kind, kindTraits]{
		respondKind(),
		resetKind(),
		delayKind(),
		dropKind(),
		streamErrorKind(),
		stallKind(),
		dribbleKind(),
		serveModelKind(),
		truncateKind(),
	}
}

// Probes returns the upstream fault kinds as explore sweeps them, each kind's
// own, in table order. The slice is new on every call.
func Probes() []fault.Probe[Fault] { return kindTable().Probes(nil) }

// armable is a Fault as the server arms it (fault.Registry): with which
// requests its kinds act on, taken when armed.
type armable struct {
	Fault
	streams streamMatch
	// reached counts the streams that reached the fault's point, every
	// event before it flushed (FaultProgress.Reached); guarded by the
	// server's lock.
	reached *int
}

// armed is a fault armed on the server, with its counts.
type armed = fault.Armed[armable]

// Occurrences returns the fault's Times.
func (a armable) Occurrences() fault.Times { return a.Times }

// Report returns the fault's report before any count: its side, the fault
// and its filters.
func (a armable) Report() wire.FaultReport {
	return wire.FaultReport{Side: wire.FaultUpstream, Fault: fault.FaultJSON(a.Fault), Endpoint: a.Endpoint, Stream: a.Stream}
}

// FaultReports returns, in armed order, what became of the faults armed
// for token ("" = the global faults); nil when none are armed. Each report's
// Fired counts the requests the fault acted on, as the client saw it: an
// error answered (respond), a connection reset, a stream actually cut (a
// drop whose cut point lies past the answer's last event, or whose request
// was refused first, acted on nothing; a drop after elapsed whose stream
// ended first, likewise), an error event sent (stream_error), a stream held
// at its point (stall; one whose point lies past the last event acted on
// nothing), a scripted answer naming another model (serve_model), a body cut
// short (truncate; one no longer than its cut acted on nothing), or — for a
// delay or dribble alone — an answer held back; a delay or dribble before
// another action fires when that action does. Matched stops counting once an
// earlier fault in its list fires on a request, and a run's faults that fire
// keep the global ones from counting it. Counts are exact under concurrent
// requests: each is taken under the server's lock.
func (s *Server) FaultReports(token string) []wire.FaultReport {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.faults.Reports(token)
}

// FaultProgress is how far one armed fault got: the requests it matched
// and acted on (as FaultReports counts them), and the streams that reached
// its point with every event before it flushed to the client (a stall, a
// drop, a stream_error at its point; counted before it acts there).
type FaultProgress struct {
	Matched, Fired, Reached int
}

// WaitFault waits until cond holds for the progress of the fault with id,
// armed for token ("" = the global faults), and returns that progress. It
// wakes on each change, not on a timer. It fails when ctx ends first or the
// fault is not armed (never was, or was removed).
func (s *Server) WaitFault(ctx context.Context, token string, id uint64, cond func(FaultProgress) bool) (FaultProgress, error) {
	for {
		s.mu.Lock()
		p, ok := s.progressLocked(token, id)
		changed := s.nextChangeLocked()
		s.mu.Unlock()
		switch {
		case !ok:
			return p, fmt.Errorf("upstream fault %d of %q is not armed", id, token)
		case cond(p):
			return p, nil
		}
		select {
		case <-changed:
		case <-ctx.Done():
			return p, fmt.Errorf("waiting for upstream fault %d of %q: %w", id, token, ctx.Err())
		}
	}
}

// progressLocked returns the progress of the fault with id armed for
// token, and whether it is armed. s.mu must be held.
func (s *Server) progressLocked(token string, id uint64) (FaultProgress, bool) {
	faults, reports := s.faults.Armed(token)
	for i, r := range reports {
		if r.ID == id {
			return FaultProgress{Matched: r.Matched, Fired: r.Fired, Reached: *faults[i].reached}, true
		}
	}
	return FaultProgress{}, false
}

// nextChangeLocked returns the channel changedLocked closes next. s.mu
// must be held.
func (s *Server) nextChangeLocked() <-chan struct{} {
	if s.changed == nil {
		s.changed = make(chan struct{})
	}
	return s.changed
}

// changedLocked wakes the callers of WaitFault and WaitRequests, if any: a
// fault's progress or a run's records may have changed. s.mu must be held.
func (s *Server) changedLocked() {
	if s.changed != nil {
		close(s.changed)
		s.changed = nil
	}
}

// reachedPoint counts a stream of x that reached its fault's point, every
// event before it flushed.
func (x *exchange) reachedPoint() {
	if x.armed == nil {
		return
	}
	s := x.s
	s.mu.Lock()
	defer s.mu.Unlock()
	*x.armed.Fault.reached++
	s.changedLocked()
}

// ArmedFaults returns the faults armed for token ("" = the global faults)
// and their reports (FaultReports), index by index, both taken at once.
// The faults share their pointer fields with the server's copies and must
// not be modified.
func (s *Server) ArmedFaults(token string) ([]Fault, []wire.FaultReport) {
	s.mu.Lock()
	defer s.mu.Unlock()
	armed, reports := s.faults.Armed(token)
	faults := make([]Fault, len(armed))
	for i, a := range armed {
		faults[i] = a.Fault
	}
	return faults, reports
}

// Hold estimates how long one firing of f holds its run back, for a
// scheduler that starts the longest runs first: the sum of what each of its
// kinds Holds, such as a delay, the linger before a cut, a stall that
// resumes, a dribble's waits or the wait a Retry-After asks.
func (f Fault) Hold() time.Duration { return kindTable().Hold(&f, 0) }
