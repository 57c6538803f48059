package explore

import (
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/replaycheck/replaycheck/fakes/fault"
	"github.com/replaycheck/replaycheck/fakes/ledger"
	"github.com/replaycheck/replaycheck/fakes/upstream"
)

// Kind is one fault kind the sweep arms at a point. Adding a kind is one row
// in Kinds.
type Kind struct {
	// Name is the kind's name on the command line (--kinds).
	Name string `json:"name"`
	// Doc says what the fault does, in a few words.
	Doc string `json:"doc"`
	// Optional kinds run only when --kinds names them.
	Optional bool `json:"optional,omitempty"`
	// at is the kind of point the fault goes to.
	at pointShape
	// upstream and mcp build the fault for a point; one of them is set.
	upstream func(p Point, s Settings) upstream.Fault
	mcp      func(p Point, s Settings) ledger.Fault
}

// pointShape is the kind of point a fault kind applies to.
type pointShape int

const (
	atRequest     pointShape = iota // a model request, before any byte of its answer
	atCut                           // an event boundary of a streamed answer
	atToolCall                      // an MCP tools/call
	atSessionStep                   // an MCP session step (initialize, tools/list)
	atStream                        // a streamed model request, before any byte of its answer
)

// Settings are the durations some kinds use.
type Settings struct {
	// Stall is how long the stall kind holds a model answer back, and how
	// long stream-stall holds a stream silent before it resumes.
	Stall time.Duration `json:"stall"`
	// Slow is how long the slow-tool kind holds a tool's answer back.
	Slow time.Duration `json:"slow"`
	// Linger is how long drop-linger keeps a cut stream open, silent.
	Linger time.Duration `json:"linger"`
	// Dribble is how long the dribble kind waits before each event.
	Dribble time.Duration `json:"dribble"`
}

// DefaultSettings are the durations of the kinds unless told otherwise.
var DefaultSettings = Settings{Stall: 5 * time.Second, Slow: time.Second, Linger: 500 * time.Millisecond, Dribble: 50 * time.Millisecond}

