package wire

import (
	"fmt"
	"maps"
	"slices"
	"strconv"
	"strings"
)

// CountKey names what an upstream count counts: requests of a kind (KindAny
// for both) and, when Outcome is set, only those with that outcome. Its text
// form is the kind, then a space and the outcome when there is one
// ("follow_up injected_500"); that is how /counts and a scenario's
// expect.upstream write it.
type CountKey struct {
	Kind    RequestKind
	Outcome Outcome
}

// String returns k's text form.
func (k CountKey) String() string {
	if k.Outcome == "" {
		return string(k.Kind)
	}
	return string(k.Kind) + " " + string(k.Outcome)
}

// MarshalText writes k's text form.
func (k CountKey) MarshalText() ([]byte, error) { return []byte(k.String()), nil }

// UnmarshalText reads k's text form; it never fails. Like an Outcome, a
// kind or outcome this version does not know reads back as itself (Check
// tells), so that String gives back any text read: "initial " (a space and
// no outcome) is the kind "initial ".
func (k *CountKey) UnmarshalText(b []byte) error {
	kind, outcome, _ := strings.Cut(string(b), " ")
	if outcome == "" {
		kind = string(b)
	}
	*k = CountKey{Kind: RequestKind(kind), Outcome: Outcome(outcome)}
	return nil
}

// Check reports whether k is a key this version counts: initial, follow_up
// or any, optionally with a known outcome (see Outcome.Known).
func (k CountKey) Check() error {
	switch k.Kind {
	case KindInitial, KindFollowUp, KindAny:
	default:
		return fmt.Errorf("upstream count %q: want initial, follow_up or any, optionally followed by an outcome such as \"follow_up injected_500\"", k)
	}
	if k.Outcome != "" && !k.Outcome.Known() {
		return fmt.Errorf("upstream count %q: outcome %q: want %s or injected_<status> such as injected_500", k, k.Outcome, strings.Join(namedOutcomeText(), ", "))
	}
	return nil
}

// CompareCountKeys orders count keys by their text form, as /counts and
// reports list them.
func CompareCountKeys(a, b CountKey) int { return strings.Compare(a.String(), b.String()) }

// Counts reports whether k counts u.
func (k CountKey) Counts(u UpstreamRequest) bool {
	return (k.Kind == KindAny || u.Kind == k.Kind) && (k.Outcome == "" || u.Outcome == k.Outcome)
}

// UpstreamCounts are a run's (or all) classified model requests and their
// outcomes, as the upstream fake counts them and /counts serves them.
type UpstreamCounts struct {
	// Initial counts requests without a tool result.
	Initial int `json:"initial"`
	// FollowUp counts requests carrying a tool result.
	FollowUp int `json:"follow_up"`
	// Outcomes counts requests by kind and outcome; each key has both.
	Outcomes map[CountKey]int `json:"outcomes"`
}

// Add counts one request of kind with outcome.
func (c *UpstreamCounts) Add(kind RequestKind, outcome Outcome) {
	if kind == KindFollowUp {
		c.FollowUp++
	} else {
		c.Initial++
	}
	if c.Outcomes == nil {
		c.Outcomes = make(map[CountKey]int, 4)
	}
	c.Outcomes[CountKey{kind, outcome}]++
}

// Clone returns a copy of c that shares nothing with it; its Outcomes is
// never nil.
func (c UpstreamCounts) Clone() UpstreamCounts {
	c.Outcomes = maps.Clone(c.Outcomes)
	if c.Outcomes == nil {
		c.Outcomes = map[CountKey]int{}
	}
	return c
}

