package targetfile

import (
	"net"
	"os"
	"path/filepath"
	"strings"

	"github.com/replaycheck/replaycheck/fakes/fault"
	"github.com/replaycheck/replaycheck/internal/harness/scenario"
	"github.com/replaycheck/replaycheck/internal/harness/target"
	"github.com/replaycheck/replaycheck/internal/yamlfile"
)

// ProxyFile is a target file of kind proxy: a gateway or proxy that app
// requests are sent to, optionally started by the harness with a config
// rendered from the fakes' URLs.
type ProxyFile struct {
	// Kind is "proxy".
	Kind string `yaml:"kind" json:"kind" jsonschema:"enum=proxy" jsonschema_description:"proxy"`
	// Name names the target in reports; empty is the file's base name.
	Name string `yaml:"name,omitempty" json:"name,omitempty" jsonschema_description:"target name in reports (default: the file's base name)"`
	// Description says what the target is, for people.
	Description string `yaml:"description,omitempty" json:"description,omitempty" jsonschema_description:"what the target is, for people"`
	// URL is the proxy's base URL; /v1/chat/completions and so on are added.
	URL string `yaml:"url" json:"url" jsonschema:"minLength=1" jsonschema_description:"the proxy's base URL, e.g. http://127.0.0.1:{{port}}; may use ${ENV} and {{port}}"`
	// Headers are sent with every app request. Values may use ${ENV}; they
	// are never shown in reports, errors or output.
	Headers map[string]string `yaml:"headers,omitempty" json:"headers,omitempty" jsonschema_description:"request headers, e.g. Authorization: Bearer ${LITELLM_MASTER_KEY}; values are never shown"`
	// Bodies are, per endpoint (chat, responses, messages), top-level fields
	// set on the app request body the harness builds: how this proxy is told
	// to use the ledger. Strings may use {{mcp_url}} and the other fake
	// variables. Empty keeps the seed's LiteLLM tools entry.
	Bodies map[string]map[string]any `yaml:"bodies,omitempty" json:"bodies,omitempty" jsonschema_description:"per endpoint (chat, responses, messages): body fields set on each app request, e.g. tools: [{type: mcp, server_url: \"{{mcp_url}}\", …}]"`
	// Start, when set, starts the proxy once per run.
	Start *ProxyStart `yaml:"start,omitempty" json:"start,omitempty" jsonschema_description:"start the proxy once per run (and once per isolated scenario)"`
	// Fakes fixes the fakes' addresses, for a proxy whose config cannot be
	// templated; such a target's isolated scenarios run one at a time.
	Fakes *FakeAddrs `yaml:"fakes,omitempty" json:"fakes,omitempty" jsonschema_description:"fixed fake addresses, for proxies whose config cannot be templated"`
	// NumRetries is the retries the proxy is configured with, for the rules
	// that need it; nil is unknown (a scenario's num_retries knob wins).
	NumRetries *int `yaml:"num_retries,omitempty" json:"num_retries,omitempty" jsonschema:"minimum=0" jsonschema_description:"retries the proxy is configured with, for bounded-attempts (default unknown)"`
	// RetryAfterHint adds retry-after-ms and Retry-After to injected errors.
	RetryAfterHint fault.Duration `yaml:"retry_after_hint,omitempty" json:"retry_after_hint,omitempty" jsonschema_description:"add retry-after-ms/Retry-After of this duration to injected error responses (changes the behaviour under test; reported)"`
	// Install says how to install the start command, for the error when it
	// is not found or not executable.
	Install string `yaml:"install,omitempty" json:"install,omitempty" jsonschema_description:"how to install start.command, shown when it is not found or not executable, e.g. pip install 'litellm[proxy]'"`
	// Version says where the agent's version is read, for the matrix's
	// rows; nil names none.
	Version *VersionFile `yaml:"version,omitempty" json:"version,omitempty" jsonschema_description:"where the agent's version is read, for replaycheck matrix: {package: NPM_NAME, lock: package-lock.json} or {command: [argv]} (its first line of output)"`
	// MCP, when set, forwards every run to a real MCP server in place of
	// the ledger's own tools.
	MCP *MCPFile `yaml:"mcp,omitempty" json:"mcp,omitempty" jsonschema_description:"forward every scenario run on this target to a real MCP server in place of the ledger's own tools (unless the scenario names its own): {relay: URL} or {command: [...], env: {...}}, with writes and calls; and/or the ledger's protocol and honour_cancellation (unless the scenario sets its own); each run then has fakes, a forwarder and a proxy instance of its own"`
	// Resume, with Start, is the command that restarts the proxy after
	// each kill (a scenario's faults.target).
	Resume *ResumeFile `yaml:"resume,omitempty" json:"resume,omitempty" jsonschema_description:"with start: how to restart the proxy after the harness killed its process group (scenarios with faults.target): {command: [...], env: {...}}, templated as start.command and start.env with the killed life's {{port}}, {{config}} and {{run_dir}} (keep the proxy's store there), run in start.dir with env merged over start.env, its readiness probe awaited; the proxy resumes its own pending work from its store, the harness does not re-send the app request; without it those scenarios are skipped"`
}

