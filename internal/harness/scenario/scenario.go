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
//	  writes: 1
//	  upstream: {initial: {min: 1}, follow_up: {min: 1}}
//	  rules: [no-replay-after-dispatch, error-surfaces]
//	  targets:
//	    "builtin:*": {status: 500, upstream: {initial: 1, follow_up: 1}}
//
// A count is a number (exactly) or bounds ({min: 1, max: 3}, {max: 1});
// expect.targets holds counts checked only on targets whose name matches the
// pattern (see history.Expect.For).
package scenario

import (
	"maps"
	"slices"

	"github.com/replaycheck/replaycheck/fakes/fault"
	"github.com/replaycheck/replaycheck/fakes/ledger"
	"github.com/replaycheck/replaycheck/fakes/ledger/mcpcassette"
	"github.com/replaycheck/replaycheck/fakes/upstream"
	"github.com/replaycheck/replaycheck/internal/harness/history"
	"github.com/replaycheck/replaycheck/internal/wire"
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
	Name string `yaml:"name" json:"name" jsonschema:"minLength=1" jsonschema_description:"scenario name, unique within a suite"`
	// Description says what the scenario shows, for people.
	Description string `yaml:"description,omitempty" json:"description,omitempty" jsonschema_description:"what the scenario shows, for people"`
	// Tags select scenarios (--tag) and say what they are about; a tag
	// bug:SWITCH names the gateway switch the scenario catches.
	Tags []string `yaml:"tags,omitempty" json:"tags,omitempty" jsonschema_description:"tags for --tag; bug:SWITCH names the built-in gateway switch the scenario catches"`
	// Request is sugar for a single-element Requests.
	Request *Request `yaml:"request,omitempty" json:"request,omitempty" jsonschema_description:"the one app request (sugar for a one-element requests); a client scenario (expect.client) may leave it out: one run of the client"`
	// Requests are sent one after the other; at least one is required
	// (through Request or Requests), except in a client scenario
	// (expect.client), which without one runs the client's command once.
	// On a client target each request is one run of its command, and only
	// the prompt reaches it (as $REPLAYCHECK_PROMPT): a client sends what
	// it sends (see ClientWarnings).
	Requests []Request `yaml:"requests,omitempty" json:"requests,omitempty" jsonschema_description:"app requests sent one after the other; on a client target each is one run of its command"`
	// Model answers the scenario's model requests: the fake model's script
	// (empty is the seed's: call commit_write with {{entry}}, then say
	// done), or a recorded cassette.
	Model Model `yaml:"model,omitempty" json:"model,omitempty" jsonschema_description:"what answers the model requests: the fake model's script (a list of steps; empty is the seed's: call commit_write with {{entry}}, then say done), or {cassette: FILE}, a session recorded by serve --relay URL --record DIR (FILE relative to this scenario file), replayed with this run's token and the faults applied"`
	// Faults are armed on the fakes for this scenario's run token only.
	Faults Faults `yaml:"faults,omitempty" json:"faults,omitempty" jsonschema_description:"faults armed on the fakes for this scenario's run token only"`
	// Annotations replace ledger tools' annotations (readOnlyHint,
	// idempotentHint, destructiveHint). They are global to a ledger, so a
	// scenario that sets them runs on fakes and a target of its own.
	Annotations map[string]ledger.Annotations `yaml:"annotations,omitempty" json:"annotations,omitempty" jsonschema_description:"tool annotations the ledger advertises, by tool name; the scenario then gets fakes and a target of its own"`
	// MCP says how the target reaches the MCP server and which protocol the
	// ledger speaks; nil leaves it to the target (see MCPTransport).
	MCP *MCP `yaml:"mcp,omitempty" json:"mcp,omitempty" jsonschema_description:"how the target reaches the ledger MCP server: {transport: stdio} spawns it as a process (replaycheck ledger-stdio), {transport: http} connects over Streamable HTTP; unset, the transport the MCP faults need, or whichever the target uses. A target that does not speak the transport skips the scenario. {protocol: 2026-07-28} pins the MCP protocol version, {honour_cancellation: true} makes the ledger honour cancellation"`
	// Gateway sets knobs of the built-in gateway target. A scenario that sets
	// any runs on fakes and a target of its own.
	Gateway *Gateway `yaml:"gateway,omitempty" json:"gateway,omitempty" jsonschema_description:"knobs of the built-in gateway target; the scenario then gets fakes and a target of its own"`
	// RetryAfterHint, when set, adds retry-after-ms and Retry-After of this
	// duration to every injected error response, so SDK clients that honour
	// them finish fast. It changes the behaviour under test; reports note it.
	RetryAfterHint fault.Duration `yaml:"retry_after_hint,omitempty" json:"retry_after_hint,omitempty" jsonschema_description:"add retry-after-ms/Retry-After of this duration to injected error responses (changes the behaviour under test; reported)"`
	// Repeat, when set, runs the scenario this many times on each target,
	// each run with a run token of its own, and judges the runs together:
	// the scenario passes when at most expect.allow_failures of them fail
	// (see rules.Aggregate). Nil runs it once; run --repeat multiplies it.
	Repeat *int `yaml:"repeat,omitempty" json:"repeat,omitempty" jsonschema:"minimum=1" jsonschema_description:"run the scenario this many times on each target (each run with its own run token, in parallel) and judge the rate: it passes when at most expect.allow_failures runs fail (default 1; run --repeat multiplies it)"`
	// Timeout bounds the whole scenario run; zero means the suite's --timeout.
	Timeout fault.Duration `yaml:"timeout,omitempty" json:"timeout,omitempty" jsonschema_description:"deadline of the whole scenario run (default: run's --timeout)"`
	// Expect is what must be observed.
	Expect history.Expect `yaml:"expect" json:"expect" jsonschema_description:"counts and replay rules that must hold"`

	// File and Line say where the scenario was loaded from.
	File string `yaml:"-" json:"-"`
	Line int    `yaml:"-" json:"-"`
	// Warnings are problems that do not stop the scenario from running, for
	// example request fields a client target ignores; each is an *Error
	// with Warning set, at its line and column.
	Warnings []*Error `yaml:"-" json:"-"`
}