// Kinds returns the table of fault kinds, in sweep order. The slice is new
// on every call.
func Kinds() []Kind {
	status := func(code int, headers map[string]string, doc string) func(Point, Settings) upstream.Fault {
		return func(p Point, _ Settings) upstream.Fault {
			return upstream.Fault{Respond: &upstream.Respond{Status: code, Headers: headers, Message: "replaycheck explore: " + doc}}
		}
	}
	return []Kind{
		{Name: "500", Doc: "answer 500", at: atRequest, upstream: status(500, nil, "injected 500")},
		{Name: "502", Doc: "answer 502", at: atRequest, upstream: status(502, nil, "injected 502")},
		{Name: "503", Doc: "answer 503", at: atRequest, upstream: status(503, nil, "injected 503")},
		{Name: "529", Doc: "answer 529 (overloaded)", at: atRequest, upstream: status(529, nil, "injected 529")},
		{Name: "429", Doc: "answer 429 without Retry-After", at: atRequest, upstream: status(429, nil, "injected 429")},
		{Name: "429-retry-after", Doc: "answer 429 with Retry-After: 1", at: atRequest, upstream: status(429, map[string]string{"Retry-After": "1"}, "injected 429 with Retry-After")},
		{Name: "500-no-retry", Doc: "answer 500 with x-should-retry: false", at: atRequest, upstream: status(500, map[string]string{"x-should-retry": "false"}, "injected 500, x-should-retry false")},
		{Name: "400", Doc: "answer 400 (not retryable)", at: atRequest, upstream: status(400, nil, "injected 400")},
		{Name: "408", Doc: "answer 408", at: atRequest, upstream: status(408, nil, "injected 408")},
		{Name: "reset", Doc: "reset the connection before any byte", at: atRequest, upstream: func(Point, Settings) upstream.Fault {
			return upstream.Fault{Reset: true}
		}},
		{Name: "stall", Doc: "hold the answer back for --stall, then answer", Optional: true, at: atRequest, upstream: func(_ Point, s Settings) upstream.Fault {
			d := fault.Duration(s.Stall)
			return upstream.Fault{Delay: &d}
		}},
		{Name: "drop", Doc: "cut the stream at this point", at: atCut, upstream: func(p Point, _ Settings) upstream.Fault {
			return upstream.Fault{Drop: drop(p)}
		}},
		{Name: "drop-linger", Doc: "cut the stream at this point after --linger of silence", at: atCut, upstream: func(p Point, s Settings) upstream.Fault {
			d := drop(p)
			d.Linger = fault.Duration(s.Linger)
			return upstream.Fault{Drop: d}
		}},
		{Name: "stream-error", Doc: "end the 200 stream at this point with the dialect's in-stream error (overloaded_error, server_error)", at: atCut, upstream: func(p Point, _ Settings) upstream.Fault {
			d := drop(p)
			return upstream.Fault{StreamError: &upstream.StreamError{After: d.After, Events: d.Events, Message: "replaycheck explore: injected stream error"}}
		}},
		{Name: "stream-stall", Doc: "hold the stream silent at this point for --stall, then resume", Optional: true, at: atCut, upstream: func(p Point, s Settings) upstream.Fault {
			d := drop(p)
			return upstream.Fault{Stall: &upstream.Stall{After: d.After, Events: d.Events, For: fault.Duration(s.Stall)}}
		}},
		{Name: "stream-hang", Doc: "hold the stream silent at this point until the client gives up", Optional: true, at: atCut, upstream: func(p Point, _ Settings) upstream.Fault {
			d := drop(p)
			return upstream.Fault{Stall: &upstream.Stall{After: d.After, Events: d.Events, Forever: true}}
		}},
		{Name: "dribble", Doc: "wait --dribble before each event of the stream", Optional: true, at: atStream, upstream: func(_ Point, s Settings) upstream.Fault {
			d := fault.Duration(s.Dribble)
			return upstream.Fault{Dribble: &d}
		}},
		{Name: "serve-model", Doc: "answer normally, but naming another model than requested (a silent fallback)", at: atRequest, upstream: func(Point, Settings) upstream.Fault {
			return upstream.Fault{ServeModel: "replaycheck-fallback"}
		}},
		{Name: "mcp-session-fail", Doc: "refuse the session step (initialize, tools/list) with 503, as a server still starting does", at: atSessionStep, mcp: func(Point, Settings) ledger.Fault {
			return ledger.Fault{FailBeforeExecute: &ledger.FailBeforeExecute{Status: 503}}
		}},
		{Name: "mcp-session-reset", Doc: "reset the connection of the session step (initialize, tools/list)", at: atSessionStep, mcp: func(Point, Settings) ledger.Fault {
			return ledger.Fault{FailBeforeExecute: &ledger.FailBeforeExecute{Reset: true}}
		}},
		{Name: "mcp-fail", Doc: "refuse the tools/call with 503 before it executes", at: atToolCall, mcp: func(Point, Settings) ledger.Fault {
			return ledger.Fault{FailBeforeExecute: &ledger.FailBeforeExecute{Status: 503}}
		}},
		{Name: "mcp-reset", Doc: "reset the tools/call connection before it executes", at: atToolCall, mcp: func(Point, Settings) ledger.Fault {
			return ledger.Fault{FailBeforeExecute: &ledger.FailBeforeExecute{Reset: true}}
		}},
		{Name: "mcp-drop", Doc: "execute the tools/call, then drop the connection before the answer", at: atToolCall, mcp: func(Point, Settings) ledger.Fault {
			return ledger.Fault{DropAfterExecute: &ledger.DropAfterExecute{}}
		}},
		{Name: "mcp-drop-mid", Doc: "execute the tools/call, send the answer's status line and headers, then drop the connection before the result", at: atToolCall, mcp: func(Point, Settings) ledger.Fault {
			return ledger.Fault{DropAfterExecute: &ledger.DropAfterExecute{After: ledger.DropAfterHeaders}}
		}},
		{Name: "mcp-is-error", Doc: "answer the tools/call with isError instead of executing it", at: atToolCall, mcp: func(Point, Settings) ledger.Fault {
			return ledger.Fault{IsError: &ledger.IsError{Message: "replaycheck explore: injected tool error"}}
		}},
		{Name: "mcp-slow", Doc: "execute the tools/call, then hold the answer back for --slow", at: atToolCall, mcp: func(_ Point, s Settings) ledger.Fault {
			d := fault.Duration(s.Slow)
			return ledger.Fault{Delay: &d}
		}},
		{Name: "mcp-expire", Doc: "forget the tools/call's MCP session before it executes (404 on its session id)", at: atToolCall, mcp: func(Point, Settings) ledger.Fault {
			return ledger.Fault{ExpireSession: &ledger.ExpireSession{}}
		}},
		{Name: "mcp-expire-after", Doc: "execute the tools/call, then forget its MCP session and close the connection before the answer", at: atToolCall, mcp: func(Point, Settings) ledger.Fault {
			return ledger.Fault{ExpireSession: &ledger.ExpireSession{After: ledger.ExpireAfterExecute}}
		}},
		{Name: "mcp-unauthorized", Doc: "refuse the tools/call with 401 and WWW-Authenticate (an expired token) before it executes", at: atToolCall, mcp: func(Point, Settings) ledger.Fault {
			return ledger.Fault{Unauthorized: &ledger.Unauthorized{}}
		}},
		{Name: "mcp-rename", Doc: "execute the tools/call, then rename its tool (TOOL_v2) and notify tools/list_changed before the answer", at: atToolCall, mcp: func(p Point, _ Settings) ledger.Fault {
			return ledger.Fault{ChangeTools: &ledger.ChangeTools{Rename: p.Tool, To: p.Tool + "_v2"}}
		}},
	}
}

