package history

import (
	"encoding/json"
	"fmt"
	"maps"
	"math"
	"path"
	"slices"
	"strconv"
	"strings"

	"github.com/invopop/jsonschema"

	"github.com/replaycheck/replaycheck/internal/wire"
)

// Expect is what a scenario expects of a run: plain counts, and the replay
// rules (by name) that must hold. A nil count is not checked. Targets lays
// counts for some targets over the general ones (see For).
type Expect struct {
	// Counts are checked on every target (unless Targets replaces one).
	Counts `yaml:",inline"`
	// MaxAttempts is the attempt cap that bounded-attempts checks: the most
	// upstream requests of one kind a single client request may cause. When
	// unset, the target's num_retries+1 (times two with a fallback) is used.
	MaxAttempts *int `yaml:"max_attempts,omitempty" json:"max_attempts,omitempty" jsonschema:"minimum=1" jsonschema_description:"attempt cap for bounded-attempts (default the target's num_retries+1)"`
	// Client is what a client target's command must do; it cannot be judged
	// (unknown) on other targets, which skip scenarios that set it. An empty
	// Client (client: {}) only marks the scenario as one for client targets.
	Client *ClientExpect `yaml:"client,omitempty" json:"client,omitempty" jsonschema_description:"exit code and output of a client target's command; scenarios that set it (client: {} checks nothing) run on client targets only"`
	// AllowFailures is how many runs of a repeated scenario (repeat: N) may
	// fail with the scenario still passing; 0 means every run must pass.
	// It must be less than the scenario's repeat. run --repeat M makes it
	// AllowFailures×M of N×M runs, keeping the rate.
	AllowFailures int `yaml:"allow_failures,omitempty" json:"allow_failures,omitempty" jsonschema:"minimum=0" jsonschema_description:"how many of a repeated scenario's runs (repeat: N) may fail with the scenario still passing, e.g. 2 for at most 2 of N (default 0: every run must pass); less than repeat; run --repeat M makes it k×M of N×M"`
	// Rules are the replay rules that must hold.
	Rules []string `yaml:"rules,omitempty" json:"rules,omitempty" jsonschema_description:"replay rules that must hold (see replaycheck rules)"`
	// RulesIfJudged are replay rules that must not fail: one the run gives
	// no occasion to judge stays unknown without making the scenario
	// unknown (a target that does not retry at all has no retry to judge).
	// A scenario still needs some check that passes to pass.
	RulesIfJudged []string `yaml:"rules_if_judged,omitempty" json:"rules_if_judged,omitempty" jsonschema_description:"replay rules that must not fail; one the run gives no occasion to judge (unknown) does not make the scenario unknown, e.g. retry-after-honored on a target that does not retry at all; the scenario still needs a check that passes"`
	// Targets maps a target name pattern (path.Match syntax: "builtin:*",
	// "litellm") to counts that replace the general counts of the same name
	// on the targets it matches: the exact numbers of one implementation
	// (its retry policy) where the general counts hold for any correct one.
	Targets map[string]Counts `yaml:"targets,omitempty" json:"targets,omitempty" jsonschema_description:"counts for targets whose name matches the pattern (path.Match: builtin:* matches builtin:guarded and builtin:naive); they replace the general count of the same name (per upstream key)"`
}

// Counts are the plain count expectations of a scenario. Nil (or absent)
// counts are not checked.
type Counts struct {
	// Status is the HTTP status every client request must get.
	Status *int `yaml:"status,omitempty" json:"status,omitempty" jsonschema:"minimum=100,maximum=599" jsonschema_description:"HTTP status every client request must get"`
	// Writes is the number of ledger writes executed.
	Writes *Count `yaml:"writes,omitempty" json:"writes,omitempty" jsonschema_description:"ledger writes executed"`
	// Keys is the number of distinct idempotency keys the ledger saw.
	Keys *Count `yaml:"keys,omitempty" json:"keys,omitempty" jsonschema_description:"distinct idempotency keys the ledger saw"`
	// Cancellations is the number of tool calls the ledger saw cancelled.
	Cancellations *Count `yaml:"cancellations,omitempty" json:"cancellations,omitempty" jsonschema_description:"tool calls the ledger saw cancelled"`
	// Upstream counts upstream requests by kind ("initial", "follow_up") or
	// by kind and outcome ("follow_up injected_500").
	Upstream map[wire.CountKey]Count `yaml:"upstream,omitempty" json:"upstream,omitempty" jsonschema_description:"upstream requests by kind (initial, follow_up, any) or kind and outcome, e.g. follow_up injected_500"`
	// MCP counts what reached the ledger server.
	MCP *MCPExpect `yaml:"mcp,omitempty" json:"mcp,omitempty" jsonschema_description:"what reached the ledger MCP server"`
	// DataChunks and ErrorEvents count SSE events across the client's
	// streamed answers.
	DataChunks  *Count `yaml:"data_chunks,omitempty" json:"data_chunks,omitempty" jsonschema_description:"SSE data chunks across the streamed answers"`
	ErrorEvents *Count `yaml:"error_events,omitempty" json:"error_events,omitempty" jsonschema_description:"SSE error events across the streamed answers"`
}

