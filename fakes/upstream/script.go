package upstream

import (
	"encoding/json"
	"fmt"
	"maps"
	"slices"
	"strconv"
	"strings"
	"sync"

	"github.com/goccy/go-yaml"
	"github.com/invopop/jsonschema"

	"github.com/replaycheck/replaycheck/internal/yamlfile"
)

// Script is what the fake model answers, one run at a time. In YAML and JSON
// it is a list of steps, for example
//
//	[{call: commit_write, arguments: {entry: "alpha-rc0123456789"}}, {say: done}]
//
// An initial request is answered with the first group of consecutive call
// steps (parallel tool calls in one answer); a follow-up that carries k
// rounds of tool results gets group k+1 (or, when it answers calls whose ids
// the fake minted, the group after theirs — so a Responses follow-up with
// previous_response_id, which carries only the latest round, advances too);
// when no group is left, the say text ("done" when the script has none). A string argument may contain
// {{entry}}, replaced by the entry the request's prompt names ("…with entry
// alpha…" gives alpha), and {{token}}, replaced by the run token. The zero
// Script is the seed's default: call commit_write once with entry {{entry}},
// then say done.
type Script struct {
	// Steps are the script's steps in order.
	Steps []Step
}

// Step is one step of a Script: exactly one of Call (with optional
// Arguments) or Say.
type Step struct {
	// Call is the name of the tool to call. It matches the offered tool
	// named Call exactly (or "namespace.name" for a tool of a Responses
	// namespace tool, whose own name also matches exactly); failing that, a
	// tool whose name ends in Call after a non-empty prefix ending in "-",
	// ".", "/", ":" or "__", or in a single "_" when Call itself contains
	// "_" (ledger-commit_write, mcp__ledger__commit_write,
	// ledger_commit_write; not commit_write_keyed, and write does not match
	// commit_write). Two tools matching equally is an error answered 400; a
	// call that matches no tool is left out of the answer and recorded.
	Call string `json:"call,omitempty" yaml:"call,omitempty" jsonschema_description:"tool to call. Matches the offered tool of exactly this name (also a Responses namespace tool's inner tool, or namespace.name); failing that, one whose name ends in it after a prefix ending in -, ., /, : or __ (ledger-commit_write, ledger.commit_write, mcp__ledger__commit_write), or in a single _ when the call itself contains _ (ledger_commit_write, mcp_ledger_commit_write; write does not match commit_write). Never a longer name (commit_write does not match commit_write_keyed). When two offered tools match equally the request is answered 400 naming both (name one exactly to choose); a call no offered tool matches is left out of the answer and recorded as unmatched"`
	// Arguments are the call's arguments, sent as a JSON object.
	Arguments map[string]any `json:"arguments,omitempty" yaml:"arguments,omitempty" jsonschema_description:"arguments of the call; string values may use {{entry}} and {{token}}"`
	// Say is the final text of the answer once no tool call is left.
	Say string `json:"say,omitempty" yaml:"say,omitempty" jsonschema_description:"final text answered when no tool call is left"`
}

// DefaultScript returns the seed's script: call commit_write with the entry
// the prompt names, then answer done.
func DefaultScript() Script {
	return Script{Steps: []Step{
		{Call: "commit_write", Arguments: map[string]any{"entry": "{{entry}}"}},
		{Say: "done"},
	}}
}

// ParseScript decodes a script from strict YAML (JSON is YAML too). Errors
// name the line and column.
func ParseScript(b []byte) (Script, error) {
	var s Script
	if err := yamlfile.CheckNesting("script", b); err != nil {
		return Script{}, err
	}
	if err := yaml.UnmarshalWithOptions(b, &s, yaml.Strict()); err != nil {
		// The YAML error already carries its line:column and source excerpt.
		return Script{}, fmt.Errorf("parsing script (a list of steps such as [{call: commit_write, arguments: {entry: \"{{entry}}\"}}, {say: done}]): %w", err)
	}
	if err := s.Validate(); err != nil {
		return Script{}, fmt.Errorf("parsing script: %w", err)
	}
	return s, nil
}

// Validate reports the first step that is not exactly one of call or say.
func (s Script) Validate() error {
	for i, st := range s.Steps {
		switch {
		case st.Call == "" && st.Say == "":
			return fmt.Errorf("steps[%d]: want call or say", i)
		case st.Call != "" && st.Say != "":
			return fmt.Errorf("steps[%d]: call and say are exclusive", i)
		case st.Say != "" && st.Arguments != nil:
			return fmt.Errorf("steps[%d].arguments: only a call takes arguments", i)
		}
	}
	return nil
}

