package scenario

import (
	"fmt"
	"net/url"
	"strings"

	"github.com/invopop/jsonschema"
)

// Endpoint is an app-facing API dialect: chat, responses, messages or
// gemini. It is
// the harness's one name for a dialect: scenario validation, target files'
// bodies, the JSON Schema and the app requests the harness sends
// (harness/target) all read the endpoints table.
//
// Adding a dialect on the harness side is one row in endpoints; the fakes
// keep tables of their own (they must not import the harness), and the doc
// of dialectTable in fakes/upstream and fakes/gateway lists every file a new
// dialect touches.
type Endpoint string

// The endpoints.
const (
	Chat      Endpoint = "chat"
	Responses Endpoint = "responses"
	Messages  Endpoint = "messages"
	Gemini    Endpoint = "gemini"
)

// endpointSpec is one row of the endpoints table.
type endpointSpec struct {
	name Endpoint
	// path is the URL path app requests of this dialect go to; with
	// inPath, a pattern naming {model} and {method}.
	path string
	// prompt sets the fields that carry a user prompt on an app request
	// body of this dialect.
	prompt func(body map[string]any, prompt string)
	// inPath: the dialect names the model and the stream in the URL path
	// (Gemini's /v1beta/models/{model}:{method}), not in the body.
	inPath bool
}

// endpoints is the table of endpoints, keyed by their YAML names, in the
// order they are listed; the first is the default (see AllRequests).
func endpoints() []endpointSpec {
	return []endpointSpec{
		{Chat, "/v1/chat/completions", userMessage, false},
		{Responses, "/v1/responses", func(body map[string]any, prompt string) { body["input"] = prompt }, false},
		{Messages, "/v1/messages", func(body map[string]any, prompt string) {
			body["max_tokens"] = 1024
			userMessage(body, prompt)
		}, false},
		{Gemini, "/v1beta/models/{model}:{method}", func(body map[string]any, prompt string) {
			body["contents"] = []any{map[string]any{"role": "user", "parts": []any{map[string]any{"text": prompt}}}}
		}, true},
	}
}

// userMessage sets messages to one user message holding prompt.
func userMessage(body map[string]any, prompt string) {
	body["messages"] = []any{map[string]any{"role": "user", "content": prompt}}
}

// spec returns e's row; an unknown endpoint gets the default's (chat).
func (e Endpoint) spec() endpointSpec {
	all := endpoints()
	for _, s := range all {
		if s.name == e {
			return s
		}
	}
	return all[0]
}

// Endpoints returns the endpoints in a fixed order.
func Endpoints() []Endpoint {
	var out []Endpoint
	for _, s := range endpoints() {
		out = append(out, s.name)
	}
	return out
}

// EndpointNames lists the endpoints for messages: "chat, responses,
// messages or gemini".
func EndpointNames() string {
	var names []string
	for _, e := range Endpoints() {
		names = append(names, string(e))
	}
	return orList(names)
}

// orList joins items as "a, b or c".
func orList(items []string) string {
	if len(items) < 2 {
		return strings.Join(items, "")
	}
	last := len(items) - 1
	return strings.Join(items[:last], ", ") + " or " + items[last]
}

// Path returns the URL path of a request of the endpoint for model,
// streamed or not (an unknown endpoint is chat): the fixed path of chat,
// responses and messages; for gemini /v1beta/models/MODEL:generateContent,
// or :streamGenerateContent?alt=sse streamed.
func (e Endpoint) Path(model string, stream bool) string {
	s := e.spec()
	if !s.inPath {
		return s.path
	}
	method := "generateContent"
	if stream {
		method = "streamGenerateContent?alt=sse"
	}
	return strings.NewReplacer("{model}", url.PathEscape(model), "{method}", method).Replace(s.path)
}

// InPath reports whether the endpoint names the model and the stream in
// its URL path (Path), not in the request body.
func (e Endpoint) InPath() bool { return e.spec().inPath }

// SetPrompt sets the fields that carry prompt as the user's message on an
// app request body of the endpoint (an unknown one as chat).
func (e Endpoint) SetPrompt(body map[string]any, prompt string) { e.spec().prompt(body, prompt) }

// Valid reports whether e is a known endpoint.
func (e Endpoint) Valid() bool {
	for _, s := range endpoints() {
		if s.name == e {
			return true
		}
	}
	return false
}

// UnmarshalYAML reads an endpoint name and rejects unknown ones.
func (e *Endpoint) UnmarshalYAML(unmarshal func(any) error) error {
	var s string
	if err := unmarshal(&s); err != nil {
		return fmt.Errorf("endpoint: want %s", EndpointNames())
	}
	if !Endpoint(s).Valid() {
		return fmt.Errorf("endpoint %q: want %s", s, EndpointNames())
	}
	*e = Endpoint(s)
	return nil
}

// JSONSchema lists the endpoints.
func (Endpoint) JSONSchema() *jsonschema.Schema {
	var enum []any
	var described []string
	for _, s := range endpoints() {
		enum = append(enum, string(s.name))
		described = append(described, fmt.Sprintf("%s (%s)", s.name, s.path))
	}
	return &jsonschema.Schema{Type: "string", Enum: enum, Description: orList(described)}
}
