package upstream

import (
	"fmt"
	"net/url"
	"strconv"
	"strings"

	"github.com/invopop/jsonschema"

	api "github.com/replaycheck/replaycheck/internal/dialect"
	"github.com/replaycheck/replaycheck/internal/toolname"
	"github.com/replaycheck/replaycheck/internal/wire"
)

// dialect is one model API as the fake speaks it: how its requests are
// read and its answers and errors written. Every fact of the API (paths,
// classification, events, error shapes) is internal/dialect's; the fake adds
// the answer writer. Adding a dialect is the checklist of internal/dialect.
type dialect interface {
	// parse reads the fields of a request body the fake needs. It never
	// panics; a body that is not a JSON object is an error.
	parse(body []byte) (api.Request, error)
	// answer renders a scripted answer, as one JSON body appended to dst or
	// as SSE events.
	answer(dst []byte, a *answer, req *api.Request) reply
	// errorBody renders an error in the dialect's error shape.
	errorBody(status int, message string) []byte
	// streamError renders the dialect's in-stream error event for a
	// stream_error fault at p.
	streamError(e *StreamError, p streamErrorAt) sseEvent
	// terminal reports whether a streamed event ends the answer (the event a
	// tool_call drop cuts before, in relay mode).
	terminal(ev sseEvent) bool
}

// answerer writes a dialect's scripted answers: the fake model's part of a
// dialect (chat.go, responses.go, messages.go, gemini.go).
type answerer interface {
	answer(dst []byte, a *answer, req *api.Request) reply
}

// spoken is a dialect: internal/dialect's facts and the fake's answerer.
type spoken struct {
	api.Dialect
	answerer
}

func (d spoken) parse(body []byte) (api.Request, error) { return d.Parse(body) }

func (d spoken) errorBody(status int, message string) []byte { return d.ErrorBody(status, message) }

func (d spoken) streamError(e *StreamError, p streamErrorAt) sseEvent {
	ev := d.StreamError(api.StreamError{Type: e.Type, Event: e.Event, Message: e.message, Seq: p.seq, ID: p.id, Model: p.model, Created: p.created})
	return sseEvent{name: ev.Name, data: ev.Data, raw: ev.Raw}
}

func (d spoken) terminal(ev sseEvent) bool {
	return d.Terminal(api.Event{Name: ev.name, Data: ev.data})
}

// dialectEntry is one row of the dialect table.
type dialectEntry struct {
	name string // YAML name: chat, responses, messages, gemini
	d    spoken
	// conversation and tools are the request fields holding the
	// conversation and the tool definitions, as a cassette keys them
	// (api.Dialect's Conversation and Tools).
	conversation []string
	tools        []string
}

// answerers is the fake model's part of every dialect (api.Sides): each
// method, in the dialect's own file (chat.go, responses.go, messages.go,
// gemini.go), returns its answer writer. A dialect without one does not
// compile.
type answerers struct{}

// dialectTable lists the dialects, in internal/dialect's order, each with
// the fake's answer writer.
func dialectTable() []dialectEntry {
	var out []dialectEntry
	for _, p := range api.Pair[answerer](answerers{}) {
		out = append(out, dialectEntry{name: p.Name, d: spoken{p.Dialect, p.Side}, conversation: p.Conversation, tools: p.Tools})
	}
	return out
}

// dialectByName returns the dialect with YAML name name.
func dialectByName(name string) (dialectEntry, bool) {
	for _, de := range dialectTable() {
		if de.name == name {
			return de, true
		}
	}
	return dialectEntry{}, false
}

// endpointEnum lists the dialects' names as the enum of the endpoint
// property of Fault's JSON Schema.
func endpointEnum(s *jsonschema.Schema) {
	if p, ok := s.Properties.Get("endpoint"); ok {
		for _, name := range api.Names() {
			p.Enum = append(p.Enum, name)
		}
	}
}

// pathCall is what a dialect's request path says (Gemini's names the model
// and the stream).
type pathCall struct {
	model  string
	stream bool
	// bad is the message of a request the fake refuses for its path.
	bad string
}

// dialectFor returns the dialect whose model requests u addresses, and what
// its path says of the request.
func (s *Server) dialectFor(u *url.URL) (dialectEntry, pathCall, bool) {
	for _, de := range s.dialects {
		if c, ok := de.d.Route(u); ok {
			return de, pathCall{model: c.Model, stream: c.Stream, bad: c.Bad}, true
		}
	}
	return dialectEntry{}, pathCall{}, false
}

// answer is a scripted answer before it is rendered in a dialect.
type answer struct {
	idTok       string // run token, or "none"
	seq         int    // per-token request number
	created     int64
	model       string
	calls       []toolCall
	text        string
	inputTokens int
}

// outputTokens is the usage figure reported for the answer's output: a
// quarter of its text and of each call's arguments, at least one each.
func (a *answer) outputTokens() int {
	n := len(a.text)/4 + 1
	for _, c := range a.calls {
		n += len(c.args)/4 + 1
	}
	return n
}