// Fill returns a copy of s with f applied to every string in it: calls, say
// texts, and argument keys and string values at any depth; it shares no map
// or list with s. Of two keys f makes one, the later in sorted order wins.
// An argument value JSON cannot encode (NaN, ±Inf) is an error: the fake
// sends the arguments as a JSON object.
func (s Script) Fill(f func(string) string) (Script, error) {
	steps := make([]Step, len(s.Steps))
	for i, st := range s.Steps {
		steps[i] = Step{Call: f(st.Call), Say: f(st.Say)}
		if len(st.Arguments) == 0 {
			continue
		}
		args, err := fillValue(st.Arguments, f)
		if err != nil {
			return Script{}, fmt.Errorf("steps[%d].arguments: %w", i, err)
		}
		steps[i].Arguments = args.(map[string]any)
	}
	return Script{Steps: steps}, nil
}

// fillValue returns v with f applied to its strings, as Fill does.
func fillValue(v any, f func(string) string) (any, error) {
	switch x := v.(type) {
	case string:
		return f(x), nil
	case map[string]any:
		out := make(map[string]any, len(x))
		for _, k := range slices.Sorted(maps.Keys(x)) {
			e, err := fillValue(x[k], f)
			if err != nil {
				return nil, err
			}
			out[f(k)] = e
		}
		return out, nil
	case []any:
		out := make([]any, len(x))
		for i, e := range x {
			var err error
			if out[i], err = fillValue(e, f); err != nil {
				return nil, err
			}
		}
		return out, nil
	}
	if _, err := json.Marshal(v); err != nil {
		return nil, err
	}
	return v, nil
}

// MarshalJSON writes the script as its list of steps.
func (s Script) MarshalJSON() ([]byte, error) {
	if s.Steps == nil {
		return []byte("[]"), nil
	}
	return json.Marshal(s.Steps)
}

// UnmarshalJSON reads a list of steps.
func (s *Script) UnmarshalJSON(b []byte) error {
	var steps []Step
	dec := json.NewDecoder(strings.NewReader(string(b)))
	dec.DisallowUnknownFields()
	if err := dec.Decode(&steps); err != nil {
		return fmt.Errorf("script: want a list of steps: %w", err)
	}
	s.Steps = steps
	return nil
}

// MarshalYAML writes the script as its list of steps.
func (s Script) MarshalYAML() (any, error) { return s.Steps, nil }

// UnmarshalYAML reads a list of steps (github.com/goccy/go-yaml).
func (s *Script) UnmarshalYAML(unmarshal func(any) error) error {
	var steps []Step
	if err := unmarshal(&steps); err != nil {
		return err
	}
	s.Steps = steps
	return nil
}

// turn is what the script answers to a request that carries rounds rounds of
// tool results: the call group for that round, or the final text.
func (s *Script) turn(rounds int) (calls []Step, say string) {
	steps := s.Steps
	if len(steps) == 0 {
		steps = defaultSteps
	}
	say = "done"
	group := 0
	for i := 0; i < len(steps); {
		if steps[i].Call == "" {
			say = steps[i].Say
			i++
			continue
		}
		j := i
		for j < len(steps) && steps[j].Call != "" {
			j++
		}
		if group == rounds && calls == nil {
			calls = steps[i:j]
		}
		group++
		i = j
	}
	return calls, say
}

var defaultSteps = DefaultScript().Steps

// promptEntry returns the entry a prompt names ("…with entry alpha…" gives
// alpha; a quote after "entry" is skipped), the last one when it names
// several, or "" when none.
func promptEntry(text string) string {
	found := ""
	for i := 0; i+len("entry") <= len(text); i++ {
		if text[i]|0x20 != 'e' || !strings.EqualFold(text[i:i+len("entry")], "entry") {
			continue
		}
		if i > 0 && isWordByte(text[i-1]) {
			continue
		}
		j := i + len("entry")
		k := j
		for k < len(text) && (text[k] == ' ' || text[k] == '\t' || text[k] == '\n') {
			k++
		}
		if k == j {
			continue
		}
		if k < len(text) && (text[k] == '"' || text[k] == '\'' || text[k] == '`') {
			k++
		}
		start := k
		for k < len(text) && (isWordByte(text[k]) || k > start && text[k] == '-') {
			k++
		}
		if k > start {
			found = text[start:k]
		}
	}
	return found
}

