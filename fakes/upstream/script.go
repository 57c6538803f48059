package upstream

import (
	"encoding/json"
	"fmt"
	"maps"
	"regexp"
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
//
// A call step with again_if_failed: N makes the model ask again: when a
// follow-up's latest round of results reports that a call the fake made
// for the step failed (the dialect's error flag, or a text matching the
// step's failed_if, DefaultFailedIf when unset), unless its text says the
// outcome is unknown (unknown_if, DefaultUnknownIf), the fake answers with
// the same call again — same tool, same arguments, a new call id — instead
// of the next group, at most N times per call of the script; a result the
// fake cannot tie to a call it made (no run token, an id the client
// rewrote) is never asked again. A re-ask that no tool the follow-up
// offers matches cannot be made: the answer goes on with the script, and
// the record names it (wire.UpstreamRequest.AgainUnmatched). The script's
// rounds do not count the re-asks, and the record marks each
// (wire.ToolCall.AgainFor):
//
//	[{call: commit_write, arguments: {entry: "{{entry}}"}, again_if_failed: 1}, {say: done}]
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
	// AgainIfFailed is how many times the model asks again for the call
	// when the client reports that it failed (see Script): 0 never.
	AgainIfFailed int `json:"again_if_failed,omitempty" yaml:"again_if_failed,omitempty" jsonschema:"minimum=0,maximum=10" jsonschema_description:"how many times the model asks again for this call (same tool, same arguments, a new call id) when the follow-up reports it failed: the result is flagged as an error (Anthropic is_error, a Gemini response with an error, a Responses mcp_call error) or its text matches failed_if, and its text does not match unknown_if. A re-ask that no tool the follow-up offers matches cannot be made: it is recorded (again_unmatched) and the rules that would pass say unknown. 0 (default) never; at most 10"`
	// FailedIf is the pattern (RE2) of a result text that reports the call
	// failed; "" = DefaultFailedIf. Only with AgainIfFailed.
	FailedIf string `json:"failed_if,omitempty" yaml:"failed_if,omitempty" jsonschema_description:"RE2 pattern of a result text that reports the call failed (start it with (?i) to ignore case); default (?i)error|fail|exception|timed out|timeout|closed|disconnect|not connected|refused|unavailable|broken pipe. Needs again_if_failed"`
	// UnknownIf is the pattern (RE2) of a result text that reports the
	// call's outcome unknown, which is no failure; "" = DefaultUnknownIf.
	// Only with AgainIfFailed.
	UnknownIf string `json:"unknown_if,omitempty" yaml:"unknown_if,omitempty" jsonschema_description:"RE2 pattern of a result text that says the call's outcome is unknown: no failure, the model does not ask again (it wins over failed_if and the error flag); default (?i)unknown|may have|might have|uncertain|did not confirm|not confirmed|do not retry|don't retry. Needs again_if_failed"`
}

// MaxAgainIfFailed bounds Step.AgainIfFailed.
const MaxAgainIfFailed = 10

// StepError is a problem with one step of a Script: its index and, when the
// problem is one setting, the setting's YAML name.
type StepError struct {
	Step  int
	Field string // "" = the step as a whole
	Err   error
}

func (e *StepError) Error() string {
	if e.Field == "" {
		return fmt.Sprintf("steps[%d]: %v", e.Step, e.Err)
	}
	return fmt.Sprintf("steps[%d].%s: %v", e.Step, e.Field, e.Err)
}

func (e *StepError) Unwrap() error { return e.Err }

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

// Validate reports, as a *StepError, the first step that is not exactly one
// of call or say, or whose again_if_failed settings are bad.
func (s Script) Validate() error {
	for i, st := range s.Steps {
		bad := func(field, format string, args ...any) error {
			return &StepError{Step: i, Field: field, Err: fmt.Errorf(format, args...)}
		}
		switch {
		case st.Call == "" && st.Say == "":
			return bad("", "want call or say")
		case st.Call != "" && st.Say != "":
			return bad("", "call and say are exclusive")
		case st.Say != "" && st.Arguments != nil:
			return bad("arguments", "only a call takes arguments")
		case st.Say != "" && st.AgainIfFailed != 0:
			return bad("again_if_failed", "only a call is asked for again")
		case st.AgainIfFailed < 0 || st.AgainIfFailed > MaxAgainIfFailed:
			return bad("again_if_failed", "want a count from 0 to %d, got %d", MaxAgainIfFailed, st.AgainIfFailed)
		}
		for _, p := range []struct{ field, pattern string }{{"failed_if", st.FailedIf}, {"unknown_if", st.UnknownIf}} {
			if p.pattern == "" {
				continue
			}
			if st.AgainIfFailed == 0 {
				return bad(p.field, "needs again_if_failed (a count of 1 or more)")
			}
			if _, err := regexp.Compile(p.pattern); err != nil {
				return bad(p.field, "want an RE2 pattern: %w", err)
			}
		}
	}
	return nil
}

// Fill returns a copy of s with f applied to every string in it: calls, say
// texts, and argument keys and string values at any depth (the patterns
// failed_if and unknown_if are copied as they are); it shares no map
// or list with s. Of two keys f makes one, the later in sorted order wins.
// An argument value JSON cannot encode (NaN, ±Inf) is an error: the fake
// sends the arguments as a JSON object.
func (s Script) Fill(f func(string) string) (Script, error) {
	steps := make([]Step, len(s.Steps))
	for i, st := range s.Steps {
		steps[i] = Step{Call: f(st.Call), Say: f(st.Say), AgainIfFailed: st.AgainIfFailed, FailedIf: st.FailedIf, UnknownIf: st.UnknownIf}
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

// steps returns the script's steps, the default script's when it has none.
func (s *Script) steps() []Step {
	if len(s.Steps) == 0 {
		return defaultSteps
	}
	return s.Steps
}

// turn is what the script answers to a request that carries rounds rounds of
// tool results: the call group for that round, steps()[first:first+len(calls)],
// or the final text.
func (s *Script) turn(rounds int) (calls []Step, first int, say string) {
	steps := s.steps()
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
			calls, first = steps[i:j], i
		}
		group++
		i = j
	}
	return calls, first, say
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