// drop is the drop action that cuts a stream at p.
func drop(p Point) *upstream.Drop {
	switch {
	case p.Event == 0:
		return &upstream.Drop{After: upstream.DropAfterHeaders}
	case p.Event == p.ContentEvents && p.ContentEvents > 0:
		return &upstream.Drop{After: upstream.DropAfterToolCall}
	default:
		return &upstream.Drop{After: upstream.DropAfterEvents, Events: p.Event}
	}
}

// applies reports whether k can go to p.
func (k Kind) applies(p Point) bool {
	switch k.at {
	case atRequest:
		return p.Side == SideUpstream && !p.Cut
	case atCut:
		return p.Cut
	case atStream:
		return p.Side == SideUpstream && !p.Cut && p.Stream
	case atSessionStep:
		return p.Side == SideMCP && p.Method != ""
	default:
		return p.Side == SideMCP && p.Method == ""
	}
}

// times returns the Times the sweep arms k at p with: the point's own
// occurrence, and — at the first occurrence of a request, a named cut point,
// a session step or a tool call — every occurrence, which a retrying target
// meets again.
func (k Kind) times(p Point) []fault.Times {
	once := fault.Times{Nth: p.Nth}
	if p.Nth == 1 {
		once = fault.Once
	}
	if p.Cut && !p.named() || p.Nth > 1 {
		// Always at a later occurrence is always at the first.
		return []fault.Times{once}
	}
	return []fault.Times{once, fault.Always}
}

// SelectKinds returns the kinds named in names (all non-optional kinds when
// names is empty); an unknown name is an error listing the known ones.
func SelectKinds(names []string) ([]Kind, error) {
	all := Kinds()
	if len(names) == 0 {
		return slices.DeleteFunc(all, func(k Kind) bool { return k.Optional }), nil
	}
	var out []Kind
	for _, n := range names {
		i := slices.IndexFunc(all, func(k Kind) bool { return k.Name == n })
		if i < 0 {
			known := make([]string, len(all))
			for j, k := range all {
				known[j] = k.Name
			}
			return nil, fmt.Errorf("fault kind %q: want one of %s", n, strings.Join(known, ", "))
		}
		if !slices.ContainsFunc(out, func(k Kind) bool { return k.Name == n }) {
			out = append(out, all[i])
		}
	}
	return out, nil
}
