package target

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"os"
	"regexp"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/replaycheck/replaycheck/internal/harness/app"
	"github.com/replaycheck/replaycheck/internal/harness/history"
	"github.com/replaycheck/replaycheck/internal/harness/process"
	"github.com/replaycheck/replaycheck/internal/harness/scenario"
	"github.com/replaycheck/replaycheck/internal/secret"
	"github.com/replaycheck/replaycheck/internal/wire"
)

// clientOutputBytes bounds what is kept of a client's stdout and of its
// stderr (the end is kept).
const clientOutputBytes = 16 << 10

// Dummy API keys a client gets unless its spec sets them, so that an SDK
// that requires a key starts, and a real key never goes anywhere.
const (
	// DummyOpenAIKey is a client's OPENAI_API_KEY.
	DummyOpenAIKey = "sk-replaycheck-dummy"
	// DummyAnthropicKey is a client's ANTHROPIC_API_KEY.
	DummyAnthropicKey = "sk-ant-replaycheck-dummy"
)

// ClientSpec is a target of kind client: a command (an agent, an SDK
// program) run once per scenario request with an environment that points it
// at the fakes; its exit code and output are the client-side outcome.
// Package targetfile fills one from a target file (kind client); its
// templates are checked there.
type ClientSpec struct {
	// Name names the target in reports.
	Name string
	// Command is the argv (ClientVars), run once per scenario request.
	Command []string
	// Env is added to the environment the harness sets (OPENAI_BASE_URL,
	// ANTHROPIC_BASE_URL, OPENAI_API_KEY, ANTHROPIC_API_KEY,
	// REPLAYCHECK_MCP_URL, REPLAYCHECK_PROMPT, REPLAYCHECK_TOKEN,
	// REPLAYCHECK_RUN_DIR); it wins. Values may use ClientVars.
	Env map[string]string
	// PassEnv names variables of the harness's environment the command gets
	// as they are (see process.Env); naming HOME keeps the user's.
	PassEnv []string
	// Install says how to install the command, for the error when it is
	// not found or not executable.
	Install string
	// Dir is the working directory.
	Dir string
	// Timeout bounds one run of the command; zero leaves only the
	// scenario's deadline.
	Timeout time.Duration
	// StopGrace is the time between SIGTERM and SIGKILL of a command past
	// its deadline; zero is process.DefaultStopGrace.
	StopGrace time.Duration
	// NumRetries is the retries the client is configured with, for the rules
	// that need it; nil is unknown.
	NumRetries *int
	// RetryAfterHint is Traits.RetryAfterHint.
	RetryAfterHint time.Duration
	// Dialects is Traits.Dialects: the model API dialects the client
	// calls; nil is not declared.
	Dialects []string
	// Via, when set, puts the client in front of a proxy (the built-in
	// gateway or a proxy the harness starts), started once per client run
	// with that run's fake addresses; the client's model API base URLs point
	// at it, its MCP URL at the ledger.
	Via Target
	// Replaycheck is the value of {{replaycheck}}.
	Replaycheck string
	// Secrets are masked wherever the client's output is shown (beyond the
	// harness's secret-named variables and Via's).
	Secrets []string
	// KeepRunDirs keeps each run's scratch directory ({{run_dir}}) instead
	// of removing it when the run ends.
	KeepRunDirs bool
	// Forward, when set, is Traits.Forward: the real MCP server the
	// client's runs forward to.
	Forward *Forward
	// Ledger is Traits.Ledger: the ledger settings of the client's runs.
	Ledger scenario.LedgerSettings
	// Resume, when set, is the command started after each kill of the
	// client in a scenario that kills it (Traits.Resumes).
	Resume *Resume
}

// mcpTransports are the MCP transports the client's command and env point
// it at: stdio when they use the stdio ledger's command, HTTP when they use
// the ledger's URL or address, HTTP when neither (REPLAYCHECK_MCP_URL).
func (spec ClientSpec) mcpTransports() []wire.MCPTransport {
	texts := slices.Clone(spec.Command)
	for _, k := range slices.Sorted(maps.Keys(spec.Env)) {
		texts = append(texts, spec.Env[k])
	}
	var out []wire.MCPTransport
	if usesVar(texts, varMCPURL, varMCPAddr) {
		out = append(out, wire.MCPTransportHTTP)
	}
	if usesVar(texts, stdioVars...) {
		out = append(out, wire.MCPTransportStdio)
	}
	return out
}