// Request is one app request sent through the target.
type Request struct {
	// Endpoint is chat, responses or messages (a dialect of
	// internal/dialect); required except in client scenarios, where it is
	// ignored.
	Endpoint Endpoint `yaml:"endpoint,omitempty" json:"endpoint,omitempty" jsonschema_description:"chat, responses or messages; required except in client scenarios (expect.client), which ignore it"`
	// Stream asks for a streamed (SSE) answer.
	Stream bool `yaml:"stream,omitempty" json:"stream,omitempty" jsonschema_description:"ask for a streamed (SSE) answer"`
	// Prompt is the user's message; empty is DefaultPrompt. It may use
	// {{entry}} and {{token}}.
	Prompt string `yaml:"prompt,omitempty" json:"prompt,omitempty" jsonschema_description:"the user message; may use {{entry}} and {{token}}; empty is the seed prompt"`
	// Model is the model group asked for; empty is DefaultModelGroup.
	Model string `yaml:"model,omitempty" json:"model,omitempty" jsonschema_description:"model group asked for (default repro-model)"`
	// Body holds extra top-level body fields, for example
	// {guardrails: [block-mcp]}; they override the built ones.
	Body map[string]any `yaml:"body,omitempty" json:"body,omitempty" jsonschema_description:"extra top-level body fields, e.g. {guardrails: [block-mcp]}"`
	// Headers are extra request headers.
	Headers map[string]string `yaml:"headers,omitempty" json:"headers,omitempty" jsonschema_description:"extra request headers"`
}