// For returns the counts to check on the target called target: the general
// counts with those of every Targets pattern that matches target laid over
// them, patterns in lexical order (a later one wins). A count a matching
// block sets replaces the general one of the same name; upstream counts are
// replaced key by key, mcp.calls as a whole, mcp.unknown_tool_calls and
// mcp.spawns each on its own. e is not changed.
func (e Expect) For(target string) Counts {
	c := e.Counts
	c.Upstream = maps.Clone(e.Upstream)
	for _, p := range slices.Sorted(maps.Keys(e.Targets)) {
		if ok, err := path.Match(p, target); err != nil || !ok {
			continue
		}
		o := e.Targets[p]
		if o.Status != nil {
			c.Status = o.Status
		}
		for _, f := range []struct {
			dst **Count
			src *Count
		}{
			{&c.Writes, o.Writes}, {&c.Keys, o.Keys}, {&c.Cancellations, o.Cancellations},
			{&c.DataChunks, o.DataChunks}, {&c.ErrorEvents, o.ErrorEvents},
		} {
			if f.src != nil {
				*f.dst = f.src
			}
		}
		if len(o.Upstream) > 0 && c.Upstream == nil {
			c.Upstream = map[wire.CountKey]Count{}
		}
		maps.Copy(c.Upstream, o.Upstream)
		if o.MCP != nil {
			m := MCPExpect{}
			if c.MCP != nil {
				m = *c.MCP
			}
			if o.MCP.Calls != nil {
				m.Calls = o.MCP.Calls
			}
			if o.MCP.UnknownToolCalls != nil {
				m.UnknownToolCalls = o.MCP.UnknownToolCalls
			}
			if o.MCP.Spawns != nil {
				m.Spawns = o.MCP.Spawns
			}
			c.MCP = &m
		}
	}
	return c
}

// Count is an expected number of something: exact, or within bounds. In YAML
// and JSON it is a whole number (writes: 1) or a mapping of bounds, either
// optional: {min: 1, max: 3}, {max: 1}, {min: 1}; at_least and at_most are
// other names for min and max. The zero value accepts any number.
type Count struct {
	// Min is the least number accepted; 0 is no lower bound.
	Min int
	// Max, when not nil, is the most accepted.
	Max *int
}

// Exactly returns a Count of exactly n.
func Exactly(n int) *Count { return &Count{Min: n, Max: &n} }

// Exact returns the number when the count is exact.
func (c Count) Exact() (int, bool) {
	if c.Max != nil && *c.Max == c.Min {
		return c.Min, true
	}
	return 0, false
}

// Match reports whether n is within the count.
func (c Count) Match(n int) bool {
	return n >= c.Min && (c.Max == nil || n <= *c.Max)
}

// String renders the count for messages: "1", "at most 1", "at least 1",
// "1–3", or "any number".
func (c Count) String() string {
	if n, ok := c.Exact(); ok {
		return strconv.Itoa(n)
	}
	switch {
	case c.Max != nil && c.Min > 0:
		return fmt.Sprintf("%d–%d", c.Min, *c.Max)
	case c.Max != nil:
		return fmt.Sprintf("at most %d", *c.Max)
	case c.Min > 0:
		return fmt.Sprintf("at least %d", c.Min)
	}
	return "any number"
}

// Describe renders the count with its unit in words: "1 write", "at most 1
// write", "1–3 requests", "at least 2 requests". A unit takes an s unless the
// bound that ends the phrase is 1.
func (c Count) Describe(unit string) string {
	last := c.Min
	if c.Max != nil {
		last = *c.Max
	}
	if c.Max == nil && c.Min == 0 {
		return "any number of " + unit + "s"
	}
	if last == 1 {
		return c.String() + " " + unit
	}
	return c.String() + " " + unit + "s"
}

// CountError is a bad count in a scenario. Bound names the key of the bounds
// mapping at fault ("max"), or is empty when the whole value is; Key says
// that the key itself is wrong (an unknown bound), not its value.
type CountError struct {
	Bound string
	Key   bool
	Msg   string
}

// Error returns the message.
func (e *CountError) Error() string { return e.Msg }

// countBounds are the keys of a bounds mapping, with the bound each sets.
var countBounds = []struct{ key, bound string }{{"min", "min"}, {"max", "max"}, {"at_least", "min"}, {"at_most", "max"}}

