package ledger

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"iter"
	"net/http"
	"slices"
	"strings"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/goccy/go-yaml"
	"github.com/invopop/jsonschema"

	"github.com/replaycheck/replaycheck/fakes/fault"
	"github.com/replaycheck/replaycheck/internal/wire"
	"github.com/replaycheck/replaycheck/internal/yamlfile"
)

// Fault is one fault armed on the ledger. Exactly one of the kind fields
// (FailBeforeExecute, DropAfterExecute, IsError, Delay, ChangeTools,
// ExpireSession, Unauthorized, DuplicateAnswer, InputRequired, StdioExit,
// StdioHang, StdioMalformedLine) is set. A fault acts on tools/call requests, or, with
// Method, on one session step (initialize or tools/list), which only
// fail_before_execute can refuse; stdio_exit at start acts on the
// initialize of a ledger-stdio process (its Method is initialize or none).
// The stdio kinds act only on what comes from a ledger-stdio process (see
// Transport). In YAML and JSON, for example:
//
//	{tool: commit_write, drop_after_execute: {}, times: once}
//	{tool: commit_write, drop_after_execute: {after: headers}}
//	{tool: commit_write, fail_before_execute: {status: 503}}
//	{fail_before_execute: {reset: true}}
//	{is_error: {message: "entry not found"}, times: 3}
//	{tool: commit_write, delay: 5s}
//	{method: initialize, fail_before_execute: {}, times: once}
//	{tool: commit_write, change_tools: {rename: commit_write, to: record_entry}, times: once}
//	{tool: commit_write, expire_session: {after: execute}, times: once}
//	{tool: commit_write, unauthorized: {}, times: always}
//	{tool: commit_write, duplicate_answer: {}, times: once}
//	{tool: commit_write, input_required: {}, times: once}
//	{tool: commit_write, input_required: {after: execute}, times: once}
//	{tool: commit_write, stdio_exit: {}, times: once}
//	{tool: commit_write, stdio_exit: {at: before_execute}}
//	{tool: commit_write, stdio_exit: {at: after_answer}}
//	{stdio_exit: {at: start}, times: 2}
//	{tool: commit_write, stdio_hang: {}, times: once}
//	{tool: commit_write, stdio_malformed_line: {}}
type Fault struct {
	// Method is the session step whose requests the fault applies to
	// (MethodInitialize or MethodToolsList); "" applies it to tools/call
	// requests. A session step can only be refused: Method needs
	// FailBeforeExecute and no Tool.
	Method string `json:"method,omitempty" yaml:"method,omitempty" jsonschema:"enum=,enum=initialize,enum=tools/list" jsonschema_description:"MCP session step whose requests the fault applies to (initialize or tools/list), refused with fail_before_execute (no tool); empty applies the fault to tools/call requests."`
	// Tool is the ledger tool whose tools/call requests the fault applies to
	// (a tool of the forwarded server when forwarding, see
	// ValidateForwarded); "" applies it to every tool.
	Tool string `json:"tool,omitempty" yaml:"tool,omitempty" jsonschema_description:"Ledger tool whose tools/call requests the fault applies to (commit_write, commit_write_keyed or read_ledger), or, when forwarding to your own MCP server (mcp.relay, mcp.command), one of its tools; empty applies it to every tool."`
	// Times says on which matching requests (the tool's calls, or the
	// method's requests) the fault fires; the zero value is always.
	Times fault.Times `json:"times,omitempty" yaml:"times,omitempty" jsonschema_description:"On which matching requests (tools/call requests, or the method's requests) the fault fires, counted per run: always (default), once, a count N (the first N), or {nth: K}."`
	// FailBeforeExecute refuses the request at the HTTP level; nothing is written.
	FailBeforeExecute *FailBeforeExecute `json:"fail_before_execute,omitempty" yaml:"fail_before_execute,omitempty" jsonschema_description:"Refuse the request at the HTTP level (a status, 503 by default, or a reset connection); nothing is written."`
	// DropAfterExecute executes and syncs the write, then closes the
	// connection before any byte of the answer reaches the client, or, with
	// after: headers, before its JSON-RPC result.
	DropAfterExecute *DropAfterExecute `json:"drop_after_execute,omitempty" yaml:"drop_after_execute,omitempty" jsonschema_description:"Execute and sync the write, then close the connection before any byte of the answer reaches the client (or, with after: headers, after its status line and headers, before the JSON-RPC result): the ambiguous case."`
	// IsError answers with an MCP tool result with isError set; nothing is written.
	IsError *IsError `json:"is_error,omitempty" yaml:"is_error,omitempty" jsonschema_description:"Answer with an MCP tool result with isError: true; nothing is written."`
	// Delay holds the answer back this long after the tool ran, or until the
	// client cancels (which is counted).
	Delay *fault.Duration `json:"delay,omitempty" yaml:"delay,omitempty" jsonschema:"type=string" jsonschema_description:"Hold the answer back this long (a Go duration such as 5s) after the tool ran, or until the client cancels."`
	// ChangeTools changes the server's tool list after the tool ran, before
	// the answer, and notifies every session (notifications/tools/list_changed).
	ChangeTools *ChangeTools `json:"change_tools,omitempty" yaml:"change_tools,omitempty" jsonschema_description:"After the tool ran, before its answer, change the server's tool list (remove, rename or add a tool) and send every session notifications/tools/list_changed; the change lasts for the rest of the run."`
	// ExpireSession makes the server forget the call's MCP session, before
	// the call runs or, with after: execute, after it ran.
	ExpireSession *ExpireSession `json:"expire_session,omitempty" yaml:"expire_session,omitempty" jsonschema_description:"Forget the call's MCP session, so its requests get 404 and the client must initialize anew: before the call runs (its POST gets 404, nothing is written), or with after: execute after it ran, closing the connection before the answer (the outcome is unknown to the client)."`
	// Unauthorized refuses the call with 401 and a WWW-Authenticate
	// challenge; nothing is written.
	Unauthorized *Unauthorized `json:"unauthorized,omitempty" yaml:"unauthorized,omitempty" jsonschema_description:"Refuse the tools/call with 401 Unauthorized and WWW-Authenticate: Bearer error=\"invalid_token\" (an access token that expired mid-session); nothing is written, so one retry after re-authenticating is safe."`
	// DuplicateAnswer lets the tool run once and writes the SSE event
	// answering it twice on its POST's stream.
	DuplicateAnswer *DuplicateAnswer `json:"duplicate_answer,omitempty" yaml:"duplicate_answer,omitempty" jsonschema_description:"Run the tool once, then write the SSE event carrying its JSON-RPC response twice on the POST's stream, as a buggy proxy that repeats an event does; the client sees the same response id twice."`
	// InputRequired answers the call with an input-required result (MRTR)
	// before the tool runs, or, with after: execute, after it ran.
	InputRequired *InputRequired `json:"input_required,omitempty" yaml:"input_required,omitempty" jsonschema_description:"Answer the tools/call with an input-required result (MRTR, SEP-2322: an elicitation asking to confirm, and a request state) so a compliant client retries it with its answer and the state: before the tool runs (default; the retry runs it once), or with after: execute after it ran (the retry runs it again: a server bug)."`
	// StdioExit makes the ledger-stdio process exit (non-zero, as a crash)
	// as it starts, or with a call in flight before or after it ran, or
	// right after answering it.
	StdioExit *StdioExit `json:"stdio_exit,omitempty" yaml:"stdio_exit,omitempty" jsonschema_description:"Over stdio only: make the ledger-stdio process exit non-zero, as a crash, at start, before_execute, after_execute (default) or after_answer; over HTTP it never fires."`
	// StdioHang lets the tool run, then makes the ledger-stdio process stop
	// writing to stdout (this answer and every other) until its stdin closes.
	StdioHang *StdioHang `json:"stdio_hang,omitempty" yaml:"stdio_hang,omitempty" jsonschema_description:"Over stdio only: run the tool (the write is synced), then make the ledger-stdio process hang: it writes nothing more on stdout, this answer included, until its stdin closes or it is killed; over HTTP it never fires."`
	// StdioMalformedLine lets the tool run, then makes the ledger-stdio
	// process write a line that is not JSON-RPC on stdout before the answer.
	StdioMalformedLine *StdioMalformedLine `json:"stdio_malformed_line,omitempty" yaml:"stdio_malformed_line,omitempty" jsonschema_description:"Over stdio only: run the tool, then make the ledger-stdio process write one line that is not JSON-RPC (a log line) on stdout, then the real answer; over HTTP it never fires."`
}