// toolCall is one tool call of an answer.
type toolCall struct {
	name      string
	namespace string
	custom    bool
	args      string // JSON object text, or the custom tool's input
	// argsQuoted is args as a JSON string, when known ("" = quote args).
	argsQuoted string
	// againFor is the id of the call the client reported failed that this
	// call asks for again; "" for a call of the script's own.
	againFor string
}

// appendQuotedArgs appends c.args as a JSON string.
func (c *toolCall) appendQuotedArgs(b []byte) []byte {
	if c.argsQuoted != "" {
		return append(b, c.argsQuoted...)
	}
	return appendJSONString(b, c.args)
}

func (a *answer) callNames() []string {
	if len(a.calls) == 0 {
		return nil
	}
	out := make([]string, len(a.calls))
	for i, c := range a.calls {
		out[i] = c.name
		if c.namespace != "" {
			out[i] = c.namespace + "." + c.name
		}
	}
	return out
}

// callIDs returns the ids of the answer's tool calls: prefix + token + "_"
// + seq + "_" + i for each; nil when it makes none.
func (a *answer) callIDs(prefix string) []string {
	if len(a.calls) == 0 {
		return nil
	}
	out := make([]string, len(a.calls))
	for i := range a.calls {
		out[i] = a.id(prefix, '_', i)
	}
	return out
}

// id returns prefix + token + sep + seq (+ sep + i when i >= 0).
func (a *answer) id(prefix string, sep byte, i int) string {
	b := make([]byte, 0, len(prefix)+len(a.idTok)+12)
	b = append(b, prefix...)
	b = append(b, a.idTok...)
	b = append(b, sep)
	b = strconv.AppendInt(b, int64(a.seq), 10)
	if i >= 0 {
		b = append(b, sep)
		b = strconv.AppendInt(b, int64(i), 10)
	}
	return string(b)
}

// reply is a rendered answer: body for a plain answer, or events for a
// stream, where events[:contentEnd] complete the content (the tool calls)
// and the rest are terminal.
type reply struct {
	id         string   // the answer's id (chatcmpl-…, msg_…, resp_…)
	callIDs    []string // the ids of its tool calls, in order; nil when they have none
	body       []byte
	events     []sseEvent
	contentEnd int
}

// scriptedAnswer resolves the script's turn against the request's tools. A
// call that matches no offered tool is left out and noted in the record's
// Unmatched (AgainUnmatched for a call the model asks for again); a call that
// several offered tools match is an error.
func (s *Server) scriptedAnswer(x *exchange) (answer, error) {
	a := answer{
		idTok:       x.token,
		seq:         x.seq,
		created:     s.clock().Unix(),
		model:       x.req.Model,
		inputTokens: len(x.body)/4 + 1,
	}
	if a.idTok == "" {
		a.idTok = "none"
	}
	if a.model == "" {
		a.model = "replaycheck-fake"
	}
	steps, first, say := x.script.turn(x.round)
	made := make([]againCall, len(steps))
	for i := range steps {
		made[i] = againCall{mintedCall: mintedCall{step: first + i, round: x.round}}
	}
	if len(x.again) > 0 {
		// The client reported calls failed: the model asks for them again
		// (same tool, same arguments) instead of going on with the script.
		all := x.script.steps()
		steps, made = make([]Step, len(x.again)), x.again
		for i, c := range x.again {
			steps[i] = all[c.step]
		}
	}
	entry := ""
	for i := range steps {
		st := &steps[i]
		t, ok, err := matchTool(x.req.Tools, st.Call)
		if err != nil {
			return answer{}, err
		}
		if !ok && made[i].of != "" {
			m := made[i].mintedCall
			x.rec.AgainUnmatched = append(x.rec.AgainUnmatched, wire.ToolCall{Tool: st.Call, AgainFor: made[i].of, Step: m.step + 1, Attempt: m.attempt})
			continue
		}
		if !ok {
			x.rec.Unmatched = append(x.rec.Unmatched, st.Call)
			continue
		}
		if entry == "" {
			entry = requestEntry(&x.req, x.token)
		}
		r := s.args.render(st, entry, x.token)
		c := toolCall{name: t.Name, namespace: t.Namespace, custom: t.Custom, args: r.json, argsQuoted: r.quoted}
		if t.Custom {
			c.args = customInput(st.Arguments, r.json, entry, x.token)
			c.argsQuoted = ""
		}
		m := made[i].mintedCall
		if made[i].of != "" {
			c.args, c.argsQuoted = m.args, m.argsQuoted
		}
		m.args, m.argsQuoted = c.args, c.argsQuoted
		c.againFor = made[i].of
		a.calls = append(a.calls, c)
		x.mints = append(x.mints, m)
	}
	if len(a.calls) == 0 {
		a.text = say
	} else {
		x.answeredRound = x.mints[0].round
	}
	return a, nil
}

// requestEntry returns the entry r's user text names, else the token.
func requestEntry(r *api.Request, token string) string {
	for i := len(r.UserText) - 1; i >= 0; i-- {
		if e := promptEntry(r.UserText[i]); e != "" {
			return e
		}
	}
	if token != "" {
		return token
	}
	return "entry"
}

