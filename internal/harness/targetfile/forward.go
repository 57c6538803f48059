package targetfile

import (
	"net/url"

	"github.com/replaycheck/replaycheck/fakes/fault"

	"github.com/replaycheck/replaycheck/fakes/upstream"
	"github.com/replaycheck/replaycheck/internal/harness/scenario"
	"github.com/replaycheck/replaycheck/internal/harness/target"
	"github.com/replaycheck/replaycheck/internal/wire"
)

// MCPFile is a target file's mcp: the real MCP server every scenario run on
// the target forwards to in place of the ledger's own tools, unless the
// scenario names its own (target.Forward), and the ledger settings
// (protocol, honour_cancellation) of every run unless the scenario chooses
// its own (target.Traits.Ledger). Either part may be set alone.
type MCPFile struct {
	// Protocol pins the MCP protocol version the ledger (or the forwarder)
	// speaks in every run on the target; "" negotiates.
	Protocol wire.MCPProtocol `yaml:"protocol,omitempty" json:"protocol,omitempty" jsonschema:"enum=2026-07-28,enum=2025-11-25,enum=2025-06-18,enum=2025-03-26,enum=2024-11-05" jsonschema_description:"pin the MCP protocol version the ledger (or the forwarder) speaks in every run on this target, unless the scenario sets its own mcp.protocol: 2026-07-28 (stateless: server/discover, no initialize) or 2025-11-25, 2025-06-18, 2025-03-26, 2024-11-05 (no server/discover; that version and the older ones a client initializes with); unset, it negotiates as a current server does. May be set without relay or command. Each run then has fakes and an instance of its own"`
	// HonourCancellation makes the ledger honour cancellation in every run
	// on the target, unless the scenario sets its own.
	HonourCancellation *bool `yaml:"honour_cancellation,omitempty" json:"honour_cancellation,omitempty" jsonschema_description:"the ledger honours cancellation in every run on this target, unless the scenario sets its own mcp.honour_cancellation: a call whose request stream closed before its write committed writes nothing. May be set without relay or command. Each run then has fakes and an instance of its own"`
	// Relay is the server's Streamable HTTP URL.
	Relay string `yaml:"relay,omitempty" json:"relay,omitempty" jsonschema_description:"forward every run to the real MCP server at this Streamable HTTP URL instead of the ledger's own tools (as a scenario's mcp.relay); may use ${ENV}"`
	// Command is the server's argv, spawned once per run over stdio.
	Command []string `yaml:"command,omitempty" json:"command,omitempty" jsonschema:"minItems=1" jsonschema_description:"forward every run to a real MCP server started with this argv over stdio, once per run, in the target file's directory; may use ${ENV}, {{token}} and {{entry}} (the run's), so that each run's server keeps its state apart"`
	// Env is added to the command's environment.
	Env map[string]string `yaml:"env,omitempty" json:"env,omitempty" jsonschema_description:"environment added for the command (it starts from the scrubbed one client targets get, see pass_env), e.g. MEMORY_FILE_PATH: \"${MEMORY_DIR}/memory-{{token}}.jsonl\"; values may use ${ENV}, {{token}} and {{entry}}"`
	// PassEnv names variables of replaycheck's environment the command
	// gets as they are, as a client's pass_env.
	PassEnv []string `yaml:"pass_env,omitempty" json:"pass_env,omitempty" jsonschema_description:"variables of replaycheck's environment passed to the command as they are; nothing else is but PATH, HOME, USER, LOGNAME, SHELL, TERM, TZ, TMPDIR, LANG, LANGUAGE and LC_* (an unset name is left out; values of secret-named ones are masked in its stderr)"`
	// Install says how to install the command, shown when it is not found.
	Install string `yaml:"install,omitempty" json:"install,omitempty" jsonschema_description:"how to install the command, shown when it is not found or not executable, e.g. npm install -g my-mcp-server"`
	// Writes names exactly the server's tools whose calls write.
	Writes []string `yaml:"writes,omitempty" json:"writes,omitempty" jsonschema_description:"exactly the server's tools whose calls write (unset: every tool not annotated readOnlyHint: true)"`
	// ConnectTimeout bounds connecting to the server and listing its tools.
	ConnectTimeout fault.Duration `yaml:"connect_timeout,omitempty" json:"connect_timeout,omitempty" jsonschema_description:"deadline of connecting to the server and listing its tools, per run (default 30s; a node server spawned per run at --parallel 8 on a loaded machine can take longer)"`
	// Calls maps the tools scenarios call to the server's.
	Calls map[string]MCPCall `yaml:"calls,omitempty" json:"calls,omitempty" jsonschema_description:"for scenarios written for the ledger: each key a tool their model scripts call (commit_write, the seed's), each value the call of one of the server's tools the model makes instead; MCP faults naming the key name that tool instead. Scenarios that forward on their own (mcp.relay, mcp.command) are left as they are"`
}