// Faults are the faults armed for a scenario, on each fake.
type Faults struct {
	// Upstream faults act on the model API fake.
	Upstream []upstream.Fault `yaml:"upstream,omitempty" json:"upstream,omitempty" jsonschema_description:"faults of the model upstream fake"`
	// MCP faults act on the ledger MCP server.
	MCP []ledger.Fault `yaml:"mcp,omitempty" json:"mcp,omitempty" jsonschema_description:"faults of the ledger MCP server"`
	// Target faults act on the target's process: a kill, then its resume
	// (see TargetFault). At most one.
	Target []TargetFault `yaml:"target,omitempty" json:"target,omitempty" jsonschema:"maxItems=1" jsonschema_description:"faults of the target's process: [{kill: {after, tool, signal, grace, delay}, times}] kills its process group at the point and starts its resume command (target file resume), once or N times; one run is all its lives. A target without resume skips the scenario; the scenario gets fakes and a target of its own"`
}

// Dialects returns the model API dialects the scenario's upstream faults act
// on, in fault order, or nil when any of them (or an MCP fault) can act on
// every dialect: a target that calls none of them cannot meet the
// scenario's faults (see target.Calls).
func (s *Scenario) Dialects() []string {
	if len(s.Faults.MCP) > 0 {
		return nil
	}
	var out []string
	for _, f := range s.Faults.Upstream {
		if f.Endpoint == "" {
			return nil
		}
		if !slices.Contains(out, f.Endpoint) {
			out = append(out, f.Endpoint)
		}
	}
	return out
}

