package explore

import (
	"fmt"
	"slices"

	"github.com/replaycheck/replaycheck/fakes/ledger"
	"github.com/replaycheck/replaycheck/internal/harness/history"
	"github.com/replaycheck/replaycheck/internal/wire"
)

// Sides of a fault point.
const (
	SideUpstream = "upstream"
	SideMCP      = "mcp"
)

// Point is one place in a clean run of a base scenario where a fault can go:
// a model request (the request itself, or a cut inside its streamed answer),
// an MCP session step (initialize, tools/list) or an MCP tools/call.
type Point struct {
	// Side is upstream or mcp.
	Side string `json:"side"`
	// Kind (initial, follow_up), Endpoint and Stream describe a model
	// request; Nth is its occurrence among the clean run's requests of that
	// kind, endpoint and stream flag — or, on the mcp side, among the
	// requests of Method, or else the calls of Tool.
	Kind     wire.RequestKind `json:"kind,omitempty"`
	Endpoint string           `json:"endpoint,omitempty"`
	Stream   bool             `json:"stream,omitempty"`
	// Method is the session step of an mcp point (see ledger.SessionMethods);
	// "" for a tools/call of Tool.
	Method string `json:"method,omitempty"`
	Tool   string `json:"tool,omitempty"`
	Nth    int    `json:"nth"`
	// Cut is true for a point inside a streamed answer: the cut comes after
	// Event of its Events events (0 is right after the headers).
	Cut    bool `json:"cut,omitempty"`
	Event  int  `json:"event,omitempty"`
	Events int  `json:"events,omitempty"`
	// ContentEvents is how many events complete the answer's content: its
	// tool calls, or its text when ToolCalls is false.
	ContentEvents int `json:"content_events,omitempty"`
	// ToolCalls is true for a cut point in an answer that carries tool
	// calls.
	ToolCalls bool `json:"tool_calls,omitempty"`
	// Sessionless is true for a tools/call made without an MCP session (a
	// self-describing 2026-07-28 request): a kind that acts on the
	// session has nothing to act on there.
	Sessionless bool `json:"sessionless,omitempty"`
}

// Meaning says what a cut point is: after the headers, right after the
// complete tool call (or, in an answer without one, the complete text),
// before the terminal event, or after the k-th event.
func (p Point) Meaning() string {
	switch {
	case !p.Cut:
		return ""
	case p.Event == 0:
		return "after the headers"
	case p.Event == p.ContentEvents && p.ContentEvents > 0 && p.ToolCalls:
		return "right after the tool call"
	case p.Event == p.ContentEvents && p.ContentEvents > 0:
		return "right after the text"
	case p.Event == p.Events-1:
		return "before the terminal event"
	default:
		return fmt.Sprintf("after event %d of %d", p.Event, p.Events)
	}
}

// Named reports whether p is a cut point with a meaning beyond its event
// number (see Meaning); false for a point that is not a cut.
func (p Point) Named() bool {
	return p.Cut && (p.Event == 0 || p.Event == p.ContentEvents && p.ContentEvents > 0 || p.Event == p.Events-1)
}

// String describes the point, for example "follow_up chat stream #1, right
// after the tool call", "mcp initialize #1" or "tools/call commit_write #1".
func (p Point) String() string {
	if p.Side == SideMCP && p.Method != "" {
		return fmt.Sprintf("mcp %s #%d", p.Method, p.Nth)
	}
	if p.Side == SideMCP {
		return fmt.Sprintf("tools/call %s #%d", p.Tool, p.Nth)
	}
	s := string(p.Kind) + " " + p.Endpoint
	if p.Stream {
		s += " stream"
	}
	s += fmt.Sprintf(" #%d", p.Nth)
	if p.Cut {
		s += ", " + p.Meaning()
	}
	return s
}

// Map returns the fault points of a clean run, in the order the run met
// them: each model request (and, for a streamed answer, each event boundary
// in it), then each MCP session step the run owned (a target's initialize
// and tools/list at the run's own ledger: see run.Options.Isolate), then
// each MCP tools/call. A session step is counted as the ledger counts a
// fault's requests: refused ones too.
func Map(h *history.History) []Point {
	var out []Point
	seen := map[string]int{}
	for _, u := range h.Upstream {
		key := fmt.Sprintf("%s %s %t", u.Kind, u.Endpoint, u.Stream)
		seen[key]++
		p := Point{Side: SideUpstream, Kind: u.Kind, Endpoint: u.Endpoint, Stream: u.Stream, Nth: seen[key]}
		out = append(out, p)
		if !u.Stream {
			continue
		}
		events := max(u.Events, 1) // an answer of unknown shape can still be cut after its headers
		for k := range events {
			c := p
			c.Cut, c.Event, c.Events, c.ContentEvents, c.ToolCalls = true, k, u.Events, u.ContentEvents, u.ToolCalls > 0
			out = append(out, c)
		}
	}
	steps := map[string]int{}
	for _, e := range h.MCP {
		if (e.Kind == wire.MCPSession || e.Kind == wire.MCPSessionRefused) && slices.Contains(ledger.SessionMethods(), e.Method) {
			steps[e.Method]++
			out = append(out, Point{Side: SideMCP, Method: e.Method, Nth: steps[e.Method]})
		}
	}
	calls := map[string]int{}
	for _, e := range h.Calls("") {
		calls[e.Tool]++
		out = append(out, Point{Side: SideMCP, Tool: e.Tool, Nth: calls[e.Tool], Sessionless: e.Protocol.Stateless()})
	}
	return out
}