// ProxyStart is how the harness starts a proxy.
type ProxyStart struct {
	// Command is the argv; it may use the fake variables, {{port}},
	// {{config}}, {{run_dir}}, {{replaycheck}} and the knob variables.
	Command []string `yaml:"command" json:"command" jsonschema:"minItems=1" jsonschema_description:"argv, e.g. [litellm, --config, \"{{config}}\", --port, \"{{port}}\"]; an argument rendering to several lines becomes several, an empty one is dropped"`
	// Config is a template file (relative to the target file) rendered into
	// a temporary file whose path is {{config}}.
	Config string `yaml:"config,omitempty" json:"config,omitempty" jsonschema_description:"config template file, relative to the target file; rendered into a temporary file whose path is {{config}}, removed at the end"`
	// ConfigDir is where the rendered config is written, relative to the
	// target file; empty is a temporary directory of the start's own.
	ConfigDir string `yaml:"config_dir,omitempty" json:"config_dir,omitempty" jsonschema_description:"directory the rendered config is written into (as .replaycheck-N-NAME), relative to the target file, for a config that names files by paths relative to itself (a LiteLLM custom guardrail module): e.g. . (default: a temporary directory of its own)"`
	// Env is added to the proxy's environment (values may use ${ENV} and
	// templates; they are never shown).
	Env map[string]string `yaml:"env,omitempty" json:"env,omitempty" jsonschema_description:"environment added for the proxy; values are never shown"`
	// PassEnv names variables of the harness's environment the proxy gets
	// as they are, as a client's pass_env.
	PassEnv []string `yaml:"pass_env,omitempty" json:"pass_env,omitempty" jsonschema_description:"variables of replaycheck's environment passed to the proxy as they are; nothing else is but PATH, HOME, USER, LOGNAME, SHELL, TERM, TZ, TMPDIR, LANG, LANGUAGE and LC_* (an unset name is left out; values of secret-named ones are masked in the output)"`
	// Dir is the working directory, relative to the target file.
	Dir string `yaml:"dir,omitempty" json:"dir,omitempty" jsonschema_description:"working directory, relative to the target file (default: the target file's directory)"`
	// Ready is the readiness probe.
	Ready Ready `yaml:"ready,omitempty" json:"ready,omitempty" jsonschema_description:"readiness probe"`
	// StopGrace is the time between SIGTERM and SIGKILL at the end.
	StopGrace fault.Duration `yaml:"stop_grace,omitempty" json:"stop_grace,omitempty" jsonschema_description:"time between SIGTERM and SIGKILL of the proxy's process group (default 5s)"`
}