// IsBounds reports whether m's keys are all bound names (min, max,
// at_least, at_most): the form of a Count rather than a per-tool map.
func IsBounds(m map[string]any) bool {
	for k := range m {
		if !slices.ContainsFunc(countBounds, func(b struct{ key, bound string }) bool { return b.key == k }) {
			return false
		}
	}
	return len(m) > 0
}

// MarshalJSON writes a number for an exact count, else {"min": A, "max": B}
// with the bounds set.
func (c Count) MarshalJSON() ([]byte, error) {
	if n, ok := c.Exact(); ok {
		return json.Marshal(n)
	}
	m := map[string]int{}
	if c.Min > 0 {
		m["min"] = c.Min
	}
	if c.Max != nil {
		m["max"] = *c.Max
	}
	return json.Marshal(m)
}

// UnmarshalJSON reads a number or a bounds object.
func (c *Count) UnmarshalJSON(b []byte) error {
	var v any
	if err := json.Unmarshal(b, &v); err != nil {
		return err
	}
	return c.fromValue(v)
}

// UnmarshalYAML reads a number or a bounds mapping (github.com/goccy/go-yaml).
// A problem is a *CountError.
func (c *Count) UnmarshalYAML(unmarshal func(any) error) error {
	var v any
	if err := unmarshal(&v); err != nil {
		return err
	}
	return c.fromValue(v)
}

func (c *Count) fromValue(v any) error {
	if n, ok := count(v); ok {
		*c = *Exactly(n)
		return nil
	}
	m, ok := v.(map[string]any)
	if !ok {
		if isNumber(v) {
			return &CountError{Msg: fmt.Sprintf("want a count of at least 0, got %v", v)}
		}
		return &CountError{Msg: fmt.Sprintf("want a whole number or bounds such as {min: 1, max: 3}, got %s", show(v))}
	}
	keys := slices.Sorted(maps.Keys(m))
	if len(keys) == 0 {
		return &CountError{Msg: "want min, max or both (or at_least, at_most), got {}"}
	}
	var out Count
	set := map[string]string{} // bound -> key that set it
	for _, k := range keys {
		i := slices.IndexFunc(countBounds, func(b struct{ key, bound string }) bool { return b.key == k })
		if i < 0 {
			return &CountError{Bound: k, Key: true, Msg: fmt.Sprintf("unknown bound %q; want min, max, at_least or at_most", k)}
		}
		bound := countBounds[i].bound
		if prev, ok := set[bound]; ok {
			return &CountError{Bound: k, Msg: fmt.Sprintf("%s and %s are the same bound; set one", prev, k)}
		}
		set[bound] = k
		n, ok := count(m[k])
		if !ok {
			return &CountError{Bound: k, Msg: fmt.Sprintf("%s: want a whole number of at least 0, got %s", k, show(m[k]))}
		}
		if bound == "min" {
			out.Min = n
		} else {
			out.Max = &n
		}
	}
	if out.Max != nil && out.Min > *out.Max {
		return &CountError{Bound: set["min"], Msg: fmt.Sprintf("%s %d is more than %s %d", set["min"], out.Min, set["max"], *out.Max)}
	}
	*c = out
	return nil
}

// JSONSchema describes the number-or-bounds form.
func (Count) JSONSchema() *jsonschema.Schema {
	return &jsonschema.Schema{
		OneOf:       []*jsonschema.Schema{countSchema(), boundsSchema()},
		Description: "a count: a whole number (exactly), or bounds {min: A, max: B} (either optional; at_least/at_most are other names for min/max)",
	}
}

func countSchema() *jsonschema.Schema {
	return &jsonschema.Schema{Type: "integer", Minimum: json.Number("0")}
}

func boundsSchema() *jsonschema.Schema {
	p := jsonschema.NewProperties()
	for _, b := range countBounds {
		p.Set(b.key, countSchema())
	}
	return &jsonschema.Schema{
		Type: "object", Properties: p, MinProperties: ptr(uint64(1)), AdditionalProperties: jsonschema.FalseSchema,
		Not: &jsonschema.Schema{AnyOf: []*jsonschema.Schema{
			{Required: []string{"min", "at_least"}}, {Required: []string{"max", "at_most"}},
		}},
	}
}

func ptr[T any](v T) *T { return &v }

