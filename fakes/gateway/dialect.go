package gateway

import (
	"context"
	"encoding/json"
	"maps"
	"net/http"
	"slices"
	"strings"

	api "github.com/replaycheck/replaycheck/internal/dialect"
)

// A dialect is one app-facing endpoint: how its requests are read and
// become an upstream conversation, and how the final model turn, its stream
// and errors are rendered for the app; the API's facts (paths, events) are
// internal/dialect's. The gateway reaches each one through endpoints, its
// part of internal/dialect's table. Adding an endpoint is the checklist in
// doc.go.
//
// Unlike the one-method interfaces elsewhere, a dialect has seven methods:
// they are one endpoint's wire shape and only make sense together.
type dialect interface {
	// parse reads the endpoint's own fields of an app request (its
	// conversation and the fields it forwards upstream) into req; every
	// problem is a *requestError.
	parse(req *appRequest, top map[string]json.RawMessage) error
	// tool renders the app's own tool t, tools[i] of the request (raw as
	// it came), as an upstream function tool; a tool the endpoint does not
	// take is a *requestError. The gateway's MCP server never comes here.
	tool(i int, t toolHead, raw json.RawMessage) (json.RawMessage, error)
	// conversation starts the upstream conversation for req.
	conversation(req *appRequest) conversation
	// answer renders the final model turn as this endpoint's answer body.
	answer(req *appRequest, final *modelTurn) ([]byte, error)
	// stream serves a streamed request: each model answer relayed live as
	// it comes (chat), or buffered until the final turn is complete and
	// rendered as the endpoint's events (g.serveBuffered).
	stream(ctx context.Context, g *Gateway, w http.ResponseWriter, rs *requestState)
	// errorCode is the value of error.code in this endpoint's error body.
	errorCode(status int) any
	// detail is how an upstream error shows in the app's error message.
	detail(e *upstreamError) string
}

// endpoints is the gateway's part of every dialect (api.Sides): each
// method, in the dialect's own file dialect_NAME.go, returns its endpoint;
// those below return nil, for the dialects the gateway does not serve.
type endpoints struct{}

// Gemini is not served: the gateway has no Gemini front end.
func (endpoints) Gemini() dialect { return nil }

// dialectTable maps the path of each dialect the gateway serves to its
// endpoint.
func dialectTable() map[string]dialect {
	table := map[string]dialect{}
	for _, p := range api.Pair[dialect](endpoints{}) {
		if p.Side != nil {
			table[p.Path] = p.Side
		}
	}
	return table
}

// Served returns the names of the dialects the gateway serves (the
// scenario endpoints it takes), in internal/dialect's order.
func Served() []string {
	var names []string
	for _, p := range api.Pair[dialect](endpoints{}) {
		if p.Side != nil {
			names = append(names, p.Name)
		}
	}
	return names
}

// ServedPaths lists the app-facing paths the gateway serves, in
// internal/dialect's order, as "a, b and c".
func ServedPaths() string {
	var paths []string
	for _, p := range api.Pair[dialect](endpoints{}) {
		if p.Side != nil {
			paths = append(paths, p.Path)
		}
	}
	last := len(paths) - 1
	return strings.Join(paths[:last], ", ") + " and " + paths[last]
}

// A conversation is the upstream side of one attempt: the model API it is
// sent to and the turns so far.
type conversation interface {
	// path is the model API path below the upstream base (which ends in
	// /v1), e.g. "/responses".
	path() string
	// body renders the next model API call.
	body(model string, tools []modelTool, stream bool) ([]byte, error)
	// parse reads a non-streamed model answer.
	parse(body []byte) (*modelTurn, error)
	// add appends the model's turn and the results of its tool calls.
	add(turn *modelTurn, results []toolResult)
}

// upstreamBody renders a model API call: the app's other request fields
// (extra, in name order) passed through, then model, the conversation so far
// under itemsKey, the gateway's tools as functions (fns) followed by the
// app's own function tools, and stream.
func upstreamBody(extra map[string]json.RawMessage, model, itemsKey string, items, fns, appTools []json.RawMessage, stream bool) []byte {
	fields := make([]jsonField, 0, len(extra)+4)
	for _, k := range slices.Sorted(maps.Keys(extra)) {
		fields = append(fields, jsonField{k, extra[k]})
	}
	fields = append(fields, jsonField{"model", quoted(model)}, jsonField{itemsKey, joinArray(items)})
	if tools := slices.Concat(fns, appTools); len(tools) > 0 {
		fields = append(fields, jsonField{"tools", joinArray(tools)})
	}
	if stream {
		fields = append(fields, jsonField{"stream", json.RawMessage("true")})
	}
	return joinObject(fields...)
}

