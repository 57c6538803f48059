package upstream

import (
	"github.com/tidwall/gjson"

	"github.com/replaycheck/replaycheck/fakes/upstream/cassette"
)

// RecordedCalls returns the names of the tool calls a recorded answer
// makes, in order, as the provider named them (the names the client
// offered); nil for an answer without calls, an error answer, or a dialect
// the fake does not know.
func RecordedCalls(e *cassette.Entry) []string {
	_, calls := recordedAnswer(e.Request.Dialect, &e.Answer)
	return calls
}

// recordedAnswer reads a recorded answer of dialect: its response id (the
// first one a stream names) and the names of its tool calls. It is one
// function rather than a method of each dialect because it reads only
// what providers wrote, in a few gjson paths per dialect.
func recordedAnswer(dialect string, a *cassette.Answer) (id string, calls []string) {
	if a.Status != 200 {
		return "", nil
	}
	// Paths in one JSON document: the answer's id, and the names of its
	// calls (gjson queries giving an array, or one name).
	var idPath, callsPath string
	switch dialect {
	case "chat":
		idPath = "id"
		callsPath = "choices.0.message.tool_calls.#.function.name"
		if a.Stream() {
			// A call's name arrives with its first chunk only.
			callsPath = "choices.0.delta.tool_calls.#.function.name"
		}
	case "responses":
		idPath = "id"
		callsPath = `output.#(type=="function_call")#.name`
		if a.Stream() {
			// The id in response.created and the calls in
			// response.completed; other events have no "response".
			idPath = "response.id"
			callsPath = `response.output.#(type=="function_call")#.name`
		}
	case "messages":
		idPath = "id"
		callsPath = `content.#(type=="tool_use")#.name`
		if a.Stream() {
			idPath = "message.id"
			callsPath = `[content_block]|#(type=="tool_use")#.name`
		}
	case "gemini":
		// Each streamed chunk is a whole response: its calls are its own.
		idPath = "responseId"
		callsPath = "candidates.0.content.parts.#.functionCall.name"
	default:
		return "", nil
	}
	read := func(doc string) {
		if !gjson.Valid(doc) {
			return
		}
		if id == "" {
			id = gjson.Get(doc, idPath).String()
		}
		gjson.Get(doc, callsPath).ForEach(func(_, v gjson.Result) bool {
			if v.Str != "" {
				calls = append(calls, v.Str)
			}
			return true
		})
	}
	if !a.Stream() {
		read(a.Body)
		return id, calls
	}
	for _, ev := range a.Events {
		read(ev.Data)
	}
	return id, calls
}
