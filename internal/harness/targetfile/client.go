package targetfile

import (
	"path/filepath"
	"slices"
	"strings"

	"github.com/replaycheck/replaycheck/fakes/fault"
	"github.com/replaycheck/replaycheck/internal/dialect"
	"github.com/replaycheck/replaycheck/internal/harness/target"
)

// ClientFile is a target file of kind client: a command (an agent, an SDK
// program) run once per scenario request with an environment that points it
// at the fakes. Its exit code and output are the client-side outcome.
type ClientFile struct {
	// Kind is "client".
	Kind string `yaml:"kind" json:"kind" jsonschema:"enum=client" jsonschema_description:"client"`
	// Name names the target in reports; empty is the file's base name.
	Name string `yaml:"name,omitempty" json:"name,omitempty" jsonschema_description:"target name in reports (default: the file's base name)"`
	// Description says what the target is, for people.
	Description string `yaml:"description,omitempty" json:"description,omitempty" jsonschema_description:"what the target is, for people"`
	// Dialects are the model API dialects the client calls; nil is not
	// declared.
	Dialects []string `yaml:"dialects,omitempty" json:"dialects,omitempty" jsonschema:"uniqueItems=true,enum=chat,enum=responses,enum=messages,enum=gemini" jsonschema_description:"the model API dialects the client calls (chat, responses, messages, gemini); a scenario whose faults act only on others is skipped before it runs (default: each run shows which, and a scenario whose faults met none of its requests is skipped then)"`
	// Command is the argv, run once per scenario request.
	Command []string `yaml:"command" json:"command" jsonschema:"minItems=1" jsonschema_description:"argv, e.g. [\"${AGENT_BIN:-bin/agent}\", --naive-retry, \"2\"]; may use ${ENV} and {{prompt}}, {{token}}, {{entry}}, {{upstream_url}}, {{mcp_url}}, {{ledger_stdio_json}} (the stdio ledger for clients that spawn MCP servers)"`
	// Env is added to the environment the harness sets (OPENAI_BASE_URL,
	// ANTHROPIC_BASE_URL, OPENAI_API_KEY, ANTHROPIC_API_KEY,
	// REPLAYCHECK_MCP_URL, REPLAYCHECK_PROMPT, REPLAYCHECK_TOKEN); it wins.
	Env map[string]string `yaml:"env,omitempty" json:"env,omitempty" jsonschema_description:"environment added (wins over the harness's); values may use ${ENV} and the same templates and are never shown"`
	// PassEnv names variables of the harness's environment the command gets
	// as they are, beyond the few every process gets (PATH, HOME, the
	// locale, TMPDIR, TERM, TZ, USER, LOGNAME, SHELL).
	PassEnv []string `yaml:"pass_env,omitempty" json:"pass_env,omitempty" jsonschema_description:"variables of replaycheck's environment passed to the command as they are; nothing else is but PATH, HOME, USER, LOGNAME, SHELL, TERM, TZ, TMPDIR, LANG, LANGUAGE and LC_* (an unset name is left out; values of secret-named ones are masked in the output)"`
	// Install says how to install the command, for the error when it is
	// not found or not executable.
	Install string `yaml:"install,omitempty" json:"install,omitempty" jsonschema_description:"how to install the command, shown when it is not found or not executable, e.g. make clients"`
	// Dir is the working directory, relative to the target file.
	Dir string `yaml:"dir,omitempty" json:"dir,omitempty" jsonschema_description:"working directory, relative to the target file (default: the target file's directory)"`
	// Timeout bounds one run of the command; zero leaves only the scenario's
	// deadline.
	Timeout fault.Duration `yaml:"timeout,omitempty" json:"timeout,omitempty" jsonschema_description:"deadline of one run; past it the command's process group is stopped (default: the scenario's deadline)"`
	// StopGrace is the time between SIGTERM and SIGKILL of a command past
	// its deadline.
	StopGrace fault.Duration `yaml:"stop_grace,omitempty" json:"stop_grace,omitempty" jsonschema_description:"time between SIGTERM and SIGKILL of the command's process group past its deadline (default 5s)"`
	// NumRetries is the retries the client is configured with, for the rules
	// that need it; nil is unknown.
	NumRetries *int `yaml:"num_retries,omitempty" json:"num_retries,omitempty" jsonschema:"minimum=0" jsonschema_description:"retries the client makes of one model call, for bounded-attempts (default unknown)"`
	// RetryAfterHint adds retry-after-ms and Retry-After to injected errors.
	RetryAfterHint fault.Duration `yaml:"retry_after_hint,omitempty" json:"retry_after_hint,omitempty" jsonschema_description:"add retry-after-ms/Retry-After of this duration to injected error responses, so SDK clients that honour them finish fast (changes the behaviour under test; reported)"`
	// Via puts the client in front of a proxy: a proxy target file
	// (relative to this file) or builtin:NAME, started once per client run
	// with that run's fake addresses; the client's model API base URLs point
	// at it, its MCP URL at the ledger.
	Via string `yaml:"via,omitempty" json:"via,omitempty" jsonschema_description:"a proxy the client's model calls go through, for gateways that never run tools themselves: a proxy target file (relative to this file) or builtin:NAME; started per client run, wired to that run's fakes; OPENAI_BASE_URL, ANTHROPIC_BASE_URL and {{upstream_url}} then point at it and the API keys are its Authorization bearer"`
	// Version says where the agent's version is read, for the matrix's
	// rows; nil names none.
	Version *VersionFile `yaml:"version,omitempty" json:"version,omitempty" jsonschema_description:"where the agent's version is read, for replaycheck matrix: {package: NPM_NAME, lock: package-lock.json} or {command: [argv]} (its first line of output)"`
	// VariantOf names the target file (relative to this one) this file runs
	// the same agent as, with another MCP transport, MCP server or a
	// resume, for the matrix's rows; "" names none.
	VariantOf string `yaml:"variant_of,omitempty" json:"variant_of,omitempty" jsonschema_description:"the target file (relative to this file) of the same agent calling the same model API, of which this file changes the MCP transport, the MCP server or the resume: replaycheck matrix sweeps the model's columns (model request fails, model answer breaks) on that file's row only, when both are in the matrix at the same version"`
	// MCP, when set, forwards every run to a real MCP server in place of
	// the ledger's own tools.
	MCP *MCPFile `yaml:"mcp,omitempty" json:"mcp,omitempty" jsonschema_description:"forward every scenario run on this target to a real MCP server in place of the ledger's own tools (unless the scenario names its own): {relay: URL} or {command: [...], env: {...}}, with writes and calls; and/or the ledger's protocol and honour_cancellation (unless the scenario sets its own); the client reaches the forwarder where it reaches the ledger ({{mcp_url}}, the stdio ledger)"`
	// Resume is the command started after each kill of the client (a
	// scenario's faults.target); nil: the client cannot be resumed, and
	// such scenarios are skipped.
	Resume *ResumeFile `yaml:"resume,omitempty" json:"resume,omitempty" jsonschema_description:"how to resume the client after the harness killed it (scenarios with faults.target, tagged resume): {command: [...], env: {...}}, templated as command and env (same variables, {{run_dir}} the killed run's, so a session store or checkpoint file there survives), run in the same dir with env merged over the client's; without it those scenarios are skipped"`
}