// MCPExpect counts what reached the ledger server.
type MCPExpect struct {
	// Calls is the number of tools/call requests the server received: a
	// count for all tools, or a map from tool name to count.
	Calls *CallCount `yaml:"calls,omitempty" json:"calls,omitempty" jsonschema_description:"tools/call requests received: a count (a number or {min, max}), or a map from tool name to count"`
	// UnknownToolCalls is the number of tools/call requests of a tool the
	// server did not offer when they arrived (MCPEvent.UnknownTool).
	UnknownToolCalls *Count `yaml:"unknown_tool_calls,omitempty" json:"unknown_tool_calls,omitempty" jsonschema_description:"tools/call requests of a tool the server did not offer when they arrived (a removed or renamed tool, or one it never had): the MCP unknown-tool error answered them and nothing ran"`
	// Spawns is the number of stdio server processes (replaycheck
	// ledger-stdio) that opened a session with the run's ledger
	// (wire.MCPSpawn): 0 over HTTP.
	Spawns *Count `yaml:"spawns,omitempty" json:"spawns,omitempty" jsonschema_description:"stdio server processes (replaycheck ledger-stdio) the target spawned that opened a session with the run's ledger, respawns included; 0 over HTTP"`
}

// CallCount is a number of tools/call requests, either in total or per tool.
// In YAML and JSON it is a count (`calls: 1`, `calls: {max: 1}`) or a map
// from tool name to count (`calls: {commit_write: 1, read_ledger: {min: 1}}`).
// A mapping whose keys are all bound names is a count.
type CallCount struct {
	// Total, when PerTool is nil, is the number of calls to any tool.
	Total Count
	// PerTool, when not nil, is the number of calls per tool name.
	PerTool map[string]Count
}

// MarshalJSON writes a count or a map.
func (c CallCount) MarshalJSON() ([]byte, error) {
	if c.PerTool != nil {
		return json.Marshal(c.PerTool)
	}
	return json.Marshal(c.Total)
}

// UnmarshalJSON reads a count or a map.
func (c *CallCount) UnmarshalJSON(b []byte) error {
	var v any
	if err := json.Unmarshal(b, &v); err != nil {
		return err
	}
	return c.fromValue(v)
}

// UnmarshalYAML reads a count or a map (github.com/goccy/go-yaml).
func (c *CallCount) UnmarshalYAML(unmarshal func(any) error) error {
	var v any
	if err := unmarshal(&v); err != nil {
		return err
	}
	return c.fromValue(v)
}

func (c *CallCount) fromValue(v any) error {
	m, isMap := v.(map[string]any)
	if !isMap || IsBounds(m) {
		var total Count
		if err := total.fromValue(v); err != nil {
			if !isMap {
				return &CountError{Msg: fmt.Sprintf("calls: want a count or a map from tool name to count, got %s", show(v))}
			}
			return err
		}
		*c = CallCount{Total: total}
		return nil
	}
	per := make(map[string]Count, len(m))
	for _, tool := range slices.Sorted(maps.Keys(m)) {
		if IsBounds(map[string]any{tool: nil}) {
			return &CountError{Bound: tool, Key: true, Msg: fmt.Sprintf("calls: %s is a bound and the other keys are tool names; want bounds ({min: 1, max: 3}) or a map from tool name to count", tool)}
		}
		var n Count
		if err := n.fromValue(m[tool]); err != nil {
			return &CountError{Bound: tool, Msg: fmt.Sprintf("calls of %s: %s", tool, err.Error())}
		}
		per[tool] = n
	}
	*c = CallCount{PerTool: per}
	return nil
}

// JSONSchema describes the count-or-map form.
func (CallCount) JSONSchema() *jsonschema.Schema {
	perTool := &jsonschema.Schema{OneOf: []*jsonschema.Schema{countSchema(), boundsSchema()}}
	return &jsonschema.Schema{
		OneOf: []*jsonschema.Schema{
			countSchema(),
			boundsSchema(),
			{Type: "object", AdditionalProperties: perTool},
		},
		Description: "tools/call requests received: a count for all tools (a number or {min, max}), or a map from tool name to count",
	}
}

// String renders the count for messages.
func (c CallCount) String() string {
	if c.PerTool == nil {
		return c.Total.String()
	}
	tools := slices.Sorted(maps.Keys(c.PerTool))
	parts := make([]string, len(tools))
	for i, t := range tools {
		parts[i] = fmt.Sprintf("%s %s", t, c.PerTool[t])
	}
	return strings.Join(parts, ", ")
}

func count(v any) (int, bool) {
	switch x := v.(type) {
	case int:
		return x, x >= 0
	case int64:
		return int(x), x >= 0
	case uint64:
		return int(x), x <= math.MaxInt32
	case float64:
		if x != math.Trunc(x) || x < 0 || x > math.MaxInt32 {
			return 0, false
		}
		return int(x), true
	}
	return 0, false
}

func isNumber(v any) bool {
	switch v.(type) {
	case int, int64, uint64, float64:
		return true
	}
	return false
}

// show renders a decoded YAML value for a message.
func show(v any) string {
	switch x := v.(type) {
	case string:
		return strconv.Quote(x)
	case nil:
		return "nothing"
	case []any:
		return "a list"
	case map[string]any:
		return "a mapping"
	}
	return fmt.Sprint(v)
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
