package target

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/replaycheck/replaycheck/fakes/fault"
	"github.com/replaycheck/replaycheck/harness/history"
	"github.com/replaycheck/replaycheck/harness/scenario"
	"github.com/replaycheck/replaycheck/internal/secret"
)

// clientOutputBytes bounds what is kept of a client's stdout and of its
// stderr (the end is kept).
const clientOutputBytes = 16 << 10

// Dummy API keys a client gets unless its file sets them, so that an SDK
// that requires a key starts, and a real key never goes anywhere.
const (
	// DummyOpenAIKey is a client's OPENAI_API_KEY.
	DummyOpenAIKey = "sk-replaycheck-dummy"
	// DummyAnthropicKey is a client's ANTHROPIC_API_KEY.
	DummyAnthropicKey = "sk-ant-replaycheck-dummy"
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
	// Command is the argv, run once per scenario request.
	Command []string `yaml:"command" json:"command" jsonschema:"minItems=1" jsonschema_description:"argv, e.g. [\"${AGENT_BIN:-bin/agent}\", --naive-retry, \"2\"]; may use ${ENV} and {{prompt}}, {{token}}, {{entry}}, {{upstream_url}}, {{mcp_url}}"`
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
}

// The optional interfaces client targets implement.
var (
	_ Client      = (*client)(nil)
	_ Placer      = (*client)(nil)
	_ RetryHinter = (*client)(nil)
	_ Noter       = (*clientInstance)(nil)
	_ Unrunnable  = (*clientInstance)(nil)
)

// client is a client target loaded from a file.
type client struct {
	spec        ClientFile
	name        string
	replaycheck string
	secrets     []string
	keepRunDirs bool
	via         Target // nil, or the proxy the client's model calls go through
}

func loadClient(f *targetSource) (Target, error) {
	var c ClientFile
	if err := f.decode(&c); err != nil {
		return nil, err
	}
	if len(c.Command) == 0 {
		return nil, f.errorf([]any{"command"}, "a client target needs a command (an argv list)")
	}
	for i, a := range c.Command {
		if err := f.check(a, clientVars, "command", i); err != nil {
			return nil, err
		}
	}
	t := &client{name: f.name(c.Name), replaycheck: f.opts.Replaycheck, keepRunDirs: f.opts.KeepRunDirs}
	for k, v := range c.Env {
		if err := f.check(v, clientVars, "env", k); err != nil {
			return nil, err
		}
		if f.takesEnv("env", k) {
			t.secrets = append(t.secrets, v)
		}
	}
	if c.Dir != "" && !filepath.IsAbs(c.Dir) {
		c.Dir = filepath.Join(f.dir(), c.Dir)
	}
	if c.Dir == "" {
		c.Dir = f.dir()
	}
	if c.NumRetries != nil && *c.NumRetries < 0 {
		return nil, f.errorf([]any{"num_retries"}, "num_retries %d: want 0 or more", *c.NumRetries)
	}
	if err := checkPassEnv(f, c.PassEnv, "pass_env"); err != nil {
		return nil, err
	}
	t.secrets = append(t.secrets, f.secrets...)
	t.spec = c
	if c.Via != "" {
		via, err := loadVia(f, c.Via)
		if err != nil {
			return nil, err
		}
		t.via = via
		if p, ok := t.via.(*proxy); ok {
			t.secrets = append(t.secrets, p.secrets...) // its key reaches the client's environment
		}
	}
	return t, nil
}

// loadVia resolves a client's via: a proxy target the harness starts with
// fake URLs of its choosing (a running proxy on fixed fakes cannot be given a
// run's own addresses).
func loadVia(f *targetSource, via string) (Target, error) {
	arg := via
	if kind, _, ok := strings.Cut(via, ":"); !ok || kind != "builtin" {
		if !filepath.IsAbs(arg) {
			arg = filepath.Join(f.dir(), arg)
		}
	}
	t, err := ResolveTarget(arg, f.opts)
	if err != nil {
		return nil, f.errorf([]any{"via"}, "via %q: %v", via, err)
	}
	if IsClient(t) {
		return nil, f.errorf([]any{"via"}, "via %q is a client target; want a proxy target file or builtin:NAME", via)
	}
	if p, ok := t.(*proxy); ok && (p.spec.Fakes != nil || p.spec.Start == nil) {
		return nil, f.errorf([]any{"via"}, "via %q: the proxy must be started by the harness (start:) with the fakes' URLs from its templates, not on fixed fakes, so each client run can have addresses of its own", via)
	}
	return t, nil
}

