package fault

import (
	"time"

	"github.com/replaycheck/replaycheck/internal/wire"
)

// Site is the kind of point in a run where explore arms a fault kind.
type Site int

// Sites of a probe.
const (
	// AtRequest is a model request, before any byte of its answer.
	AtRequest Site = iota
	// AtCut is an event boundary of a streamed answer.
	AtCut
	// AtToolCall is an MCP tools/call.
	AtToolCall
	// AtSessionStep is an MCP session step (initialize, tools/list).
	AtSessionStep
	// AtStream is a streamed model request, before any byte of its answer.
	AtStream
	// AtPlain is a non-streamed model request, before any byte of its answer.
	AtPlain
	// AtSpawn is the start of an MCP server process a client spawned (its
	// initialize with the ledger, a stdio spawn).
	AtSpawn
)

// Spot is the point a probe builds its fault for.
type Spot struct {
	// Event is, at a cut, how many events of the streamed answer go out
	// before the cut (0 is right after the headers); ContentEvents how many
	// of them complete the answer's tool calls.
	Event, ContentEvents int
	// Tool is the tool of a tools/call point.
	Tool string
}

// Settings are the durations some probes use.
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

// DefaultSettings are the durations of the probes unless told otherwise.
var DefaultSettings = Settings{Stall: 5 * time.Second, Slow: time.Second, Linger: 500 * time.Millisecond, Dribble: 50 * time.Millisecond}

// Probe is one fault kind as explore sweeps it: F is the fake's fault type
// (upstream.Fault, ledger.Fault). A fault kind's file holds its probes.
type Probe[F any] struct {
	// Name is the probe's name on the command line (--kinds).
	Name string
	// Doc says what the fault does, in a few words.
	Doc string
	// Optional probes run only when --kinds names them.
	Optional bool
	// At is the kind of point the fault goes to.
	At Site
	// Transport is the MCP transport the fault needs (MCPTransportAny for
	// either, and for model faults); the fake's table fills it.
	Transport wire.MCPTransport
	// Session is true for a fault that acts on its call's MCP session: it
	// fires only on a call made in one, never on a self-describing
	// (2026-07-28) request. The fake's table fills it.
	Session bool
	// Family is the YAML name of the fault kind the probe arms (respond,
	// drop, drop_after_execute, …): probes of one family act the same way,
	// in different shapes. The fake's table fills it.
	Family string
	// Build returns the fault for a point.
	Build func(Spot, Settings) F
}
