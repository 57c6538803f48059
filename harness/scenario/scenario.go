// Package scenario is the scenario file format: its Go types (from which
// `replaycheck schema` generates the JSON Schema), the strict loader with
// file:line:col errors, and the {{entry}}/{{token}} templating.
//
// A file holds one scenario (a mapping) or a list of them (a sequence), and
// may hold several YAML documents. For example:
//
//	name: chat follow-up 500 after tool ran
//	tags: [seed, non-stream]
//	request: {endpoint: chat, prompt: "Call commit_write once with entry {{entry}}, then reply done."}
//	model:   [{call: commit_write, arguments: {entry: "{{entry}}"}}, {say: done}]
//	faults:
//	  upstream: [{on: follow_up, respond: {status: 500}, times: always}]
//	expect:
//	  status: 500
//	  writes: 1
//	  upstream: {initial: 1, follow_up: 1}
//	  rules: [no-replay-after-dispatch, error-surfaces]
package scenario

import (
	"fmt"

	"github.com/invopop/jsonschema"

	"github.com/replaycheck/replaycheck/fakes/fault"
	"github.com/replaycheck/replaycheck/fakes/ledger"
	"github.com/replaycheck/replaycheck/fakes/upstream"
	"github.com/replaycheck/replaycheck/harness/history"
)

// DefaultPrompt is the prompt of a request that names none: the seed's.
const DefaultPrompt = "Call the commit_write tool exactly once with entry {{entry}}, then reply done."

// DefaultModelGroup is the model group a request asks for when it names none.
const DefaultModelGroup = "repro-model"

// Scenario is one scenario: the requests an app sends through the target, the
// fake model's script, the faults armed on the fakes, and what must be
// observed. Its zero values are the seed's defaults (one chat request, the
// seed's prompt and script, no faults).
type Scenario struct {
	// Name identifies the scenario in reports; unique within a suite.
	Name string `yaml:"name" json:"name" jsonschema:"minLength=1"`
	// Description says what the scenario shows, for people.
	Description string `yaml:"description,omitempty" json:"description,omitempty"`
	// Tags select scenarios (--tag) and say what they are about; a tag
	// bug:SWITCH names the gateway switch the scenario catches.
	Tags []string `yaml:"tags,omitempty" json:"tags,omitempty"`
	// Request is sugar for a single-element Requests.
	Request *Request `yaml:"request,omitempty" json:"request,omitempty"`
	// Requests are sent one after the other; at least one is required
	// (through Request or Requests).
	Requests []Request `yaml:"requests,omitempty" json:"requests,omitempty"`
	// Model is the fake model's script; empty is the seed's (call
	// commit_write with {{entry}}, then say done).
	Model upstream.Script `yaml:"model,omitempty" json:"model,omitempty"`
	// Faults are armed on the fakes for this scenario's run token only.
	Faults Faults `yaml:"faults,omitempty" json:"faults,omitempty"`
	// Annotations replace ledger tools' annotations (readOnlyHint,
	// idempotentHint, destructiveHint). They are global to a ledger, so a
	// scenario that sets them runs on fakes and a target of its own.
	Annotations map[string]ledger.Annotations `yaml:"annotations,omitempty" json:"annotations,omitempty"`
	// Gateway sets knobs of the built-in gateway target. A scenario that sets
	// any runs on fakes and a target of its own.
	Gateway *Gateway `yaml:"gateway,omitempty" json:"gateway,omitempty"`
	// Timeout bounds the whole scenario run; zero means the suite's --timeout.
	Timeout fault.Duration `yaml:"timeout,omitempty" json:"timeout,omitempty"`
	// Expect is what must be observed.
	Expect history.Expect `yaml:"expect" json:"expect"`

	// File and Line say where the scenario was loaded from.
	File string `yaml:"-" json:"-"`
	Line int    `yaml:"-" json:"-"`
}