// ResumeFile is a target file's resume: the command that resumes a killed
// target.
type ResumeFile struct {
	// Command is the argv, templated as the target's command.
	Command []string `yaml:"command" json:"command" jsonschema:"minItems=1" jsonschema_description:"argv of the resume, e.g. [claude, --continue, -p, \"{{prompt}}\"]; the same variables as the target's command"`
	// Env is merged over the target's env for the resume.
	Env map[string]string `yaml:"env,omitempty" json:"env,omitempty" jsonschema_description:"environment merged over the target's env for the resume; the same variables; values are never shown"`
}

// loadClient builds the client target of a file of kind client.
func loadClient(f *source) (target.Target, error) {
	spec, err := clientSpec(f)
	if err != nil {
		return nil, err
	}
	return target.NewClient(spec), nil
}

// clientSpec decodes a file of kind client strictly, checks it and returns
// its target's spec.
func clientSpec(f *source) (target.ClientSpec, error) {
	var c ClientFile
	fail := func(err error) (target.ClientSpec, error) { return target.ClientSpec{}, err }
	if err := f.decode(&c); err != nil {
		return fail(err)
	}
	if len(c.Command) == 0 {
		return fail(f.errorf([]any{"command"}, "a client target needs a command (an argv list)"))
	}
	for i, a := range c.Command {
		if err := f.check(a, target.ClientVars, "command", i); err != nil {
			return fail(err)
		}
	}
	for i, d := range c.Dialects {
		if _, ok := dialect.ByName(d); !ok || slices.Index(c.Dialects, d) < i {
			return fail(f.errorf([]any{"dialects", i}, "dialects: %q is not one of %s, or is given twice", d, strings.Join(dialect.Names(), ", ")))
		}
	}
	t := target.ClientSpec{
		Name: f.name(c.Name), Command: c.Command, Dialects: c.Dialects, Env: c.Env, PassEnv: c.PassEnv, Install: c.Install,
		Timeout: c.Timeout.D(), StopGrace: c.StopGrace.D(), NumRetries: c.NumRetries, RetryAfterHint: c.RetryAfterHint.D(),
		Replaycheck: f.opts.Replaycheck, KeepRunDirs: f.opts.KeepRunDirs,
	}
	for k, v := range c.Env {
		if err := f.check(v, target.ClientVars, "env", k); err != nil {
			return fail(err)
		}
		if f.takesEnv("env", k) {
			t.Secrets = append(t.Secrets, v)
		}
	}
	if c.Dir != "" && !filepath.IsAbs(c.Dir) {
		c.Dir = filepath.Join(f.dir(), c.Dir)
	}
	if c.Dir == "" {
		c.Dir = f.dir()
	}
	t.Dir = c.Dir
	if c.NumRetries != nil && *c.NumRetries < 0 {
		return fail(f.errorf([]any{"num_retries"}, "num_retries %d: want 0 or more", *c.NumRetries))
	}
	if err := checkPassEnv(f, c.PassEnv, "pass_env"); err != nil {
		return fail(err)
	}
	if err := checkVersion(f, c.Version); err != nil {
		return fail(err)
	}
	if _, err := variantOf(f, c.VariantOf); err != nil {
		return fail(err)
	}
	fwd, settings, err := loadMCP(f, c.MCP)
	if err != nil {
		return fail(err)
	}
	t.Forward, t.Ledger = fwd, settings
	if t.Resume, err = loadResume(f, c.Resume, target.ClientVars); err != nil {
		return fail(err)
	}
	t.Secrets = append(t.Secrets, f.secrets...)
	if c.Via != "" {
		via, err := loadVia(f, c.Via)
		if err != nil {
			return fail(err)
		}
		t.Via = via
	}
	return t, nil
}