// MCP is how the target reaches the MCP server. Its zero value leaves
// everything to the target.
type MCP struct {
	// Transport is the MCP transport the scenario runs over: MCPTransportHTTP
	// or MCPTransportStdio; "" is the one its MCP faults need, or whichever
	// the target uses (see Scenario.MCPTransport).
	Transport wire.MCPTransport `yaml:"transport,omitempty" json:"transport,omitempty" jsonschema:"enum=http,enum=stdio" jsonschema_description:"http (Streamable HTTP) or stdio (the target spawns the ledger as a process, replaycheck ledger-stdio URL, one run's own); unset: the one the MCP faults need, or whichever the target uses"`
	// Relay replaces the ledger's tools with those of a real MCP server at
	// this Streamable HTTP URL: each call forwarded once, the MCP faults
	// applied at the forwarding point (see ledger.Forward).
	Relay string `yaml:"relay,omitempty" json:"relay,omitempty" jsonschema:"format=uri" jsonschema_description:"forward to the real MCP server at this Streamable HTTP URL instead of the ledger's own tools: the target sees that server's tools, each call is forwarded once, the MCP faults apply at the forwarding point, and writes are the forwarded calls of tools not annotated readOnlyHint that the server answered (not isError); the scenario then gets fakes and a target of its own"`
	// Command replaces the ledger's tools with those of a real MCP server
	// started with this argv (over stdio), once per run, in the scenario
	// file's directory.
	// Its arguments may use {{token}} and {{entry}}, filled in per run.
	Command []string `yaml:"command,omitempty" json:"command,omitempty" jsonschema:"minItems=1" jsonschema_description:"forward to a real MCP server started with this argv over stdio, once per run (see relay), in this scenario file's directory, so that relative paths ([node, server.js], [./server]) name files next to it, like a cassette's; may use {{token}} and {{entry}} (the run's), so that each run's server keeps its state apart"`
	// Env is added to Command's environment; its values may use {{token}}
	// and {{entry}} too. Nil adds nothing.
	Env map[string]string `yaml:"env,omitempty" json:"env,omitempty" jsonschema_description:"with command: environment added for it (it starts from the scrubbed one client targets get, see pass_env), e.g. MEMORY_FILE_PATH: /tmp/memory-{{token}}.jsonl; values may use {{token}} and {{entry}}"`
	// PassEnv names variables of replaycheck's environment Command gets
	// as they are (see process.Env).
	PassEnv []string `yaml:"pass_env,omitempty" json:"pass_env,omitempty" jsonschema_description:"variables of replaycheck's environment passed to mcp.command as they are; nothing else is but PATH, HOME, USER, LOGNAME, SHELL, TERM, TZ, TMPDIR, LANG, LANGUAGE and LC_* (an unset name is left out; values of secret-named ones are masked in its stderr)"`
	// Install says how to install Command's program, shown when it is not
	// found.
	Install string `yaml:"install,omitempty" json:"install,omitempty" jsonschema_description:"with command: how to install it, shown when it is not found or not executable, e.g. pip install my-mcp-server"`
	// Cassette replaces the ledger's tools with those of a real MCP server
	// recorded in an MCP cassette (see mcp_cassette.go), answered offline.
	Cassette string `yaml:"cassette,omitempty" json:"cassette,omitempty" jsonschema:"minLength=1" jsonschema_description:"replay a real MCP server offline from an MCP cassette file (or a directory of *.jsonl ones) recorded by serve --mcp-relay URL --record DIR (in DIR/mcp/), relative to this scenario file: the target sees the recorded tools, each call is answered from the recorded call of the same tool and arguments (a call never recorded gets an MCP error and counts as a cassette miss), and the MCP faults and writes are as with relay"`
	// Protocol pins the MCP protocol version the ledger speaks in this
	// scenario (ledger.Config.Protocol); "" leaves it to the target file's
	// mcp.protocol, else the ledger negotiates as a current server does.
	Protocol wire.MCPProtocol `yaml:"protocol,omitempty" json:"protocol,omitempty" jsonschema:"enum=2026-07-28,enum=2025-11-25,enum=2025-06-18,enum=2025-03-26,enum=2024-11-05" jsonschema_description:"pin the MCP protocol version the ledger speaks: 2026-07-28 (stateless: server/discover, no initialize; a request whose stream broke must be re-issued) or an initialize-era one (2025-11-25, 2025-06-18, 2025-03-26, 2024-11-05: no server/discover; that version and the older ones a client initializes with, as a server of that release serves); unset, the target file's mcp.protocol, else the ledger negotiates as a current server does (2026-07-28 to clients that ask for it, the version a client initializes with otherwise). The scenario then gets fakes and a target of its own"`
	// HonourCancellation, when set, says whether the ledger's tools honour
	// cancellation (ledger.Config.HonourCancellation); nil leaves it to the
	// target file's mcp.honour_cancellation (default false).
	HonourCancellation *bool `yaml:"honour_cancellation,omitempty" json:"honour_cancellation,omitempty" jsonschema_description:"the ledger honours cancellation as the 2026-07-28 specification asks a server to: a call whose request stream closed (or that the client cancelled) before its write committed writes nothing; unset, the target file's mcp.honour_cancellation (default false: a call writes once it ran, as most servers do). The scenario then gets fakes and a target of its own"`
	// Writes, with Relay, Command or Cassette, names exactly the server's
	// tools whose calls write; unset, a tool writes unless annotated
	// readOnlyHint.
	Writes []string `yaml:"writes,omitempty" json:"writes,omitempty" jsonschema_description:"with relay, command or cassette: exactly the server's tools whose calls write (unset: every tool not annotated readOnlyHint: true)"`

	// cassette is Cassette as the loader read it.
	cassette *mcpcassette.Cassette
	// dir is the directory of the scenario file, Command's working
	// directory; "" (a scenario not loaded from a file) is replaycheck's own.
	dir string
}

// Forward returns the real MCP server the scenario forwards to (or the
// cassette it replays, as the loader read it), or nil when it runs on the
// ledger's own tools. Its Command and Env (sorted by name) are as written:
// {{token}} and {{entry}} are filled in per run (target.RenderForward); its
// Dir is the scenario file's directory.
func (m *MCP) Forward() *ledger.Forward {
	if m == nil || (m.Relay == "" && len(m.Command) == 0 && m.Cassette == "") {
		return nil
	}
	fwd := &ledger.Forward{URL: m.Relay, Command: m.Command, Cassette: m.cassette, Writes: m.Writes}
	if len(m.Command) > 0 {
		fwd.Dir, fwd.PassEnv, fwd.Install = m.dir, m.PassEnv, m.Install
	}
	for _, k := range slices.Sorted(maps.Keys(m.Env)) {
		fwd.Env = append(fwd.Env, k+"="+m.Env[k])
	}
	return fwd
}

