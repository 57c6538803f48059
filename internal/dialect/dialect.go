// Package dialect is the one table of the model API dialects replaycheck
// speaks — OpenAI Chat Completions, OpenAI Responses, Anthropic Messages and
// the Gemini API — and the facts of each: its YAML name, its paths, how a
// request is classified (initial or follow-up, the tool results and their
// ids, the stream flag), its stream events and its terminal event, its error
// body and in-stream error shapes, its tool-call shapes, and the words
// reports use for it. The fakes (fakes/upstream, fakes/gateway), the app
// client (internal/harness/app), the scenarios (internal/harness/scenario) and the reports
// (report) ask it; none of them names a path or an event of its own.
//
// Each package with code of its own for a dialect — the upstream fake's
// answer writer, the built-in gateway's endpoint — implements Sides, one
// method per dialect, in its file of that dialect, and reaches it through
// Pair; none keeps a table or a switch of its own, and a package that lacks
// a dialect's method does not compile.
//
// Adding a dialect NAME takes these files:
//   - internal/dialect/NAME.go: NAME() Dialect filling every field (its
//     paths and events as constants);
//   - internal/dialect/dialect.go: its row in table and its method in Sides
//     (then the packages below do not compile until they have theirs);
//   - fakes/upstream/NAME.go: its answer writer (an answerer) and the
//     method answerers.NAME returning it;
//   - fakes/gateway/dialect_NAME.go: its endpoint (a type implementing the
//     gateway's dialect) and the method endpoints.NAME returning it — or,
//     when the built-in gateway does not serve it, endpoints.NAME returning
//     nil in fakes/gateway/dialect.go (as Gemini's does);
//   - internal/dialect/dialect_test.go: its cases, and its method in
//     sideNames;
//   - fakes/upstream/NAME_test.go: the fake judged by the provider's
//     official SDK;
//   - fakes/upstream/streamfault_test.go: its row in sawDialects;
//   - fakes/upstream/linger_test.go: its row in lingerDialects;
//   - fakes/upstream/fuzz_test.go: a FuzzParseNAME;
//   - fakes/gateway/request_test.go: for a served endpoint, requests of it;
//   - fakes/gateway/sdk_test.go: for a served endpoint, the gateway through
//     the provider's SDK.
//
// Generated, not edited (the endpoint enums and lists): the schemas in
// schemas/ (go test ./internal/harness/targetfile -update), the fault
// schemas of fakes/control/openapi.yaml (go test ./fakes/control -run
// TestSpecFaultSchemas -update) and
// internal/harness/scenario/testdata/bad/unknown-endpoint.golden (go test
// ./internal/harness/scenario -update). Scenarios that use it (scenarios/)
// are its use, not its cost. internal/checklist's TestChecklists counts
// this list.
//
// Everything else — the YAML and JSON Schema enums of scenario endpoints and
// fault endpoints, the app client's request paths, bodies and stream
// reading (ends, errors, and the answer ids and models at Recorded's
// paths), cassette keys, recorded answers, the explain report's words, the
// paths serve's and gateway's help lists, the built-in target's endpoints —
// reads the table.
package dialect

import (
	"net/url"
	"strings"
)

// Dialect is one model API. Its function fields are never nil.
type Dialect struct {
	// Name is the YAML and harness name: chat, responses, messages, gemini.
	Name string
	// Title names the dialect for people, in reports ("Anthropic Messages").
	Title string
	// Path is the URL path of its requests; when InPath, the pattern
	// "/v1beta/models/{model}:{method}" (see URLPath).
	Path string
	// InPath: the dialect names the model and the stream in the URL path,
	// not in the request body (Gemini).
	InPath bool
	// Route reports whether u is one of the dialect's model requests, and
	// what an InPath dialect's path says of it.
	Route func(u *url.URL) (Call, bool)
	// Parse classifies a request body: initial or follow-up, the tool
	// results it carries and their ids, the stream flag, the tools offered.
	// It never panics; a body that is not a JSON object is an error.
	Parse func(body []byte) (Request, error)
	// SetPrompt sets the fields of an app request body that carry prompt as
	// the user's message.
	SetPrompt func(body map[string]any, prompt string)
	// Conversation are the top-level fields of a request that hold the
	// conversation, in order, as a cassette keys it: an array field gives
	// one item per element, any other value one item named after the field.
	Conversation []string
	// Tools are the top-level fields of a request that hold the tool
	// definitions.
	Tools []string
	// CallIDPrefix begins the ids of the tool calls of its answers
	// (call_, toolu_, fc_), which carry the run token after it.
	CallIDPrefix string
	// Recorded says where a provider's answer names its id and its calls.
	Recorded Recorded
	// ErrorBody renders an error answer in the dialect's error shape.
	ErrorBody func(status int, message string) []byte
	// StreamError renders the dialect's in-stream error event.
	StreamError func(e StreamError) Event
	// Terminal reports whether a streamed event ends the answer: the event
	// a cut before the end (a tool_call drop) stops before.
	Terminal func(ev Event) bool
	// Ends reports whether a decoded stream chunk is the last one of a
	// whole answer, as the app client sees it (chat's end is the data
	// sentinel Done, not a chunk).
	Ends func(chunk map[string]any) bool
	// Sentinel is the data of the event that ends a stream when it is not
	// JSON: chat's Done; "" for a dialect whose last event is a chunk.
	Sentinel string
	// Failed reports whether a decoded stream chunk, sent as SSE event
	// event, is an in-stream error.
	Failed func(event string, chunk map[string]any) bool
}