// Request is one app request sent through the target.
type Request struct {
	// Endpoint is chat (/v1/chat/completions), responses (/v1/responses) or
	// messages (/v1/messages).
	Endpoint Endpoint `yaml:"endpoint" json:"endpoint"`
	// Stream asks for a streamed (SSE) answer.
	Stream bool `yaml:"stream,omitempty" json:"stream,omitempty"`
	// Prompt is the user's message; empty is DefaultPrompt. It may use
	// {{entry}} and {{token}}.
	Prompt string `yaml:"prompt,omitempty" json:"prompt,omitempty"`
	// Model is the model group asked for; empty is DefaultModelGroup.
	Model string `yaml:"model,omitempty" json:"model,omitempty"`
	// Body holds extra top-level body fields, for example
	// {guardrails: [block-mcp]}; they override the built ones.
	Body map[string]any `yaml:"body,omitempty" json:"body,omitempty"`
	// Headers are extra request headers.
	Headers map[string]string `yaml:"headers,omitempty" json:"headers,omitempty"`
}

// Faults are the faults armed for a scenario, on each fake.
type Faults struct {
	// Upstream faults act on the model API fake.
	Upstream []upstream.Fault `yaml:"upstream,omitempty" json:"upstream,omitempty"`
	// MCP faults act on the ledger MCP server.
	MCP []ledger.Fault `yaml:"mcp,omitempty" json:"mcp,omitempty"`
}

// Gateway holds knobs of the built-in gateway target that a scenario needs.
// Zero values keep the target's defaults.
type Gateway struct {
	// NumRetries is the router's retries per model group; nil keeps the
	// default (2), 0 means none.
	NumRetries *int `yaml:"num_retries,omitempty" json:"num_retries,omitempty" jsonschema:"minimum=0"`
	// Fallbacks maps a model group to the group tried after it, as in the
	// seed's config-stream.yaml ({repro-model: backup-model}).
	Fallbacks map[string]string `yaml:"fallbacks,omitempty" json:"fallbacks,omitempty"`
	// ToolTimeout bounds one MCP tool call.
	ToolTimeout fault.Duration `yaml:"tool_timeout,omitempty" json:"tool_timeout,omitempty"`
	// Isolated runs the scenario on a target of its own even without other
	// knobs, for state the target keeps across requests (a circuit breaker).
	Isolated bool `yaml:"isolated,omitempty" json:"isolated,omitempty"`
}

// Isolated reports whether the scenario needs fakes and a target of its own:
// it sets gateway knobs or annotations (global to a ledger), or arms MCP
// faults (a dropped, refused or slow call counts against a target's
// per-server circuit breaker, which concurrent scenarios would feel).
func (s *Scenario) Isolated() bool {
	return s.Gateway != nil || len(s.Annotations) > 0 || len(s.Faults.MCP) > 0
}

// AllRequests returns Request followed by Requests.
func (s *Scenario) AllRequests() []Request {
	var out []Request
	if s.Request != nil {
		out = append(out, *s.Request)
	}
	return append(out, s.Requests...)
}

// Script returns the scenario's model script, the seed's when it has none.
func (s *Scenario) Script() upstream.Script {
	if len(s.Model.Steps) == 0 {
		return upstream.DefaultScript()
	}
	return s.Model
}

// Endpoint is an app-facing API: chat, responses or messages.
type Endpoint string

// The endpoints.
const (
	Chat      Endpoint = "chat"
	Responses Endpoint = "responses"
	Messages  Endpoint = "messages"
)

// Endpoints returns the endpoints in a fixed order.
func Endpoints() []Endpoint { return []Endpoint{Chat, Responses, Messages} }

// Path returns the URL path of the endpoint.
func (e Endpoint) Path() string {
	switch e {
	case Responses:
		return "/v1/responses"
	case Messages:
		return "/v1/messages"
	default:
		return "/v1/chat/completions"
	}
}

// Valid reports whether e is a known endpoint.
func (e Endpoint) Valid() bool { return e == Chat || e == Responses || e == Messages }

// UnmarshalYAML reads an endpoint name and rejects unknown ones.
func (e *Endpoint) UnmarshalYAML(unmarshal func(any) error) error {
	var s string
	if err := unmarshal(&s); err != nil {
		return fmt.Errorf("endpoint: want chat, responses or messages")
	}
	if !Endpoint(s).Valid() {
		return fmt.Errorf("endpoint %q: want chat, responses or messages", s)
	}
	*e = Endpoint(s)
	return nil
}

// JSONSchema lists the endpoints.
func (Endpoint) JSONSchema() *jsonschema.Schema {
	return &jsonschema.Schema{Type: "string", Enum: []any{"chat", "responses", "messages"},
		Description: "chat (/v1/chat/completions), responses (/v1/responses) or messages (/v1/messages)"}
}