// JSONSchemaExtend makes the JSON Schema of Fault (github.com/invopop/jsonschema)
// require exactly one fault kind, and fail_before_execute without a tool
// when a method is set.
func (Fault) JSONSchemaExtend(s *jsonschema.Schema) {
	for _, k := range Kinds() {
		s.OneOf = append(s.OneOf, &jsonschema.Schema{Required: []string{k}})
	}
	s.AnyOf = []*jsonschema.Schema{
		{Not: &jsonschema.Schema{Required: []string{"method"}}},
		{Required: []string{wire.MCPFaultFailBeforeExecute}, Not: &jsonschema.Schema{Required: []string{"tool"}}},
		{Required: []string{KindStdioExit}, Not: &jsonschema.Schema{Required: []string{"tool"}}},
	}
	if p, ok := s.Properties.Get("tool"); ok {
		// A ledger tool, or a forwarded server's (any tool name).
		enum := []any{""}
		for _, t := range toolNames() {
			enum = append(enum, t)
		}
		p.AnyOf = []*jsonschema.Schema{{Enum: enum}, {Pattern: "^[A-Za-z0-9_.-]{1,64}$"}}
	}
}

// The session steps a Fault's Method can name.
const (
	MethodInitialize = "initialize"
	MethodToolsList  = "tools/list"
)