// Name returns the file's name for the target.
func (t *client) Name() string { return t.name }

// ClientTarget marks client targets: their scenario runs are command runs.
func (t *client) ClientTarget() {}

// RetryAfterHint is the file's retry_after_hint.
func (t *client) RetryAfterHint() time.Duration { return t.spec.RetryAfterHint.D() }

// Start returns an instance that runs the command per request; nothing
// runs until then.
func (t *client) Start(_ context.Context, f Fakes, knobs *scenario.Gateway) (Instance, error) {
	if err := checkDir(t.spec.Dir, "dir"); err != nil {
		return nil, fmt.Errorf("starting client target %s: %w", t.name, err)
	}
	if argv0 := t.spec.Command[0]; !strings.Contains(argv0, "{{") {
		if _, err := resolveCommand(argv0, t.spec.Dir); err != nil {
			return nil, fmt.Errorf("starting client target %s: %w", t.name, t.cannotRun(&CannotRunError{Command: argv0, Err: err}))
		}
	}
	inst := &clientInstance{t: t, fakes: f, setup: history.Setup{NumRetries: -1}}
	if t.spec.NumRetries != nil {
		inst.setup.NumRetries = *t.spec.NumRetries
	}
	if t.via != nil {
		inst.knobs = knobs
	} else if knobs != nil && (knobs.NumRetries != nil || len(knobs.Fallbacks) > 0 || knobs.ToolTimeout > 0 || knobs.StreamIdleTimeout > 0) {
		inst.notes = append(inst.notes, "the scenario's gateway knobs do not apply to client target "+t.name)
	}
	return inst, nil
}

// Placement runs the client one run at a time when its via proxy must.
func (t *client) Placement() (FakeAddrs, bool) {
	if t.via == nil {
		return FakeAddrs{}, false
	}
	_, excl := PlacementOf(t.via)
	return FakeAddrs{}, excl
}

// cannotRun sets the file's install hint on e.
func (t *client) cannotRun(e *CannotRunError) *CannotRunError {
	e.Install = t.spec.Install
	return e
}

// clientInstance runs a client target's command against a pair of fakes.
type clientInstance struct {
	t     *client
	fakes Fakes
	knobs *scenario.Gateway // for the via proxy
	setup history.Setup
	notes []string

	mu        sync.Mutex
	cannotRun error // the first *CannotRunError a run found
}

// CannotRun returns the first *CannotRunError a run of the command found.
func (i *clientInstance) CannotRun() error {
	i.mu.Lock()
	defer i.mu.Unlock()
	return i.cannotRun
}

// failed records err as the run's Error, and as the instance's CannotRun
// when it is a *CannotRunError.
func (i *clientInstance) failed(x *history.Exchange, err error) history.Exchange {
	var cr *CannotRunError
	if errors.As(err, &cr) {
		i.mu.Lock()
		if i.cannotRun == nil {
			i.cannotRun = err
		}
		i.mu.Unlock()
	}
	x.TransportError = mask(err.Error(), i.t.secrets)
	x.Client.Error = x.TransportError
	return *x
}

func (i *clientInstance) Limits() history.Setup { return i.setup }

func (i *clientInstance) Close() error { return nil }

// Notes says which of the scenario's gateway knobs the client did not take.
func (i *clientInstance) Notes() []string { return i.notes }