// Sides is one package's own part of every dialect — the fake model's
// answer writer (fakes/upstream), the built-in gateway's endpoint
// (fakes/gateway) — as one method per dialect, named as the dialect's
// function here and written in that package's file of the dialect. Each
// row of the table names its method, so a package whose type lacks one
// does not compile; a package that has no part in a dialect says so with a
// method returning the zero value.
type Sides[T any] interface {
	Chat() T
	Responses() T
	Messages() T
	Gemini() T
}

// row is one row of the table: a dialect and the method of Sides that gives
// a package's part of it.
type row[T any] struct {
	dialect func() Dialect
	side    func(Sides[T]) T
}

// table is the one table of the dialects, in order; the first is the
// default of an app request naming none.
func table[T any]() []row[T] {
	return []row[T]{
		{Chat, Sides[T].Chat},
		{Responses, Sides[T].Responses},
		{Messages, Sides[T].Messages},
		{Gemini, Sides[T].Gemini},
	}
}

// All returns the dialects, keyed by their names, in the table's order;
// the first is the default of an app request naming none.
func All() []Dialect {
	rows := table[struct{}]()
	out := make([]Dialect, len(rows))
	for i, r := range rows {
		out[i] = r.dialect()
	}
	return out
}

// Paired is a dialect with one package's part of it.
type Paired[T any] struct {
	Dialect
	Side T
}

// Pair returns every dialect, in All's order, with s's part of it.
func Pair[T any](s Sides[T]) []Paired[T] {
	rows := table[T]()
	out := make([]Paired[T], len(rows))
	for i, r := range rows {
		out[i] = Paired[T]{r.dialect(), r.side(s)}
	}
	return out
}

// ByName returns the dialect named name.
func ByName(name string) (Dialect, bool) {
	for _, d := range All() {
		if d.Name == name {
			return d, true
		}
	}
	return Dialect{}, false
}

// Names returns the dialects' names, in table order.
func Names() []string {
	var out []string
	for _, d := range All() {
		out = append(out, d.Name)
	}
	return out
}

// URLPath returns the URL path of a request of d for model, streamed or
// not: Path, or for an InPath dialect its pattern filled in with the model
// and the method, GeminiGenerate or, streamed, GeminiStreamGenerate asking
// for server-sent events (?alt=sse).
func (d Dialect) URLPath(model string, stream bool) string {
	if !d.InPath {
		return d.Path
	}
	method := GeminiGenerate
	if stream {
		method = GeminiStreamGenerate + "?alt=sse"
	}
	return strings.NewReplacer("{model}", url.PathEscape(model), "{method}", method).Replace(d.Path)
}

// fixedRoute is the Route of a dialect whose requests all go to path.
func fixedRoute(path string) func(u *url.URL) (Call, bool) {
	return func(u *url.URL) (Call, bool) { return Call{}, u.Path == path }
}

// Call is what a request's path says of it, for an InPath dialect.
type Call struct {
	// Model is the model the path names; "" when the body names it.
	Model string
	// Stream is set when the path asks for a stream.
	Stream bool
	// Bad is the message of a request refused for its path; "" = served.
	Bad string
}

// Request is what a model request says, as Parse reads it.
type Request struct {
	Model        string
	Stream       bool
	IncludeUsage bool     // chat: stream_options.include_usage
	FollowUp     bool     // carries a tool result
	Rounds       int      // rounds of tool results carried
	ResultIDs    []string // ids of the tool calls whose results it carries
	// Results are the tool results it carries, in order, each with what
	// the client told the model about its call (see ToolResult).
	Results  []ToolResult
	Tools    []Tool   // tools the request offers
	Legacy   bool     // chat: tools offered as legacy "functions"
	UserText []string // user text, in order
}

// ToolResult is one tool result a follow-up carries: what the client told
// the model about one call.
type ToolResult struct {
	// CallID is the id of the call it answers; "" when it names none.
	CallID string
	// Round is the round of results it belongs to, from 1 (Request.Rounds
	// is the latest).
	Round int
	// Error is the dialect's error flag: Anthropic tool_result is_error,
	// a Gemini functionResponse whose response has an "error" key, a
	// Responses mcp_call with an error. Chat and Responses function
	// outputs have none (false).
	Error bool
	// Text is the result's text as the model reads it, at most
	// MaxResultText bytes (cut on a rune boundary): the content's text
	// parts joined by newlines; for Gemini the response's error, output or
	// result string, else the response object's JSON.
	Text string
}

// MaxResultText bounds ToolResult.Text, in bytes.
const MaxResultText = 4096

// Tool is one tool a request offers.
type Tool struct {
	Name      string
	Namespace string // responses: the namespace tool grouping it
	Custom    bool   // free-form input instead of JSON arguments
}

// Event is one streamed event: its SSE event name ("" = none) and data.
type Event struct {
	Name string
	Data []byte
	// Raw sends Data as it is, outside the event-stream format (Gemini's
	// error in the middle of a stream).
	Raw bool
}

// StreamError is an in-stream error to render, and where it goes.
type StreamError struct {
	// Type is the error type; "" = the dialect's default (see StreamError
	// of each dialect).
	Type string
	// Event picks the Responses event: StreamFailedEvent or
	// ResponsesErrorEvent ("" = StreamFailedEvent).
	Event string
	// Message returns the error message for the type in effect.
	Message func(typ string) string
	// Seq is the number of events sent before it (Responses
	// sequence_number); ID, Model and Created are those of the answer it
	// ends (ID "" = unknown).
	Seq     int
	ID      string
	Model   string
	Created int64
}

// Recorded are the gjson paths at which a provider's answer, plain or one
// event of a stream, names its id, its model and its tool calls' names.
type Recorded struct {
	ID, Model, Calls                   string
	StreamID, StreamModel, StreamCalls string
}

// errorType returns typ, or def when typ is "".
func errorType(typ, def string) string {
	if typ == "" {
		return def
	}
	return typ
}