// SessionMethods returns the session steps a fault can refuse, in the order
// a client meets them.
func SessionMethods() []string { return []string{MethodInitialize, MethodToolsList} }

// FieldError is a validation error of a Fault that is about one of its
// fields, so a caller can point at that field (a scenario file's line). A
// field inside a fault kind's settings is a FieldError naming the kind whose
// chain holds a FieldError naming the setting.
type FieldError struct {
	// Field is the YAML name of the field, such as "method".
	Field string
	Err   error
}

func (e *FieldError) Error() string { return e.Err.Error() }

func (e *FieldError) Unwrap() error { return e.Err }

// action is one fault kind's settings, as armed. Each kind lives in its own
// file (fault_<name>.go): its type implements action (fault.Action: Check
// validates its settings, Holds says how long a firing holds its run back)
// and the hook interfaces below of the points where it acts, and the file
// returns its row of faultKinds. The wrapper, the middleware and the tool
// handlers ask the faults that fired on a call at each hook; none of them
// knows a kind.
type action interface {
	fault.Action[Fault]
}

// The hooks, in the order a tools/call meets them. Where several fired faults
// answer one hook for one POST (refuser, cutter), the highest rank decides
// (ties: the first that fired); at the other hooks the first fault of each
// kind that fired on a call acts.
type (
	// stepRefuser refuses a session step (initialize, tools/list) in the
	// wrapper, before the SDK sees it, and a POST carrying one with tool
	// calls (a batch) as a refuser. Only a kind implementing it may have a
	// Fault.Method.
	stepRefuser interface {
		refuser
		refuseStep(s *Server, w http.ResponseWriter, method string)
	}
	// refuser answers a POST carrying tool calls in place of the SDK, before
	// any of them runs. refusal returns its rank, 0 when this fault (as
	// set) does not refuse.
	refuser interface {
		refusal() int
		refuse(s *Server, w http.ResponseWriter, p *post)
	}
	// dispatcher sees its call as the POST goes to the tools (the SDK), with
	// s.mu held.
	dispatcher interface {
		dispatchedLocked(s *Server, c *call)
	}
	// preempter answers its call in the tool handler instead of running the
	// tool; the answer is then held as a tool's is (afterExecuter, holder).
	preempter interface {
		preempt(s *Server, c *call) *mcp.CallToolResult
	}
	// asker answers its call in the tool handler with an input-required
	// result (MRTR, ask) in place of the tool's answer, unless the call's
	// params are the retry that carries back what it asked (retried);
	// runsFirst says whether the tool runs before it asks. It acts before
	// the preempters.
	asker interface {
		retried(params *mcp.CallToolParamsRaw) bool
		runsFirst() bool
		ask(s *Server, c *call) *mcp.CallToolResult
	}
	// afterExecuter acts in the tool handler after the tool ran, before its
	// answer.
	afterExecuter interface {
		afterExecute(ctx context.Context, s *Server, c *call)
	}
	// holder holds the answer back in the tool handler, after the
	// afterExecuters acted.
	holder interface {
		hold(ctx context.Context, s *Server, c *call)
	}
	// cutter cuts the answer to its POST on the stream (the wrapper's
	// ResponseWriter swallows it from the cut on, and the wrapper closes the
	// connection). cut returns where (the earliest asked on the POST wins)
	// and its rank (dropNone, 0 when this fault does not cut); cutOff runs
	// for the highest-ranked cutter once the answer was swallowed, before
	// the connection closes, and returns the Fault of the calls' fault
	// events.
	cutter interface {
		cut() (dropPoint, int)
		cutOff(s *Server, p *post) string
	}
	// answerer writes the event answering its call on the POST's SSE stream
	// (event is the whole event, as the SDK wrote it) in place of the
	// wrapper's ResponseWriter.
	answerer interface {
		writeAnswer(s *Server, c *call, w io.Writer, event []byte) (int, error)
	}
	// director is a fault a ledger-stdio process carries out on its call:
	// the tool handler attaches directive's name (its MCP fault name) to the
	// call's result under StdioFaultMeta, for the process, which strips it
	// and obeys. What the process does, and so what becomes of the call for
	// its client (answered, exits), is the name's wire.StdioEffect in the
	// MCP fault table, as the ledger records it once the result reached the
	// process. Directors fire only on calls from a ledger-stdio process.
	director interface {
		directive() string
	}
	// spawnExiter makes a ledger-stdio process exit as it starts: when
	// atSpawn is true the fault matches the initialize of such processes
	// (spawns), never a tools/call, and the ledger refuses that initialize
	// with StdioFaultHeader.
	spawnExiter interface {
		atSpawn() bool
	}
	// sessionActor acts on its call's MCP session: it matches only calls
	// that came in one, never a self-describing (2026-07-28) request or a
	// stateless ledger's, so there it stays armed and unfired, and its
	// report says so.
	sessionActor interface {
		actsOnSession()
	}
)