// Ready is a readiness probe: GET URL until any HTTP answer arrives.
type Ready struct {
	// URL is probed; empty is the target's URL.
	URL string `yaml:"url,omitempty" json:"url,omitempty" jsonschema_description:"URL probed with GET until any HTTP answer (default: the target's url)"`
	// Timeout bounds the wait; zero is target.DefaultReadyTimeout.
	Timeout fault.Duration `yaml:"timeout,omitempty" json:"timeout,omitempty" jsonschema_description:"deadline of the probe (default 30s)"`
}

// FakeAddrs are fixed loopback addresses of the fakes.
type FakeAddrs struct {
	// Upstream is the model API fake's host:port, e.g. 127.0.0.1:8765.
	Upstream string `yaml:"upstream_addr,omitempty" json:"upstream_addr,omitempty" jsonschema_description:"the model API fake's host:port, e.g. 127.0.0.1:8765"`
	// MCP is the ledger's host:port, e.g. 127.0.0.1:8766.
	MCP string `yaml:"mcp_addr,omitempty" json:"mcp_addr,omitempty" jsonschema_description:"the ledger MCP server's host:port, e.g. 127.0.0.1:8766"`
}

// loadProxy builds the proxy target of a file of kind proxy.
func loadProxy(f *source) (target.Target, error) {
	spec, err := proxySpec(f)
	if err != nil {
		return nil, err
	}
	return target.NewProxy(spec), nil
}