// Send runs the command once for req and records its outcome. Past the
// deadline (ctx's or the file's timeout) the command's process group is
// stopped (SIGTERM, SIGKILL after stop_grace); TimedOut is then set and
// TransportError says so. A command that is not found or not executable,
// also a program its shell did not find (exit 126 or 127 saying so) or a
// Node.js package it imports (see notFound), is a *CannotRunError, kept for
// CannotRun.
func (i *clientInstance) Send(ctx context.Context, req Request) history.Exchange {
	// The client chooses what to call; Paths records it after the run.
	x := history.Exchange{}
	run := &history.ClientRun{Exit: -1}
	x.Client = run
	fakes := i.fakes
	if req.Fakes != nil {
		fakes = *req.Fakes
	}
	runDir, err := os.MkdirTemp("", "replaycheck-run-")
	if err != nil {
		return i.failed(&x, fmt.Errorf("client %s: making its run directory: %w", i.t.name, err))
	}
	var leftovers []string
	if i.t.keepRunDirs {
		run.RunDir = runDir
	} else {
		defer os.RemoveAll(runDir)
		leftovers = append(leftovers, runDir)
	}
	keys := map[string]string{"OPENAI_API_KEY": DummyOpenAIKey, "ANTHROPIC_API_KEY": DummyAnthropicKey}
	if i.t.via != nil {
		proxy, err := i.t.via.Start(ctx, fakes, i.knobs)
		if err != nil {
			return i.failed(&x, fmt.Errorf("client %s: starting its via proxy %s: %w", i.t.name, i.t.via.Name(), err))
		}
		defer proxy.Close()
		ep, ok := proxy.(Reachable)
		if !ok {
			return i.failed(&x, fmt.Errorf("client %s: %s has no base URL to put a client in front of", i.t.name, i.t.via.Name()))
		}
		base, header := ep.BaseURL()
		fakes.Upstream = strings.TrimRight(base, "/") + "/v1"
		if key, ok := strings.CutPrefix(header.Get("Authorization"), "Bearer "); ok {
			keys["OPENAI_API_KEY"], keys["ANTHROPIC_API_KEY"] = key, key
		}
	}
	v := newTemplateVars(fakes, nil, i.t.replaycheck)
	v.Prompt, v.Token, v.Entry, v.RunDir = req.Prompt, req.Token, scenario.Entry(req.Token), runDir
	argv, err := renderArgs(i.t.spec.Command, clientVars, v)
	if err != nil {
		return i.failed(&x, fmt.Errorf("rendering the command of %s: %w", i.t.name, err))
	}
	if len(argv) == 0 || argv[0] == "" {
		return i.failed(&x, errors.New("the command of "+i.t.name+" rendered empty"))
	}
	parent := os.Environ()
	env := setEnv(processEnv(parent, i.t.spec.PassEnv), map[string]string{
		"OPENAI_BASE_URL":     fakes.Upstream,
		"ANTHROPIC_BASE_URL":  v.root,
		"OPENAI_API_KEY":      keys["OPENAI_API_KEY"],
		"ANTHROPIC_API_KEY":   keys["ANTHROPIC_API_KEY"],
		"REPLAYCHECK_MCP_URL": fakes.MCP,
		"REPLAYCHECK_PROMPT":  req.Prompt,
		"REPLAYCHECK_TOKEN":   req.Token,
		"REPLAYCHECK_RUN_DIR": runDir,
	})
	env = clientHome(env, i.t.spec.PassEnv, runDir)
	for k, val := range i.t.spec.Env {
		r, err := render(val, clientVars, v)
		if err != nil {
			return i.failed(&x, fmt.Errorf("rendering env %s of %s: %w", k, i.t.name, err))
		}
		env = setEnv(env, map[string]string{k: r})
	}
	limit := i.t.spec.Timeout.D()
	rctx := ctx
	if limit > 0 {
		var cancel context.CancelFunc
		rctx, cancel = context.WithTimeout(ctx, limit)
		defer cancel()
	}
	secrets := append(parentSecrets(parent), i.t.secrets...)
	stdout := newOutput(clientOutputBytes, secrets)
	stderr := newOutput(clientOutputBytes, secrets)
	p, err := startProcess(command{argv: argv, env: env, dir: i.t.spec.Dir, stdout: stdout, stderr: stderr, leftovers: leftovers})
	var cr *CannotRunError
	if errors.As(err, &cr) {
		return i.failed(&x, fmt.Errorf("client %s could not run: %w", i.t.name, i.t.cannotRun(cr)))
	}
	if err != nil {
		return i.failed(&x, fmt.Errorf("client %s: %w", i.t.name, err))
	}
	killed := false
	select {
	case <-p.Done():
	case <-rctx.Done():
		select {
		case <-p.Done():
		default:
			killed = true
		}
	}
	// Whatever the command left running in its group goes with it.
	grace := i.t.spec.StopGrace.D()
	if grace <= 0 {
		grace = defaultStopGrace
	}
	_ = p.Stop(grace)
	run.Stdout, run.Stderr = stdout.String(), stderr.String()
	x.Body = excerpt([]byte(lastText(run.Stdout)))
	if killed {
		run.Killed = true
		x.TimedOut = true
		deadline := "the scenario's deadline"
		if limit > 0 && ctx.Err() == nil {
			deadline = fmt.Sprintf("its %s timeout", limit)
		}
		if ctx.Err() != nil && !errors.Is(ctx.Err(), context.DeadlineExceeded) {
			deadline = "the run's interruption"
		}
		lines := append(stdout.Lines(), stderr.Lines()...)
		x.TransportError = fmt.Sprintf("client %s did not exit before %s; its process group was killed%s",
			i.t.name, deadline, tail(i.t.name, lines[max(0, len(lines)-10):]))
		return x
	}
	run.Exit = p.ExitCode()
	if line, ok := notFound(run.Exit, stderr.Lines()); ok {
		err := fmt.Errorf("its command %s exited with code %d: %s", argv[0], run.Exit, line)
		return i.failed(&x, fmt.Errorf("client %s could not run: %w", i.t.name, i.t.cannotRun(&CannotRunError{Command: argv[0], Err: err})))
	}
	x.CleanEnd = run.Exit == 0
	if run.Exit != 0 {
		x.TransportError = fmt.Sprintf("client exited with code %d", run.Exit)
	}
	return x
}