// needsSession reports whether act can fire only on a call in a session.
func needsSession(act action) bool {
	_, ok := act.(sessionActor)
	return ok
}

// isSpawnFault reports whether act makes a process exit as it starts.
func isSpawnFault(act action) bool {
	e, ok := act.(spawnExiter)
	return ok && e.atSpawn()
}

// firedFault is a fault that fired on a call: its kind's YAML name and its
// action.
type firedFault struct {
	kind string
	act  action
}

// hooks yields the first fault of each kind that fired on c and acts at the
// hook H, in the order they fired.
func hooks[H any](c *call) iter.Seq[H] {
	return func(yield func(H) bool) {
		for i, f := range c.fired {
			h, ok := f.act.(H)
			if !ok || slices.ContainsFunc(c.fired[:i], func(e firedFault) bool { return e.kind == f.kind }) {
				continue
			}
			if !yield(h) {
				return
			}
		}
	}
}

// kindRow is one row of the fault table; each kind's file returns its row.
type kindRow = fault.Kind[Fault, action, kindTraits]

// kindTraits is what the ledger knows of a kind besides its name, settings
// and probes: the MCP transport it needs (it acts on the HTTP exchange, or
// on the stdio server process; MCPTransportAny: on the call itself, either
// way).
type kindTraits struct {
	transport wire.MCPTransport
}

// faultKinds is the table of fault kinds, keyed by YAML name, in explore's
// sweep order. Adding a fault kind is the checklist in the package doc.
func faultKinds() fault.KindTable[Fault, action, kindTraits] {
	return fault.KindTable[Fault, action, kindTraits]{
		failBeforeExecuteKind(),
		dropAfterExecuteKind(),
		isErrorKind(),
		delayKind(),
		expireSessionKind(),
		unauthorizedKind(),
		changeToolsKind(),
		duplicateAnswerKind(),
		stdioExitKind(),
		stdioHangKind(),
		stdioMalformedLineKind(),
		inputRequiredKind(),
	}
}

// nonNil returns a as an action, or nil when a is a nil pointer.
func nonNil[T any, P interface {
	*T
	action
}](a P) action {
	if a == nil {
		return nil
	}
	return a
}

// Probes returns the ledger's fault kinds as explore sweeps them, in sweep
// order: each kind's probes, in the order of the fault table. The slice is
// new on every call.
func Probes() []fault.Probe[Fault] {
	return faultKinds().Probes(func(k *kindRow, p *fault.Probe[Fault]) {
		p.Transport = k.Traits.transport
		f := p.Build(fault.Spot{}, fault.Settings{})
		p.Session = needsSession(k.Get(&f))
	})
}

