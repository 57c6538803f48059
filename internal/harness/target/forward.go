package target

import (
	"fmt"
	"maps"
	"slices"
	"strings"
	"time"

	"github.com/replaycheck/replaycheck/fakes/ledger"
	"github.com/replaycheck/replaycheck/fakes/upstream"
	"github.com/replaycheck/replaycheck/internal/harness/scenario"
)

// Forward is the real MCP server a target forwards to in place of the
// ledger's own tools (a target file's mcp, Traits.Forward): every scenario
// run on the target forwards to it (see ledger.Forward) unless the scenario
// names a server of its own (mcp.relay or mcp.command). Each such run has
// fakes, a forwarder and an instance of its own, and with Command a server
// process of its own.
type Forward struct {
	// Relay is the server's Streamable HTTP URL; exactly one of Relay and
	// Command is set.
	Relay string
	// Command is the server's argv, spawned once per run over stdio; its
	// arguments may use the ForwardVars ({{token}}, {{entry}}), so that each
	// run's server can keep its state apart.
	Command []string
	// Env is added to the environment of Command's process; its values may
	// use the ForwardVars too. Nil adds nothing.
	Env map[string]string
	// PassEnv names variables of replaycheck's environment Command's
	// process gets as they are (see process.Env).
	PassEnv []string
	// Install says how to install Command's program, shown when it is not
	// found; "" says nothing.
	Install string
	// Dir is Command's working directory; "" is replaycheck's own.
	Dir string
	// ConnectTimeout is ledger.Forward.ConnectTimeout (0: its default).
	ConnectTimeout time.Duration
	// Writes, when non-nil, names exactly the server's tools whose calls
	// write (see ledger.Forward.Writes).
	Writes []string
	// Calls maps a tool the scenarios' model scripts call (the ledger's
	// commit_write in the seed) to the call of the server's tool the model
	// makes instead: its name and its arguments, which replace the script's
	// (their strings may use {{entry}} and {{token}}). MCP faults naming the
	// mapped tool name the server's instead. Nil maps nothing.
	Calls map[string]upstream.Step
}

// For returns the server of the run with token: Command's arguments and
// Env's values rendered with the run's token and entry (see RenderForward).
func (f *Forward) For(token string) (*ledger.Forward, error) {
	out := &ledger.Forward{URL: f.Relay, Command: f.Command, PassEnv: f.PassEnv, Install: f.Install, Writes: f.Writes, Dir: f.Dir, ConnectTimeout: f.ConnectTimeout}
	for _, k := range slices.Sorted(maps.Keys(f.Env)) {
		out.Env = append(out.Env, k+"="+f.Env[k])
	}
	return RenderForward(out, token)
}

// RenderForward returns a copy of fwd for the run with token: its Command's
// arguments and its Env's values ("NAME=value", the name left as it is)
// with the ForwardVars ({{token}}, {{entry}}) filled in, so that each run's
// server keeps its state apart. A target file's mcp and a scenario's own
// mcp.command are rendered by it alike. fwd is not changed.
func RenderForward(fwd *ledger.Forward, token string) (*ledger.Forward, error) {
	v := templateVars{Token: token, Entry: scenario.Entry(token)}
	names := ForwardVars.names()
	out := *fwd
	out.Command, out.Env = nil, nil
	for _, a := range fwd.Command {
		r, err := render(a, names, v)
		if err != nil {
			return nil, fmt.Errorf("rendering the mcp command's argument %q: %w", a, err)
		}
		out.Command = append(out.Command, r)
	}
	for _, kv := range fwd.Env {
		k, val, _ := strings.Cut(kv, "=")
		r, err := render(val, names, v)
		if err != nil {
			return nil, fmt.Errorf("rendering the mcp env %s: %w", k, err)
		}
		out.Env = append(out.Env, k+"="+r)
	}
	return &out, nil
}

// Scenario returns s as it runs on a target forwarding to f: s itself when
// s forwards to a server of its own, or when Calls maps none of its calls
// and faults; otherwise a copy whose script steps calling a tool in Calls
// make the mapped call instead, and whose MCP faults naming such a tool
// name the mapped one. A cassette's recorded calls are left as recorded.
func (f *Forward) Scenario(s *scenario.Scenario) *scenario.Scenario {
	if s.MCP.Forward() != nil || len(f.Calls) == 0 {
		return s
	}
	mapped := false
	var script upstream.Script
	if s.Model.Cassette == "" {
		for _, st := range s.Script().Steps {
			if c, ok := f.Calls[st.Call]; ok && st.Call != "" {
				st.Call, st.Arguments = c.Call, c.Arguments
				mapped = true
			}
			script.Steps = append(script.Steps, st)
		}
	}
	faults := slices.Clone(s.Faults.MCP)
	for i := range faults {
		if c, ok := f.Calls[faults[i].Tool]; ok && faults[i].Tool != "" {
			faults[i].Tool = c.Call
			mapped = true
		}
	}
	if !mapped {
		return s
	}
	cp := *s
	if len(script.Steps) > 0 {
		cp.Model = scenario.Model{Script: script}
	}
	cp.Faults.MCP = faults
	return &cp
}