// proxySpec decodes a file of kind proxy strictly, checks it and returns its
// target's spec.
func proxySpec(f *source) (target.ProxySpec, error) {
	var p ProxyFile
	if err := f.decode(&p); err != nil {
		return target.ProxySpec{}, err
	}
	t := target.ProxySpec{
		Name: f.name(p.Name), URL: p.URL, Headers: p.Headers, NumRetries: p.NumRetries,
		RetryAfterHint: p.RetryAfterHint.D(), Install: p.Install, Replaycheck: f.opts.Replaycheck,
	}
	dir := f.dir()
	fail := func(err error) (target.ProxySpec, error) { return target.ProxySpec{}, err }
	if strings.TrimSpace(p.URL) == "" {
		return fail(f.errorf([]any{"url"}, "a proxy target needs a url, e.g. http://127.0.0.1:4000"))
	}
	if err := f.check(p.URL, target.URLVars, "url"); err != nil {
		return fail(err)
	}
	for ep, body := range p.Bodies {
		if !scenario.Endpoint(ep).Valid() {
			return fail(f.errorf([]any{"bodies"}, "bodies: unknown endpoint %q; want %s", ep, scenario.EndpointNames()))
		}
		if err := checkValue(f, body, target.FakeVars, "bodies", ep); err != nil {
			return fail(err)
		}
		if t.Bodies == nil {
			t.Bodies = map[scenario.Endpoint]map[string]any{}
		}
		t.Bodies[scenario.Endpoint(ep)] = body
	}
	if p.NumRetries != nil && *p.NumRetries < 0 {
		return fail(f.errorf([]any{"num_retries"}, "num_retries %d: want 0 or more", *p.NumRetries))
	}
	if p.Fakes != nil {
		for _, a := range []struct{ key, addr string }{{"upstream_addr", p.Fakes.Upstream}, {"mcp_addr", p.Fakes.MCP}} {
			if a.addr == "" {
				continue
			}
			if _, _, err := net.SplitHostPort(a.addr); err != nil {
				return fail(f.errorf([]any{"fakes", a.key}, "%s %q: want host:port, e.g. 127.0.0.1:8765", a.key, a.addr))
			}
		}
		t.Fakes = &target.FakeAddrs{Upstream: p.Fakes.Upstream, MCP: p.Fakes.MCP}
	}
	if s := p.Start; s != nil {
		if len(s.Command) == 0 {
			return fail(f.errorf([]any{"start"}, "start needs a command (an argv list)"))
		}
		for i, a := range s.Command {
			if err := f.check(a, target.StartVars, "start", "command", i); err != nil {
				return fail(err)
			}
		}
		for k, v := range s.Env {
			if err := f.check(v, target.StartVars, "start", "env", k); err != nil {
				return fail(err)
			}
			if f.takesEnv("start", "env", k) {
				t.Secrets = append(t.Secrets, v)
			}
		}
		if err := f.check(s.Ready.URL, target.ProxyVars, "start", "ready", "url"); err != nil {
			return fail(err)
		}
		start := &target.ProxyStart{
			Command: s.Command, Env: s.Env, PassEnv: s.PassEnv,
			ReadyURL: s.Ready.URL, ReadyTimeout: s.Ready.Timeout.D(), StopGrace: s.StopGrace.D(),
		}
		if s.Config != "" {
			path := s.Config
			if !filepath.IsAbs(path) {
				path = filepath.Join(dir, path)
			}
			b, err := yamlfile.ReadFile(path, MaxSize)
			if err != nil {
				return fail(f.errorf([]any{"start", "config"}, "config template %s: %s", path, yamlfile.DescribeReadError(err)))
			}
			if err := target.CheckTemplate(string(b), target.ProxyVars); err != nil {
				return fail(f.errorf([]any{"start", "config"}, "config template %s: %v", path, err))
			}
			start.Config = string(b)
			start.ConfigName = strings.TrimSuffix(filepath.Base(path), ".tmpl")
		}
		if s.ConfigDir != "" && s.Config == "" {
			return fail(f.errorf([]any{"start", "config_dir"}, "config_dir without config: there is no config to render"))
		}
		if s.ConfigDir != "" {
			cdir := s.ConfigDir
			if !filepath.IsAbs(cdir) {
				cdir = filepath.Join(dir, cdir)
			}
			// Absolute: {{config}} is handed to a proxy that runs in
			// start.dir, not in the harness's working directory.
			abs, err := filepath.Abs(cdir)
			if err != nil {
				return fail(f.errorf([]any{"start", "config_dir"}, "config_dir %s: %v", cdir, err))
			}
			if fi, err := os.Stat(abs); err != nil || !fi.IsDir() {
				return fail(f.errorf([]any{"start", "config_dir"}, "config_dir %s is no directory to render the config into", abs))
			}
			start.ConfigDir = abs
		}
		if err := checkPassEnv(f, s.PassEnv, "start", "pass_env"); err != nil {
			return fail(err)
		}
		start.Dir = s.Dir
		if !filepath.IsAbs(start.Dir) {
			start.Dir = filepath.Join(dir, start.Dir)
		}
		t.Start = start
	} else if p.Fakes == nil || p.Fakes.Upstream == "" || p.Fakes.MCP == "" {
		return fail(f.errorf(nil, "a proxy the harness does not start must name the fakes' fixed addresses (fakes: {upstream_addr, mcp_addr}) it is configured with; or set start to have it started with a rendered config"))
	}
	if err := checkVersion(f, p.Version); err != nil {
		return fail(err)
	}
	fwd, settings, err := loadMCP(f, p.MCP)
	if err != nil {
		return fail(err)
	}
	t.Forward, t.Ledger = fwd, settings
	if p.Resume != nil && p.Start == nil {
		return fail(f.errorf([]any{"resume"}, "resume needs start: the harness restarts only a proxy it started"))
	}
	if t.Resume, err = loadResume(f, p.Resume, target.StartVars); err != nil {
		return fail(err)
	}
	t.Secrets = append(t.Secrets, f.secrets...)
	return t, nil
}

// checkValue checks the templates of every string in a decoded value (a
// body, a call's arguments) against vs.
func checkValue(f *source, x any, vs target.Vars, path ...any) error {
	switch v := x.(type) {
	case string:
		return f.check(v, vs, path...)
	case map[string]any:
		for k, e := range v {
			if err := checkValue(f, e, vs, append(path, k)...); err != nil {
				return err
			}
		}
	case []any:
		for i, e := range v {
			if err := checkValue(f, e, vs, append(path, i)...); err != nil {
				return err
			}
		}
	}
	return nil
}