func isWordByte(c byte) bool {
	return c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9' || c == '_'
}

// argCache keeps the rendered arguments of script steps, keyed by step,
// entry and token, so a run's repeated requests do not render them again.
// It is cleared when it grows past maxCachedArgs entries.
type argCache struct {
	mu sync.Mutex
	m  map[argKey]renderedArgs
}

// renderedArgs are a step's arguments as a JSON object and, quoted, as a
// JSON string (the form chat and responses answers carry).
type renderedArgs struct {
	json, quoted string
}

type argKey struct {
	step         *Step
	entry, token string
}

const maxCachedArgs = 4096

// render returns the step's arguments ("{}" if they cannot be encoded).
func (c *argCache) render(st *Step, entry, token string) renderedArgs {
	k := argKey{st, entry, token}
	c.mu.Lock()
	v, ok := c.m[k]
	c.mu.Unlock()
	if ok {
		return v
	}
	j, err := renderArguments(st.Arguments, entry, token)
	if err != nil {
		j = "{}"
	}
	v = renderedArgs{json: j, quoted: string(appendJSONString(nil, j))}
	c.mu.Lock()
	if c.m == nil || len(c.m) >= maxCachedArgs {
		c.m = make(map[argKey]renderedArgs)
	}
	c.m[k] = v
	c.mu.Unlock()
	return v
}

// renderArguments returns args as a JSON object, keys sorted, with
// {{entry}} and {{token}} replaced in string values.
func renderArguments(args map[string]any, entry, token string) (string, error) {
	if len(args) == 0 {
		return "{}", nil
	}
	b, err := appendValue(make([]byte, 0, 512), args, entry, token)
	if err != nil {
		return "", fmt.Errorf("encoding arguments: %w", err)
	}
	return string(b), nil
}

// appendValue appends v as JSON, expanding placeholders in strings; values
// other than strings, maps, lists, booleans and nil go through encoding/json.
func appendValue(b []byte, v any, entry, token string) ([]byte, error) {
	switch x := v.(type) {
	case string:
		return appendJSONString(b, expand(x, entry, token).(string)), nil
	case bool:
		return strconv.AppendBool(b, x), nil
	case nil:
		return append(b, "null"...), nil
	case map[string]any:
		keys := make([]string, 0, len(x))
		for k := range x {
			keys = append(keys, k)
		}
		slices.Sort(keys)
		b = append(b, '{')
		for i, k := range keys {
			if i > 0 {
				b = append(b, ',')
			}
			b = appendJSONString(b, k)
			b = append(b, ':')
			var err error
			if b, err = appendValue(b, x[k], entry, token); err != nil {
				return b, err
			}
		}
		return append(b, '}'), nil
	case []any:
		b = append(b, '[')
		for i, e := range x {
			if i > 0 {
				b = append(b, ',')
			}
			var err error
			if b, err = appendValue(b, e, entry, token); err != nil {
				return b, err
			}
		}
		return append(b, ']'), nil
	default:
		j, err := json.Marshal(expand(v, entry, token))
		if err != nil {
			return b, err
		}
		return append(b, j...), nil
	}
}

func expand(v any, entry, token string) any {
	switch x := v.(type) {
	case string:
		if strings.Contains(x, "{{") {
			x = strings.ReplaceAll(x, "{{entry}}", entry)
			x = strings.ReplaceAll(x, "{{token}}", token)
		}
		return x
	case map[string]any:
		out := make(map[string]any, len(x))
		for k, e := range x {
			out[k] = expand(e, entry, token)
		}
		return out
	case []any:
		out := make([]any, len(x))
		for i, e := range x {
			out[i] = expand(e, entry, token)
		}
		return out
	default:
		return v
	}
}

// JSONSchema describes a Script as what it is in YAML and JSON: a list of
// steps (github.com/invopop/jsonschema).
func (Script) JSONSchema() *jsonschema.Schema {
	step := (&jsonschema.Reflector{DoNotReference: true, ExpandedStruct: true, AllowAdditionalProperties: false}).Reflect(&Step{})
	step.Version = ""
	step.ID = ""
	return &jsonschema.Schema{
		Type:        "array",
		Description: "the fake model's script: call steps (consecutive ones form one answer) and say steps",
		Items:       step,
	}
}