// MCPCall is the call of a forwarded server's tool a model makes in place of
// a scripted one (MCPFile.Calls).
type MCPCall struct {
	// Call is the server's tool.
	Call string `yaml:"call" json:"call" jsonschema:"minLength=1" jsonschema_description:"the server's tool, e.g. create_entities"`
	// Arguments replace the scripted call's.
	Arguments map[string]any `yaml:"arguments,omitempty" json:"arguments,omitempty" jsonschema_description:"the call's arguments, replacing the scripted call's; strings may use {{entry}} and {{token}}, e.g. {entities: [{name: \"{{entry}}\", entityType: run, observations: [replaycheck]}]}"`
}

// loadMCP checks a target file's mcp and returns its target.Forward (nil
// when it names no server) and its ledger settings; nil and the zero value
// when m is nil.
func loadMCP(f *source, m *MCPFile) (*target.Forward, scenario.LedgerSettings, error) {
	if m == nil {
		return nil, scenario.LedgerSettings{}, nil
	}
	settings := scenario.LedgerSettings{Protocol: m.Protocol, HonourCancellation: m.HonourCancellation}
	if err := m.Protocol.Check(); err != nil {
		return nil, settings, f.errorf([]any{"mcp", "protocol"}, "mcp.protocol %q: %v", m.Protocol, err)
	}
	if m.Relay == "" && m.Command == nil && settings != (scenario.LedgerSettings{}) {
		for _, k := range []string{"env", "pass_env", "install", "writes", "connect_timeout", "calls"} {
			if f.node([]any{"mcp", k}) != nil {
				return nil, settings, f.errorf([]any{"mcp", k}, "mcp.%s belongs to a forwarded server; set mcp.relay or mcp.command too (mcp.protocol and mcp.honour_cancellation alone apply to the ledger)", k)
			}
		}
		return nil, settings, nil
	}
	fwd, err := loadForward(f, m)
	return fwd, settings, err
}

// loadForward checks the server a target file's mcp forwards to and returns
// its target.Forward.
func loadForward(f *source, m *MCPFile) (*target.Forward, error) {
	switch {
	case m.Relay == "" && m.Command == nil:
		return nil, f.errorf([]any{"mcp"}, "mcp: set relay (the Streamable HTTP URL of the MCP server to forward to) or command (its argv, spawned per run), or protocol or honour_cancellation (the ledger's)")
	case m.Relay != "" && m.Command != nil:
		return nil, f.errorf([]any{"mcp", "command"}, "mcp.relay and mcp.command: set one, the MCP server to forward to")
	case m.Relay != "":
		if u, err := url.Parse(m.Relay); err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
			return nil, f.errorf([]any{"mcp", "relay"}, "mcp.relay %q: want an http or https URL of a Streamable HTTP MCP endpoint", m.Relay)
		}
		for _, c := range []struct {
			name string
			set  bool
		}{{"env", m.Env != nil}, {"pass_env", m.PassEnv != nil}, {"install", m.Install != ""}} {
			if c.set {
				return nil, f.errorf([]any{"mcp", c.name}, "mcp.%s belongs to mcp.command; the server at mcp.relay runs in its own", c.name)
			}
		}
	case len(m.Command) == 0 || m.Command[0] == "":
		return nil, f.errorf([]any{"mcp", "command"}, "mcp.command: want the server's argv, such as [npx, -y, my-mcp-server]")
	}
	for i, a := range m.Command {
		if err := f.check(a, target.ForwardVars, "mcp", "command", i); err != nil {
			return nil, err
		}
	}
	for k, v := range m.Env {
		if err := f.check(v, target.ForwardVars, "mcp", "env", k); err != nil {
			return nil, err
		}
	}
	if err := checkPassEnv(f, m.PassEnv, "mcp", "pass_env"); err != nil {
		return nil, err
	}
	for i, w := range m.Writes {
		if w == "" {
			return nil, f.errorf([]any{"mcp", "writes", i}, "mcp.writes: a tool name is empty")
		}
	}
	fwd := &target.Forward{Relay: m.Relay, Command: m.Command, Env: m.Env, PassEnv: m.PassEnv, Install: m.Install, Writes: m.Writes, ConnectTimeout: m.ConnectTimeout.D()}
	if m.Command != nil {
		fwd.Dir = f.dir()
	}
	if m.Writes == nil && f.node([]any{"mcp", "writes"}) != nil {
		fwd.Writes = []string{} // writes: [] says no tool writes
	}
	for name, c := range m.Calls {
		if name == "" {
			return nil, f.errorf([]any{"mcp", "calls"}, "mcp.calls: a tool name is empty")
		}
		if c.Call == "" {
			return nil, f.errorf([]any{"mcp", "calls", name}, "mcp.calls.%s: want the server's tool to call instead, e.g. {call: create_item, arguments: {name: \"{{entry}}\"}}", name)
		}
		if err := checkValue(f, c.Arguments, target.ForwardVars, "mcp", "calls", name, "arguments"); err != nil {
			return nil, err
		}
		if fwd.Calls == nil {
			fwd.Calls = map[string]upstream.Step{}
		}
		fwd.Calls[name] = upstream.Step{Call: c.Call, Arguments: c.Arguments}
	}
	return fwd, nil
}
