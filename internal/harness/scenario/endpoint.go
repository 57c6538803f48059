package scenario

import (
	"fmt"
	"strings"

	"github.com/invopop/jsonschema"

	"github.com/replaycheck/replaycheck/internal/dialect"
)

// Endpoint is an app-facing API dialect: chat, responses, messages or
// gemini. It is the harness's name for a dialect of internal/dialect, whose
// table scenario validation, target files' bodies, the JSON Schema and the
// app requests the harness sends (internal/harness/target) all read; adding a
// dialect is internal/dialect's checklist.
type Endpoint string

// The endpoints.
const (
	Chat      Endpoint = "chat"
	Responses Endpoint = "responses"
	Messages  Endpoint = "messages"
	Gemini    Endpoint = "gemini"
)

// spec returns e's dialect; an unknown endpoint gets the default's (chat).
func (e Endpoint) spec() dialect.Dialect {
	if d, ok := dialect.ByName(string(e)); ok {
		return d
	}
	return dialect.All()[0]
}

// Endpoints returns the endpoints in a fixed order.
func Endpoints() []Endpoint {
	var out []Endpoint
	for _, name := range dialect.Names() {
		out = append(out, Endpoint(name))
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
// streamed or not (an unknown endpoint is chat), as Dialect.URLPath says.
func (e Endpoint) Path(model string, stream bool) string { return e.spec().URLPath(model, stream) }

// InPath reports whether the endpoint names the model and the stream in
// its URL path (Path), not in the request body.
func (e Endpoint) InPath() bool { return e.spec().InPath }

// SetPrompt sets the fields that carry prompt as the user's message on an
// app request body of the endpoint (an unknown one as chat).
func (e Endpoint) SetPrompt(body map[string]any, prompt string) { e.spec().SetPrompt(body, prompt) }

// Valid reports whether e is a known endpoint.
func (e Endpoint) Valid() bool {
	_, ok := dialect.ByName(string(e))
	return ok
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
	for _, d := range dialect.All() {
		enum = append(enum, d.Name)
		described = append(described, fmt.Sprintf("%s (%s)", d.Name, d.Path))
	}
	return &jsonschema.Schema{Type: "string", Enum: enum, Description: orList(described)}
}
