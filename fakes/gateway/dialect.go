package gateway

import (
	"encoding/json"
)

// A dialect is one app-facing endpoint: how its requests become an upstream
// conversation and how the final model turn and errors are rendered for the
// app. Adding an endpoint is one new file with a dialect plus one row in
// dialectTable.
//
// Unlike the one-method interfaces elsewhere, a dialect has four methods:
// the four are one endpoint's wire shape and only make sense together.
type dialect interface {
	// conversation starts the upstream conversation for req.
	conversation(req *appRequest) conversation
	// answer renders the final model turn as this endpoint's answer body.
	answer(req *appRequest, final *modelTurn) ([]byte, error)
	// errorCode is the value of error.code in this endpoint's error body.
	errorCode(status int) any
	// detail is how an upstream error shows in the app's error message.
	detail(e *upstreamError) string
}

// route is one row of dialectTable.
type route struct {
	name string
	d    dialect
}

// dialectTable maps an app-facing path to its endpoint name and dialect.
func dialectTable() map[string]route {
	return map[string]route{
		"/v1/chat/completions": {EndpointChat, chatDialect{}},
		"/v1/responses":        {EndpointResponses, responsesDialect{}},
		"/v1/messages":         {EndpointMessages, messagesDialect{}},
	}
}

// A conversation is the upstream side of one attempt: the model API it is
// sent to and the turns so far.
type conversation interface {
	// path is the model API path below the upstream base, e.g. "/responses".
	path() string
	// body renders the next model API call.
	body(model string, tools []modelTool, stream bool) ([]byte, error)
	// parse reads a non-streamed model answer.
	parse(body []byte) (*modelTurn, error)
	// add appends the model's turn and the results of its tool calls.
	add(turn *modelTurn, results []toolResult)
}

// upstreamBody renders a model API call: the app's other request fields
// (extra) passed through, then model, the conversation so far under
// itemsKey, the gateway's tools as functions (fns) followed by the app's own
// function tools, and stream.
func upstreamBody(extra map[string]json.RawMessage, model, itemsKey string, items []json.RawMessage, fns []any, appTools []json.RawMessage, stream bool) ([]byte, error) {
	body := make(map[string]any, len(extra)+4)
	for k, v := range extra {
		body[k] = v
	}
	body["model"] = model
	body[itemsKey] = items
	for _, t := range appTools {
		fns = append(fns, t)
	}
	if len(fns) > 0 {
		body["tools"] = fns
	}
	if stream {
		body["stream"] = true
	}
	return json.Marshal(body)
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
func (t *modelTool) parameters() any {
	if t.schema != nil {
		return t.schema
	}
	return t.Parameters
}