// loadVia resolves a client's via: a proxy target the harness starts with
// fake URLs of its choosing (a running proxy on fixed fakes cannot be given a
// run's own addresses).
func loadVia(f *source, via string) (target.Target, error) {
	arg := via
	if kind, _, ok := strings.Cut(via, ":"); !ok || kind != "builtin" {
		if !filepath.IsAbs(arg) {
			arg = filepath.Join(f.dir(), arg)
		}
	}
	t, err := Resolve(arg, f.opts)
	if err != nil {
		return nil, f.errorf([]any{"via"}, "via %q: %v", via, err)
	}
	if t.Traits().Client {
		return nil, f.errorf([]any{"via"}, "via %q is a client target; want a proxy target file or builtin:NAME", via)
	}
	if !target.StartsPerRun(t) {
		return nil, f.errorf([]any{"via"}, "via %q: the proxy must be started by the harness (start:) with the fakes' URLs from its templates, not on fixed fakes, so each client run can have addresses of its own", via)
	}
	return t, nil
}

// loadResume checks a target file's resume against the variables vs its
// target's command may use and returns it; nil for none.
func loadResume(f *source, r *ResumeFile, vs target.Vars) (*target.Resume, error) {
	if r == nil {
		return nil, nil
	}
	if len(r.Command) == 0 {
		return nil, f.errorf([]any{"resume"}, "resume needs a command (an argv list)")
	}
	for i, a := range r.Command {
		if err := f.check(a, vs, "resume", "command", i); err != nil {
			return nil, err
		}
	}
	for k, v := range r.Env {
		if err := f.check(v, vs, "resume", "env", k); err != nil {
			return nil, err
		}
		if f.takesEnv("resume", "env", k) {
			f.secrets = append(f.secrets, v)
		}
	}
	return &target.Resume{Command: r.Command, Env: r.Env}, nil
}
