package history

import (
	"encoding/json"
	"fmt"
	"sort"
	"strconv"

	"github.com/invopop/jsonschema"
)

// Expect is what a scenario expects of a run: plain counts, and the replay
// rules (by name) that must hold. A nil count is not checked.
type Expect struct {
	// Status is the HTTP status every client request must get.
	Status *int `yaml:"status,omitempty" json:"status,omitempty" jsonschema:"minimum=100,maximum=599" jsonschema_description:"HTTP status every client request must get"`
	// Writes is the number of ledger writes executed.
	Writes *int `yaml:"writes,omitempty" json:"writes,omitempty" jsonschema:"minimum=0" jsonschema_description:"ledger writes executed"`
	// Keys is the number of distinct idempotency keys the ledger saw.
	Keys *int `yaml:"keys,omitempty" json:"keys,omitempty" jsonschema:"minimum=0" jsonschema_description:"distinct idempotency keys the ledger saw"`
	// Cancellations is the number of tool calls the ledger saw cancelled.
	Cancellations *int `yaml:"cancellations,omitempty" json:"cancellations,omitempty" jsonschema:"minimum=0" jsonschema_description:"tool calls the ledger saw cancelled"`
	// Upstream counts upstream requests by kind ("initial", "follow_up") or
	// by kind and outcome ("follow_up injected_500").
	Upstream map[string]int `yaml:"upstream,omitempty" json:"upstream,omitempty" jsonschema_description:"upstream requests by kind (initial, follow_up, any) or kind and outcome, e.g. follow_up injected_500"`
	// MCP counts what reached the ledger server.
	MCP *MCPExpect `yaml:"mcp,omitempty" json:"mcp,omitempty" jsonschema_description:"what reached the ledger MCP server"`
	// DataChunks and ErrorEvents count SSE events across the client's
	// streamed answers.
	DataChunks  *int `yaml:"data_chunks,omitempty" json:"data_chunks,omitempty" jsonschema:"minimum=0" jsonschema_description:"SSE data chunks across the streamed answers"`
	ErrorEvents *int `yaml:"error_events,omitempty" json:"error_events,omitempty" jsonschema:"minimum=0" jsonschema_description:"SSE error events across the streamed answers"`
	// MaxAttempts is the attempt cap that bounded-attempts checks: the most
	// upstream requests of one kind a single client request may cause. When
	// unset, the target's num_retries+1 (times two with a fallback) is used.
	MaxAttempts *int `yaml:"max_attempts,omitempty" json:"max_attempts,omitempty" jsonschema:"minimum=1" jsonschema_description:"attempt cap for bounded-attempts (default the target's num_retries+1)"`
	// Client is what a client target's command must do; it cannot be judged
	// (unknown) on other targets, which skip scenarios that set it.
	Client *ClientExpect `yaml:"client,omitempty" json:"client,omitempty" jsonschema_description:"exit code and output of a client target's command; scenarios that set it run on client targets only"`
	// Rules are the replay rules that must hold.
	Rules []string `yaml:"rules,omitempty" json:"rules,omitempty" jsonschema_description:"replay rules that must hold (see replaycheck rules)"`
}

// MCPExpect counts what reached the ledger server.
type MCPExpect struct {
	// Calls is the number of tools/call requests the server received: a
	// number for all tools, or a map from tool name to number.
	Calls *CallCount `yaml:"calls,omitempty" json:"calls,omitempty" jsonschema_description:"tools/call requests received: a number, or a map from tool name to number"`
}

// CallCount is a number of tools/call requests, either in total or per tool.
// In YAML and JSON it is a number (`calls: 1`) or a map (`calls:
// {commit_write: 1, read_ledger: 1}`).
type CallCount struct {
	// Total, when PerTool is nil, is the number of calls to any tool.
	Total int
	// PerTool, when not nil, is the number of calls per tool name.
	PerTool map[string]int
}

// MarshalJSON writes a number or a map.
func (c CallCount) MarshalJSON() ([]byte, error) {
	if c.PerTool != nil {
		return json.Marshal(c.PerTool)
	}
	return json.Marshal(c.Total)
}

// UnmarshalJSON reads a number or a map.
func (c *CallCount) UnmarshalJSON(b []byte) error {
	var v any
	if err := json.Unmarshal(b, &v); err != nil {
		return err
	}
	return c.fromValue(v)
}

// UnmarshalYAML reads a number or a map (github.com/goccy/go-yaml).
func (c *CallCount) UnmarshalYAML(unmarshal func(any) error) error {
	var v any
	if err := unmarshal(&v); err != nil {
		return err
	}
	return c.fromValue(v)
}