// jsonField is one member of a JSON object being assembled: its name and its
// value, encoded already.
type jsonField struct {
	name  string
	value json.RawMessage
}

// joinObject assembles a JSON object from fields whose values are JSON
// already, in the order given; joinArray does the same for an array (nil
// renders null, as json.Marshal does). Model API calls are built this way:
// their pieces were checked when they were decoded or encoded (the app's
// fields and items, the model's turns, the tools' schemas), and json.Marshal
// of a map would sort it and compact and check each piece again on every
// round of the tool loop, which was the largest part of the gateway's own
// CPU time in BenchmarkChatRequest.
func joinObject(fields ...jsonField) json.RawMessage {
	size := 2
	for _, f := range fields {
		size += len(f.name) + len(f.value) + 4
	}
	b := make([]byte, 0, size)
	b = append(b, '{')
	for i, f := range fields {
		if i > 0 {
			b = append(b, ',')
		}
		b = appendQuoted(b, f.name)
		b = append(b, ':')
		b = append(b, f.value...)
	}
	return append(b, '}')
}

// quoted renders s as a JSON string.
func quoted(s string) json.RawMessage { return appendQuoted(nil, s) }

// appendQuoted appends s as a JSON string: as it is between quotes when it
// holds nothing to escape (the common case: names, ids), else as
// json.Marshal writes it.
func appendQuoted(b []byte, s string) []byte {
	for i := 0; i < len(s); i++ {
		if c := s[i]; c < 0x20 || c >= 0x80 || c == '"' || c == '\\' || c == '<' || c == '>' || c == '&' {
			return append(b, mustJSON(s)...)
		}
	}
	b = append(b, '"')
	b = append(b, s...)
	return append(b, '"')
}

func joinArray(items []json.RawMessage) json.RawMessage {
	if items == nil {
		return json.RawMessage("null")
	}
	size := 2
	for _, item := range items {
		size += len(item) + 1
	}
	b := make([]byte, 0, size)
	b = append(b, '[')
	for i, item := range items {
		if i > 0 {
			b = append(b, ',')
		}
		b = append(b, item...)
	}
	return append(b, ']')
}

// modelTurn is one model answer.
type modelTurn struct {
	// Raw is the whole non-streamed answer.
	Raw json.RawMessage
	// Calls are the tool calls the model asked for, in order.
	Calls []toolCall
	// Text is the answer's text.
	Text string
	// replay is what the conversation re-sends of this turn: the chat
	// assistant message, or the Responses output items.
	replay []json.RawMessage
	// events are the upstream's events of a streamed Responses answer.
	events []sseEvent
}

// toolCall is one function call the model asked for.
type toolCall struct {
	ID        string
	Name      string
	Arguments string
}

// toolResult is what the gateway tells the model about one tool call.
type toolResult struct {
	CallID string
	Output string
}

// modelTool is one MCP tool offered to the model as a function.
type modelTool struct {
	// Name is the function name the model sees: "<label>-<tool>".
	Name string
	// Tool is the MCP tool name.
	Tool        string
	Description string
	// Parameters is the tool's input schema without idempotency_key.
	Parameters map[string]any
	// schema is Parameters as JSON, rendered once when the tool is listed;
	// nil renders Parameters.
	schema json.RawMessage
	// Keyed is set when the tool takes an idempotency_key the gateway fills.
	Keyed bool
}

// parameters is the input schema as it goes into a model API call. A listed
// tool is shared by every request of its session and never modified.
func (t *modelTool) parameters() json.RawMessage {
	if t.schema != nil {
		return t.schema
	}
	return mustJSON(t.Parameters)
}

// belowV1 is a model API path below an upstream base ending in /v1.
func belowV1(path string) string { return strings.TrimPrefix(path, "/v1") }