// Gateway holds knobs of the built-in gateway target that a scenario needs.
// Zero values keep the target's defaults.
type Gateway struct {
	// NumRetries is the router's retries per model group; nil keeps the
	// default (2), 0 means none.
	NumRetries *int `yaml:"num_retries,omitempty" json:"num_retries,omitempty" jsonschema:"minimum=0" jsonschema_description:"router retries per model group (default 2; 0 for none)"`
	// Fallbacks maps a model group to the group tried after it, as in the
	// seed's config-stream.yaml ({repro-model: backup-model}).
	Fallbacks map[string]string `yaml:"fallbacks,omitempty" json:"fallbacks,omitempty" jsonschema_description:"model group fallbacks, e.g. {repro-model: backup-model}"`
	// ToolTimeout bounds one MCP tool call.
	ToolTimeout fault.Duration `yaml:"tool_timeout,omitempty" json:"tool_timeout,omitempty" jsonschema_description:"bound of one MCP tool call, e.g. 100ms"`
	// StreamIdleTimeout gives up on a streamed model answer that sends
	// nothing for this long.
	StreamIdleTimeout fault.Duration `yaml:"stream_idle_timeout,omitempty" json:"stream_idle_timeout,omitempty" jsonschema_description:"give up on a streamed model answer that sends nothing for this long, e.g. 500ms (default 5s)"`
	// Isolated runs the scenario on a target of its own even without other
	// knobs, for state the target keeps across requests (a circuit breaker).
	Isolated bool `yaml:"isolated,omitempty" json:"isolated,omitempty" jsonschema_description:"run on a target of its own even without other knobs"`
}

// Isolated reports whether the scenario needs fakes and a target of its own:
// it forwards to a real MCP server, sets gateway knobs, annotations or
// ledger settings (global to a ledger), or arms MCP
// faults (a dropped, refused or slow call counts against a target's
// per-server circuit breaker, which concurrent scenarios would feel), or
// kills the target (faults.target).
func (s *Scenario) Isolated() bool {
	return s.Gateway != nil || len(s.Annotations) > 0 || len(s.Faults.MCP) > 0 || s.Resumes() || s.MCPTransport() == wire.MCPTransportStdio ||
		s.MCP.Forward() != nil || s.MCP.Ledger() != (LedgerSettings{})
}

// MCPTransport returns the MCP transport the scenario runs over: its
// mcp.transport, else the one its MCP faults need (ledger.Fault.Transport;
// Parse refuses a scenario whose faults need two, or another than
// mcp.transport), else MCPTransportAny. A stdio scenario is isolated: its
// ledger is the run's own, so every spawn arriving there is the run's.
func (s *Scenario) MCPTransport() wire.MCPTransport {
	if s.MCP != nil && s.MCP.Transport != wire.MCPTransportAny {
		return s.MCP.Transport
	}
	for _, f := range s.Faults.MCP {
		if t := f.Transport(); t != wire.MCPTransportAny {
			return t
		}
	}
	return wire.MCPTransportAny
}

// AllRequests returns Request followed by Requests. A client scenario
// (expect.client) may set neither: it then has one request, one run of the
// client's command. A request without an endpoint (allowed in client
// scenarios only) is a chat request.
func (s *Scenario) AllRequests() []Request {
	var out []Request
	if s.Request != nil {
		out = append(out, *s.Request)
	}
	out = append(out, s.Requests...)
	if len(out) == 0 {
		out = append(out, Request{})
	}
	for i := range out {
		if out[i].Endpoint == "" {
			out[i].Endpoint = Chat
		}
	}
	return out
}

// Script returns the scenario's model script, the seed's when it has none
// (also when a cassette answers instead; see Model).
func (s *Scenario) Script() upstream.Script {
	if len(s.Model.Script.Steps) == 0 {
		return upstream.DefaultScript()
	}
	return s.Model.Script
}

// Runs returns how many times the scenario runs on each target: its Repeat,
// or 1 when it sets none.
func (s *Scenario) Runs() int {
	if s.Repeat == nil {
		return 1
	}
	return *s.Repeat
}