// NewClient returns the client target spec describes.
func NewClient(spec ClientSpec) Target {
	t := &client{spec: spec, secrets: slices.Clone(spec.Secrets)}
	if p, ok := spec.Via.(*proxy); ok {
		t.secrets = append(t.secrets, p.secrets...) // its key reaches the client's environment
	}
	return t
}

// client is a client target.
type client struct {
	spec    ClientSpec
	secrets []string // the spec's and its via proxy's
}

// Name returns the spec's name for the target.
func (t *client) Name() string { return t.spec.Name }

// Traits says the target is a client, run one run at a time when its via
// proxy must.
func (t *client) Traits() Traits {
	tr := Traits{Client: true, RetryAfterHint: t.spec.RetryAfterHint, MCPTransports: t.spec.mcpTransports(), Dialects: t.spec.Dialects, Forward: t.spec.Forward, Ledger: t.spec.Ledger, Resumes: t.spec.Resume != nil}
	if t.spec.Via != nil {
		tr.Exclusive = t.spec.Via.Traits().Exclusive
	}
	return tr
}

// Start returns an instance that runs the command per request; nothing
// runs until then.
func (t *client) Start(_ context.Context, f Fakes, knobs *scenario.Gateway) (Instance, error) {
	if err := process.CheckDir(t.spec.Dir, "dir"); err != nil {
		return nil, fmt.Errorf("starting client target %s: %w", t.spec.Name, err)
	}
	if argv0 := t.spec.Command[0]; !strings.Contains(argv0, "{{") {
		if _, err := process.Resolve(argv0, t.spec.Dir); err != nil {
			return nil, fmt.Errorf("starting client target %s: %w", t.spec.Name, t.cannotRun(&process.CannotRunError{Command: argv0, Err: err}))
		}
	}
	inst := &clientInstance{t: t, fakes: f, setup: history.Setup{NumRetries: -1}}
	if t.spec.NumRetries != nil {
		inst.setup.NumRetries = *t.spec.NumRetries
	}
	if t.spec.Via != nil {
		inst.knobs = knobs
	} else if knobs != nil && (knobs.NumRetries != nil || len(knobs.Fallbacks) > 0 || knobs.ToolTimeout > 0 || knobs.StreamIdleTimeout > 0) {
		inst.notes = append(inst.notes, "the scenario's gateway knobs do not apply to client target "+t.spec.Name)
	}
	return inst, nil
}

// cannotRun sets the spec's install hint on e.
func (t *client) cannotRun(e *process.CannotRunError) *process.CannotRunError {
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
	cannotRun error // the first *process.CannotRunError a run found
}

// CannotRun returns the first *process.CannotRunError a run of the command
// found.
func (i *clientInstance) CannotRun() error {
	i.mu.Lock()
	defer i.mu.Unlock()
	return i.cannotRun
}

// failed records err as the run's Error, and as the instance's CannotRun
// when it is a *process.CannotRunError.
func (i *clientInstance) failed(x *history.Exchange, err error) history.Exchange {
	var cr *process.CannotRunError
	if errors.As(err, &cr) {
		i.mu.Lock()
		if i.cannotRun == nil {
			i.cannotRun = err
		}
		i.mu.Unlock()
	}
	x.TransportError = process.Mask(err.Error(), i.t.secrets)
	x.Client.Error = x.TransportError
	return *x
}

func (i *clientInstance) Limits() history.Setup { return i.setup }

func (i *clientInstance) Close() error { return nil }

// Notes says which of the scenario's gateway knobs the client did not take.
func (i *clientInstance) Notes() []string { return i.notes }

// Output is nil: a client's output is each run's, in its ClientRun.
func (i *clientInstance) Output() *process.Output { return nil }