// customInput is a custom tool's free-form input: the "input" argument
// when it is the only one, else the arguments as JSON.
func customInput(args map[string]any, rendered, entry, token string) string {
	if len(args) == 1 {
		if v, ok := args["input"].(string); ok {
			return expand(v, entry, token).(string)
		}
	}
	return rendered
}

// offeredName is how a tool is named in records and messages: its name, or
// "namespace.name" for a tool of a Responses namespace tool.
func offeredName(t api.Tool) string {
	if t.Namespace != "" {
		return t.Namespace + "." + t.Name
	}
	return t.Name
}

// offeredNames returns the offered names of tools, in order; nil for none.
func offeredNames(tools []api.Tool) []string {
	if len(tools) == 0 {
		return nil
	}
	out := make([]string, len(tools))
	for i, t := range tools {
		out[i] = offeredName(t)
	}
	return out
}

// ambiguousCallError is a script call that more than one offered tool
// matches equally well.
type ambiguousCallError struct {
	call  string
	tools []string // offered names of the matching tools, in offered order
}

func (e *ambiguousCallError) Error() string {
	quoted := make([]string, len(e.tools))
	for i, n := range e.tools {
		quoted[i] = strconv.Quote(n)
	}
	list, verb := quoted[0]+" and "+quoted[1], "both match"
	if len(quoted) > 2 {
		list, verb = strings.Join(quoted[:len(quoted)-1], ", ")+" and "+quoted[len(quoted)-1], "all match"
	}
	return fmt.Sprintf("script call %q is ambiguous: offered tools %s %s; name one of them exactly in the script", e.call, list, verb)
}

// matchTool finds the offered tool a script call names. Two ranks, the
// first that has a match decides:
//
//  1. exact: the tool's name is call, or, for a tool of a Responses
//     namespace tool, call is "namespace.name";
//  2. prefixed: the name ends in call and what comes before is a non-empty
//     prefix ending in a separator a client or proxy puts between server and
//     tool: "-", ".", "/", ":" or "__" (ledger-commit_write,
//     ledger.commit_write, ledger/commit_write, ledger:commit_write,
//     mcp__ledger__commit_write), or a single "_" when call itself contains
//     "_" (ledger_commit_write, mcp_ledger_commit_write). A one-word call
//     after a single "_" would be the last word of any snake_case name, so
//     write does not match commit_write; and since the prefix must end in a
//     separator, commit_write never matches commit_write_keyed or
//     xcommit_write.
//
// For a tool of a Responses namespace tool, "name" above is the tool's own
// name inside the namespace (namespace ledger or mcp__ledger__ with tool
// commit_write is an exact match for commit_write). Tools offered twice
// under the same offered name count once. When the deciding rank holds more
// than one tool, matchTool returns an *ambiguousCallError naming them; when
// neither rank holds one, ok is false.
func matchTool(tools []api.Tool, call string) (t api.Tool, ok bool, err error) {
	if call == "" {
		return api.Tool{}, false, nil
	}
	var found []int
	for rank := 0; rank < 2 && len(found) == 0; rank++ {
		for i := range tools {
			if !toolMatches(&tools[i], call, rank == 0) {
				continue
			}
			dup := false
			for _, j := range found {
				dup = dup || tools[j].Name == tools[i].Name && tools[j].Namespace == tools[i].Namespace
			}
			if !dup {
				found = append(found, i)
			}
		}
	}
	switch len(found) {
	case 0:
		return api.Tool{}, false, nil
	case 1:
		return tools[found[0]], true, nil
	}
	e := &ambiguousCallError{call: call, tools: make([]string, len(found))}
	for k, i := range found {
		e.tools[k] = offeredName(tools[i])
	}
	return api.Tool{}, false, e
}

// toolMatches reports whether t matches call exactly (exact) or by a
// prefixed name (!exact), as matchTool describes.
func toolMatches(t *api.Tool, call string, exact bool) bool {
	if exact {
		if t.Name == call {
			return true
		}
		ns := t.Namespace
		return ns != "" && len(call) == len(ns)+1+len(t.Name) && strings.HasPrefix(call, ns) && call[len(ns)] == '.' && strings.HasSuffix(call, t.Name)
	}
	return toolname.Prefixed(t.Name, call)
}

// openAIErrorBody is the OpenAI error shape, for answers outside a dialect
// (unknown paths, the relay's own failures).
func openAIErrorBody(status int, message string) []byte { return api.OpenAIErrorBody(status, message) }

// geminiErrorBody is the Google API error shape, for Gemini paths outside a
// model request.
func geminiErrorBody(code int, status, message string) []byte {
	return api.GeminiErrorBody(code, status, message)
}

// splitArgs splits s into n fragments on rune boundaries (some may be empty).
func splitArgs(s string, n int) []string {
	out := make([]string, n)
	start := 0
	for i := 0; i < n; i++ {
		end := len(s) * (i + 1) / n
		for end < len(s) && end > start && !runeStart(s[end]) {
			end++
		}
		if end < start {
			end = start
		}
		out[i] = s[start:end]
		start = end
	}
	out[n-1] += s[start:]
	return out
}

func runeStart(c byte) bool { return c&0xC0 != 0x80 }