func (c *CallCount) fromValue(v any) error {
	if n, ok := count(v); ok {
		*c = CallCount{Total: n}
		return nil
	}
	m, ok := v.(map[string]any)
	if !ok {
		return fmt.Errorf("calls: want a count or a map from tool name to count, got %v", v)
	}
	per := make(map[string]int, len(m))
	for tool, x := range m {
		n, ok := count(x)
		if !ok {
			return fmt.Errorf("calls of %s: want a count of at least 0, got %v", tool, x)
		}
		per[tool] = n
	}
	*c = CallCount{PerTool: per}
	return nil
}

// JSONSchema describes the number-or-map form.
func (CallCount) JSONSchema() *jsonschema.Schema {
	return &jsonschema.Schema{
		OneOf: []*jsonschema.Schema{
			{Type: "integer", Minimum: json.Number("0")},
			{Type: "object", AdditionalProperties: &jsonschema.Schema{Type: "integer", Minimum: json.Number("0")}},
		},
		Description: "tools/call requests received: a number for all tools, or a map from tool name to number",
	}
}

// String renders the count for messages.
func (c CallCount) String() string {
	if c.PerTool == nil {
		return strconv.Itoa(c.Total)
	}
	tools := make([]string, 0, len(c.PerTool))
	for t := range c.PerTool {
		tools = append(tools, t)
	}
	sort.Strings(tools)
	s := ""
	for i, t := range tools {
		if i > 0 {
			s += ", "
		}
		s += fmt.Sprintf("%s %d", t, c.PerTool[t])
	}
	return s
}

func count(v any) (int, bool) {
	switch x := v.(type) {
	case int:
		return x, x >= 0
	case int64:
		return int(x), x >= 0
	case uint64:
		return int(x), true
	case float64:
		if x != float64(int(x)) || x < 0 {
			return 0, false
		}
		return int(x), true
	}
	return 0, false
}

// ClientExpect is what a client target's command must do in every run.
type ClientExpect struct {
	// Exit is the exit code: zero, nonzero or a number.
	Exit *ExitCode `yaml:"exit,omitempty" json:"exit,omitempty" jsonschema_description:"exit code: zero, nonzero or a number"`
	// StdoutContains and StderrContains are texts the output must contain.
	StdoutContains string `yaml:"stdout_contains,omitempty" json:"stdout_contains,omitempty" jsonschema_description:"text the client's stdout must contain"`
	StderrContains string `yaml:"stderr_contains,omitempty" json:"stderr_contains,omitempty" jsonschema_description:"text the client's stderr must contain"`
}

// ExitCode is an expected exit code: "zero", "nonzero" or a number. The zero
// value is "zero".
type ExitCode struct {
	// Nonzero, when true, accepts any code but 0; otherwise Code must match.
	Nonzero bool
	// Code is the exact code when Nonzero is false.
	Code int
}

// Match reports whether code is the expected one.
func (e ExitCode) Match(code int) bool {
	if e.Nonzero {
		return code != 0
	}
	return code == e.Code
}

// String renders "zero", "nonzero" or the number.
func (e ExitCode) String() string {
	switch {
	case e.Nonzero:
		return "nonzero"
	case e.Code == 0:
		return "zero"
	}
	return strconv.Itoa(e.Code)
}

// MarshalJSON writes "zero", "nonzero" or the number.
func (e ExitCode) MarshalJSON() ([]byte, error) {
	if e.Nonzero || e.Code == 0 {
		return json.Marshal(e.String())
	}
	return json.Marshal(e.Code)
}

// UnmarshalJSON reads "zero", "nonzero" or a number.
func (e *ExitCode) UnmarshalJSON(b []byte) error {
	var v any
	if err := json.Unmarshal(b, &v); err != nil {
		return err
	}
	return e.fromValue(v)
}

// UnmarshalYAML reads zero, nonzero or a number (github.com/goccy/go-yaml).
func (e *ExitCode) UnmarshalYAML(unmarshal func(any) error) error {
	var v any
	if err := unmarshal(&v); err != nil {
		return err
	}
	return e.fromValue(v)
}

func (e *ExitCode) fromValue(v any) error {
	switch x := v.(type) {
	case string:
		switch x {
		case "zero":
			*e = ExitCode{}
			return nil
		case "nonzero":
			*e = ExitCode{Nonzero: true}
			return nil
		}
	default:
		if n, ok := count(v); ok && n <= 255 {
			*e = ExitCode{Code: n}
			return nil
		}
	}
	return fmt.Errorf("exit: want zero, nonzero or a number from 0 to 255, got %v", v)
}

// JSONSchema describes the zero/nonzero/number form.
func (ExitCode) JSONSchema() *jsonschema.Schema {
	return &jsonschema.Schema{
		OneOf: []*jsonschema.Schema{
			{Type: "string", Enum: []any{"zero", "nonzero"}},
			{Type: "integer", Minimum: json.Number("0"), Maximum: json.Number("255")},
		},
		Description: "exit code: zero, nonzero or a number",
	}
}