// Transport returns the MCP transport f's kind needs: MCPTransportHTTP for
// a kind that acts on the HTTP exchange (a status, a dropped connection, an
// SSE event), MCPTransportStdio for one that acts on the stdio server's
// process, MCPTransportAny for one that acts on the call either way (and for
// a fault with no valid kind).
func (f Fault) Transport() wire.MCPTransport {
	if k, ok := faultKinds().Lookup(f.Kind()); ok {
		return k.Traits.transport
	}
	return wire.MCPTransportAny
}

// Kinds returns the YAML names of the ledger's fault kinds, sorted.
func Kinds() []string {
	names := faultKinds().Names()
	slices.Sort(names)
	return names
}

// Kind returns the YAML name of the fault's kind, or "" when f sets no kind
// or more than one.
func (f Fault) Kind() string {
	name, _, err := f.resolve()
	if err != nil {
		return ""
	}
	return name
}

// Validate reports whether f is a usable fault: exactly one kind, a known
// tool, and valid settings for its kind.
func (f Fault) Validate() error {
	_, _, err := f.resolve()
	return err
}

// ValidateForwarded is Validate for a forwarding ledger (Config.Forward),
// whose tools are not known until it lists them: Tool may be any tool name;
// Arm checks it against the tools the server lists.
func (f Fault) ValidateForwarded() error {
	_, _, err := f.resolveFor(toolName().MatchString, forwardedToolNames)
	return err
}

// forwardedToolNames says, in an error, what a forwarded tool's name may be.
func forwardedToolNames() []string {
	return []string{"a tool name of 1 to 64 letters, digits, '_', '-' or '.'"}
}

// resolve returns the fault's kind name and action, or an error naming what
// is wrong.
func (f *Fault) resolve() (string, action, error) { return f.resolveFor(isTool, toolNames) }

// resolveFor is resolve with the tools a fault may name: known reports
// whether one is, names lists them.
func (f *Fault) resolveFor(known func(string) bool, names func() []string) (string, action, error) {
	var name string
	var act action
	var set []string
	for _, u := range faultKinds().Uses(f) {
		set = append(set, u.Kind.Name)
		name, act = u.Kind.Name, u.Act
	}
	slices.Sort(set)
	switch len(set) {
	case 0:
		return "", nil, fmt.Errorf("no fault kind set; want exactly one of %s", strings.Join(Kinds(), ", "))
	case 1:
	default:
		return "", nil, fmt.Errorf("%d fault kinds set (%s); want exactly one", len(set), strings.Join(set, ", "))
	}
	if f.Tool != "" && !known(f.Tool) {
		return "", nil, fmt.Errorf("%s: unknown tool %q; want one of %s, or none for every tool", name, f.Tool, strings.Join(names(), ", "))
	}
	if err := f.checkMethod(name, act); err != nil {
		return "", nil, err
	}
	if err := act.Check(f); err != nil {
		err = fmt.Errorf("%s: %w", name, err)
		var setting *FieldError
		if errors.As(err, &setting) {
			err = &FieldError{Field: name, Err: err}
		}
		return "", nil, err
	}
	return name, act, nil
}

// checkMethod checks Method against the fault's kind (name, act) and tool.
func (f *Fault) checkMethod(name string, act action) error {
	if isSpawnFault(act) {
		switch {
		case f.Tool != "":
			return &FieldError{Field: "tool", Err: fmt.Errorf("%s at %s with tool %s: a process exits as it starts, before any call; drop the tool", name, StdioExitAtStart, f.Tool)}
		case f.Method != "" && f.Method != MethodInitialize:
			return &FieldError{Field: "method", Err: fmt.Errorf("method %s with %s at %s: a process exits at its initialize; want method %s or none", f.Method, name, StdioExitAtStart, MethodInitialize)}
		}
		return nil
	}
	switch {
	case f.Method == "":
		return nil
	case !slices.Contains(SessionMethods(), f.Method):
		return &FieldError{Field: "method", Err: fmt.Errorf("unknown method %q; want %s, or none for tools/call", f.Method, strings.Join(SessionMethods(), " or "))}
	case f.Tool != "":
		return &FieldError{Field: "method", Err: fmt.Errorf("method %s with tool %s: a tool names tools/call requests, and a session step has none; drop one of them", f.Method, f.Tool)}
	case !implements[stepRefuser](act):
		return &FieldError{Field: "method", Err: fmt.Errorf("method %s with %s: a session step can only be refused (fail_before_execute); %s acts on tools/call", f.Method, name, name)}
	}
	return nil
}