// MCPCounts are what the ledger MCP server counted for one run token or in
// total, as /counts serves them.
type MCPCounts struct {
	// Calls counts tools/call requests received, by tool name, including
	// faulted ones and calls of tools the ledger does not have.
	Calls map[string]int `json:"calls"`
	// Writes counts ledger lines written and synced.
	Writes int `json:"writes"`
	// Keys counts distinct idempotency keys seen by commit_write_keyed.
	Keys int `json:"keys"`
	// Cancellations counts calls the client cancelled, or whose stream it
	// closed, before the answer; a cancel notice for an answered call is not one.
	Cancellations int `json:"cancellations"`
	// WriteFailures counts writes that could not be persisted (a full disk,
	// a failing file): each call was answered with an isError result saying
	// nothing was recorded, and none counts in Writes.
	WriteFailures int `json:"write_failures"`
	// Messages counts the other MCP messages: initialize, tools/list,
	// notifications, and GETs and DELETEs of a session.
	Messages int `json:"messages"`
	// Spawns counts the ledger-stdio processes that opened a session (one
	// MCPSpawn event each); omitted from JSON when zero.
	Spawns int `json:"spawns,omitempty"`
	// Exits counts the ledger-stdio processes that ended (one MCPExit event
	// each: by a fault, cleanly, or gone), so Spawns - Exits are still
	// running as far as the ledger knows; omitted from JSON when zero.
	Exits int `json:"exits,omitempty"`
	// CassetteMisses counts the calls a replay of an MCP cassette had no
	// recorded answer for (one MCPFaultCassetteMiss event each); omitted
	// from JSON when zero.
	CassetteMisses int `json:"cassette_misses,omitempty"`
	// Unknown counts the calls a forwarding ledger forwarded whose answer
	// never came back from the real server (MCPFaultForwardUnknown): they
	// may have run, and none counts in Writes; omitted from JSON when zero.
	Unknown int `json:"unknown,omitempty"`
	// ServerGone counts the calls a forwarding ledger refused because the
	// real server's process had exited (MCPFaultForwardServerGone): none
	// ran; omitted from JSON when zero.
	ServerGone int `json:"server_gone,omitempty"`
	// Protocols are the MCP protocol versions the run's sessions negotiated
	// and its stateless requests used, each once, in the order first seen
	// (AddProtocol); omitted from JSON when none was seen.
	Protocols []MCPProtocol `json:"protocols,omitempty"`
}

// CallsText renders a count of tools/call requests for tables: "3", or
// "3 (1 unknown)" when unknown of them were forwarded and never answered.
func CallsText(calls, unknown int) string {
	if unknown == 0 {
		return strconv.Itoa(calls)
	}
	return fmt.Sprintf("%d (%d unknown)", calls, unknown)
}

// CallsTotal returns the number of tools/call requests over all tools.
func (c MCPCounts) CallsTotal() int {
	n := 0
	for _, v := range c.Calls {
		n += v
	}
	return n
}

// AddProtocol adds the MCP protocol version e says was used to
// c.Protocols when it is not there yet, at the end: the versions read in
// the order the run first used them, as a timeline reads (a fallback from
// 2026-07-28 to 2025-11-25 lists 2026-07-28 first, an upgrade the other
// way round). An event that says none, and a refused request
// (MCPSessionRefused, whose version was only asked for), add nothing.
// c.Protocols is replaced, never changed in place, so copies of c may share
// it.
func (c *MCPCounts) AddProtocol(e MCPEvent) {
	if e.Protocol == "" || e.Kind == MCPSessionRefused || slices.Contains(c.Protocols, e.Protocol) {
		return
	}
	c.Protocols = append(slices.Clip(c.Protocols), e.Protocol)
}

// Clone returns a copy of c that shares nothing with it but Protocols,
// which is never changed in place; its Calls is never nil.
func (c MCPCounts) Clone() MCPCounts {
	c.Calls = maps.Clone(c.Calls)
	if c.Calls == nil {
		c.Calls = map[string]int{}
	}
	return c
}

// CountKeyPattern is a regular expression that matches exactly the text
// forms whose key Check accepts, for the JSON Schema.
func CountKeyPattern() string {
	return `^(initial|follow_up|any)( (` + strings.Join(namedOutcomeText(), "|") + `|injected_[1-5][0-9]{2}))?$`
}

// namedOutcomeText returns NamedOutcomes as text, for messages and the schema.
func namedOutcomeText() []string {
	out := make([]string, 0, len(NamedOutcomes()))
	for _, o := range NamedOutcomes() {
		out = append(out, string(o))
	}
	return out
}