// notFoundLine matches what a shell or env(1) prints when it cannot run a
// program: not found, or not executable.
var notFoundLine = regexp.MustCompile(`(?i)(not found|no such file or directory|permission denied|cannot execute[^:]*)\s*$`)

// nodeModuleMissing matches the code Node.js prints when a program's import
// names a package or file that is not installed.
var nodeModuleMissing = regexp.MustCompile(`^\s*code: '(ERR_MODULE_NOT_FOUND|MODULE_NOT_FOUND)'`)

// notFound reports whether a command that exited with code, stderr its last
// lines, could not run the program it was to run, and returns the line that
// says so: exit 126 (not executable) or 127 (not found), as shells and env(1)
// end then, with the last line saying so; or Node.js failing on a package or
// module that is not installed (npm ci was not run).
func notFound(code int, stderr []string) (string, bool) {
	if code == 0 || len(stderr) == 0 {
		return "", false
	}
	if last := strings.TrimSpace(stderr[len(stderr)-1]); (code == 126 || code == 127) && notFoundLine.MatchString(last) {
		return last, true
	}
	if !slices.ContainsFunc(stderr, nodeModuleMissing.MatchString) {
		return "", false
	}
	for _, l := range stderr {
		if strings.Contains(l, "Cannot find package") || strings.Contains(l, "Cannot find module") {
			return strings.TrimSpace(l), true
		}
	}
	return "a package it imports is not installed", true
}

// masked replaces a secret in what the harness shows of a target.
const masked = "***"

// mask replaces in s every secret (of secret.MinLen bytes or more) and
// anything shaped like an API key with masked.
func mask(s string, secrets []string) string { return secret.Scrub(s, secrets, masked) }

func lastText(s string) string {
	if len(s) > excerptBytes {
		return s[len(s)-excerptBytes:]
	}
	return s
}