// Send runs the command once for req and records its outcome. Past the
// deadline (ctx's or the spec's timeout) the command's process group is
// stopped (SIGTERM, SIGKILL after stop_grace); TimedOut is then set and
// TransportError says so. A command that is not found or not executable,
// also a program its shell did not find (exit 126 or 127 saying so) or a
// Node.js package it imports (see notFound), is a *process.CannotRunError, kept for
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
		return i.failed(&x, fmt.Errorf("client %s: making its run directory: %w", i.t.spec.Name, err))
	}
	var leftovers []string
	if i.t.spec.KeepRunDirs {
		run.RunDir = runDir
	} else {
		defer os.RemoveAll(runDir)
		leftovers = append(leftovers, runDir)
	}
	keys := map[string]string{"OPENAI_API_KEY": DummyOpenAIKey, "ANTHROPIC_API_KEY": DummyAnthropicKey}
	if i.t.spec.Via != nil {
		proxy, err := i.t.spec.Via.Start(ctx, fakes, i.knobs)
		if err != nil {
			return i.failed(&x, fmt.Errorf("client %s: starting its via proxy %s: %w", i.t.spec.Name, i.t.spec.Via.Name(), err))
		}
		defer proxy.Close()
		ep, ok := proxy.(Reachable)
		if !ok {
			return i.failed(&x, fmt.Errorf("client %s: %s has no base URL to put a client in front of", i.t.spec.Name, i.t.spec.Via.Name()))
		}
		base, header := ep.BaseURL()
		fakes.Upstream = strings.TrimRight(base, "/") + "/v1"
		if key, ok := strings.CutPrefix(header.Get("Authorization"), "Bearer "); ok {
			keys["OPENAI_API_KEY"], keys["ANTHROPIC_API_KEY"] = key, key
		}
	}
	v := newTemplateVars(fakes, nil, i.t.spec.Replaycheck)
	v.Prompt, v.Token, v.Entry, v.RunDir = req.Prompt, req.Token, scenario.Entry(req.Token), runDir
	argv, err := renderArgs(i.t.spec.Command, clientVars, v)
	if err != nil {
		return i.failed(&x, fmt.Errorf("rendering the command of %s: %w", i.t.spec.Name, err))
	}
	if len(argv) == 0 || argv[0] == "" {
		return i.failed(&x, errors.New("the command of "+i.t.spec.Name+" rendered empty"))
	}
	parent := os.Environ()
	env := process.SetEnv(process.Env(parent, i.t.spec.PassEnv), map[string]string{
		"OPENAI_BASE_URL":     fakes.Upstream,
		"ANTHROPIC_BASE_URL":  v.root,
		"OPENAI_API_KEY":      keys["OPENAI_API_KEY"],
		"ANTHROPIC_API_KEY":   keys["ANTHROPIC_API_KEY"],
		"REPLAYCHECK_MCP_URL": fakes.MCP,
		"REPLAYCHECK_PROMPT":  req.Prompt,
		"REPLAYCHECK_TOKEN":   req.Token,
		"REPLAYCHECK_RUN_DIR": runDir,
	})
	env = process.Home(env, i.t.spec.PassEnv, runDir)
	for k, val := range i.t.spec.Env {
		r, err := render(val, clientVars, v)
		if err != nil {
			return i.failed(&x, fmt.Errorf("rendering env %s of %s: %w", k, i.t.spec.Name, err))
		}
		env = process.SetEnv(env, map[string]string{k: r})
	}
	limit := i.t.spec.Timeout
	rctx := ctx
	if limit > 0 {
		var cancel context.CancelFunc
		rctx, cancel = context.WithTimeout(ctx, limit)
		defer cancel()
	}
	secrets := append(secret.Environ(parent), i.t.secrets...)
	stdout := process.NewOutput(clientOutputBytes, secrets)
	stderr := process.NewOutput(clientOutputBytes, secrets)
	p, err := process.Start(process.Command{Argv: argv, Env: env, Dir: i.t.spec.Dir, Stdout: stdout, Stderr: stderr, Leftovers: leftovers})
	var cr *process.CannotRunError
	if errors.As(err, &cr) {
		return i.failed(&x, fmt.Errorf("client %s could not run: %w", i.t.spec.Name, i.t.cannotRun(cr)))
	}
	if err != nil {
		return i.failed(&x, fmt.Errorf("client %s: %w", i.t.spec.Name, err))
	}
	if req.Kill != nil && i.t.spec.Resume != nil {
		resumeArgv, resumeEnv, err := i.resumeCommand(v, env)
		if err != nil {
			_ = p.Stop(0)
			return i.failed(&x, err)
		}
		first := life{proc: p, start: time.Now(), done: p.Done(), outcome: func() (int, bool, string) {
			code := p.ExitCode()
			return code, code == 0, app.ExcerptEnd(stdout.String())
		}}
		// A client's resume is its process: started, it is the life.
		last, err := req.Kill.lives(rctx, first, func(_ context.Context, _ int, _ <-chan struct{}) (life, error) {
			rp, err := process.Start(process.Command{Argv: resumeArgv, Env: resumeEnv, Dir: i.t.spec.Dir, Stdout: stdout, Stderr: stderr, Leftovers: leftovers})
			if err != nil {
				return life{}, fmt.Errorf("client %s: starting its resume: %w", i.t.spec.Name, err)
			}
			return life{proc: rp, start: time.Now(), done: rp.Done(), outcome: func() (int, bool, string) {
				code := rp.ExitCode()
				return code, code == 0, app.ExcerptEnd(stdout.String())
			}}, nil
		})
		p = last.proc
		if err != nil {
			_ = p.Stop(0)
			return i.failed(&x, err)
		}
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
	if killed {
		// Read before the stop: the processes the deadline cut are alive.
		if d, known := p.RunDelay(); known {
			run.RunDelay = history.Duration(d)
		}
	}
	// Whatever the command left running in its group goes with it.
	grace := i.t.spec.StopGrace
	if grace <= 0 {
		grace = process.DefaultStopGrace
	}
	_ = p.Stop(grace)
	run.Stdout, run.Stderr = stdout.String(), stderr.String()
	x.Body = app.ExcerptEnd(run.Stdout)
	if killed {
		run.Killed = true
		x.TimedOut = true
		deadline := "the scenario's deadline"
		if limit > 0 && ctx.Err() == nil {
			deadline = fmt.Sprintf("its %s timeout", limit)
		}
		if ctx.Err() != nil && !errors.Is(context.Cause(ctx), context.DeadlineExceeded) {
			deadline = "the run's interruption"
		}
		lines := append(stdout.Lines(), stderr.Lines()...)
		x.TransportError = fmt.Sprintf("client %s did not exit before %s; its process group was killed%s",
			i.t.spec.Name, deadline, process.Tail(i.t.spec.Name, lines[max(0, len(lines)-10):]))
		return x
	}
	run.Exit = p.ExitCode()
	if line, ok := notFound(run.Exit, stderr.Lines()); ok {
		err := fmt.Errorf("its command %s exited with code %d: %s", argv[0], run.Exit, line)
		return i.failed(&x, fmt.Errorf("client %s could not run: %w", i.t.spec.Name, i.t.cannotRun(&process.CannotRunError{Command: argv[0], Err: err})))
	}
	x.CleanEnd = run.Exit == 0
	if run.Exit != 0 {
		x.TransportError = fmt.Sprintf("client exited with code %d", run.Exit)
	}
	return x
}

// resumeCommand renders the spec's resume command and its env (merged over
// env, the first life's) with the first life's template values v.
func (i *clientInstance) resumeCommand(v templateVars, env []string) ([]string, []string, error) {
	r := i.t.spec.Resume
	argv, err := renderArgs(r.Command, clientVars, v)
	if err != nil {
		return nil, nil, fmt.Errorf("rendering the resume command of %s: %w", i.t.spec.Name, err)
	}
	if len(argv) == 0 || argv[0] == "" {
		return nil, nil, errors.New("the resume command of " + i.t.spec.Name + " rendered empty")
	}
	for k, val := range r.Env {
		rv, err := render(val, clientVars, v)
		if err != nil {
			return nil, nil, fmt.Errorf("rendering resume env %s of %s: %w", k, i.t.spec.Name, err)
		}
		env = process.SetEnv(env, map[string]string{k: rv})
	}
	return argv, env, nil
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