// implements reports whether act acts at the hook H.
func implements[H any](act action) bool {
	_, ok := act.(H)
	return ok
}

// String renders f in its YAML flow form, for logs and messages.
func (f Fault) String() string {
	b, err := yaml.MarshalWithOptions(f, yaml.Flow(true), yaml.UseJSONMarshaler())
	if err != nil {
		return fmt.Sprintf("{tool: %q, kind: %q}", f.Tool, f.Kind())
	}
	return strings.TrimSpace(string(b))
}

// ParseFault decodes one fault from a YAML flow mapping, such as the value of
// a --mcp-fault flag ('{tool: commit_write, drop_after_execute: {}}'). The
// decoding is strict: unknown fields are errors, and the fault is validated.
func ParseFault(s string) (Fault, error) { return parseFault(s, Fault.Validate) }

// ParseForwardedFault is ParseFault for a forwarding ledger: the fault is
// validated with ValidateForwarded.
func ParseForwardedFault(s string) (Fault, error) { return parseFault(s, Fault.ValidateForwarded) }

func parseFault(s string, validate func(Fault) error) (Fault, error) {
	var f Fault
	if strings.TrimSpace(s) == "" {
		return f, errors.New("mcp fault: empty; want a YAML mapping such as '{tool: commit_write, drop_after_execute: {}}'")
	}
	if err := yamlfile.CheckNesting("mcp fault", []byte(s)); err != nil {
		return Fault{}, err
	}
	dec := yaml.NewDecoder(bytes.NewReader([]byte(s)), yaml.Strict())
	if err := dec.Decode(&f); err != nil {
		return Fault{}, fmt.Errorf("mcp fault %q (fields: method, tool, times, %s): %w", s, strings.Join(Kinds(), ", "), err)
	}
	if err := validate(f); err != nil {
		return Fault{}, fmt.Errorf("mcp fault %q: %w", s, err)
	}
	return f, nil
}

// armable is a Fault as the ledger arms it (fault.Registry): with its
// kind's name, action and transport, resolved when armed.
type armable struct {
	fault     Fault
	name      string
	act       action
	transport wire.MCPTransport // its kind's (kindTraits.transport)
}

// armed is a fault armed on the ledger, with its counts.
type armed = fault.Armed[armable]

// Occurrences returns the fault's Times.
func (a armable) Occurrences() fault.Times { return a.fault.Times }

// Report returns the fault's report before any count: its side, the fault
// and its method.
func (a armable) Report() wire.FaultReport {
	return wire.FaultReport{Side: wire.FaultMCP, Fault: fault.FaultJSON(a.fault), Method: a.fault.Method}
}

// matchesCall reports whether a is about a tools/call of tool from a
// ledger-stdio process (stdio) or not: a fault for a session step or a spawn
// is not, and a stdio kind matches only calls from a ledger-stdio process.
func (a *armable) matchesCall(tool string, stdio bool) bool {
	switch {
	case a.fault.Method != "" || isSpawnFault(a.act):
		return false
	case a.fault.Tool != "" && a.fault.Tool != tool:
		return false
	}
	return stdio || a.transport != wire.MCPTransportStdio
}

// arm validates faults, which may name the tools known reports (names
// lists them), and returns their armed entries.
func arm(faults []Fault, known func(string) bool, names func() []string) ([]armable, error) {
	out := make([]armable, 0, len(faults))
	for i := range faults {
		name, act, err := faults[i].resolveFor(known, names)
		if err != nil {
			return nil, fmt.Errorf("mcp fault %d (%s): %w", i+1, faults[i].String(), err)
		}
		out = append(out, armable{fault: faults[i], name: name, act: act, transport: faults[i].Transport()})
	}
	return out, nil
}

// Hold estimates how long one firing of f holds its answer back, for a
// scheduler that starts the longest runs first: what its kind Holds, such
// as a delay, a tool list change's wait for a relist, or a hung server's,
// which lasts until the caller gives up after giveUp (its tool timeout).
func (f Fault) Hold(giveUp time.Duration) time.Duration { return faultKinds().Hold(&f, giveUp) }
