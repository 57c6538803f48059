package target

import (
	"context"
	"errors"
	"fmt"
	"net"
	"net/http"
	"net/url"
	"os"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/replaycheck/replaycheck/internal/harness/app"
	"github.com/replaycheck/replaycheck/internal/harness/history"
	"github.com/replaycheck/replaycheck/internal/harness/process"
	"github.com/replaycheck/replaycheck/internal/harness/scenario"
	"github.com/replaycheck/replaycheck/internal/secret"
)

// DefaultReadyTimeout bounds a started proxy's readiness when the spec sets
// none.
const DefaultReadyTimeout = 30 * time.Second

// ProxySpec is a target of kind proxy: a gateway or proxy that app
// requests are sent to at URL, optionally started by the harness with a
// config rendered from the fakes' URLs. Package targetfile fills one from a
// target file (kind proxy); its templates are checked there.
type ProxySpec struct {
	// Name names the target in reports.
	Name string
	// URL is the proxy's base URL; /v1/chat/completions and so on are
	// added. It may use {{port}} (URLVars).
	URL string
	// Headers are sent with every app request; their values are secrets.
	Headers map[string]string
	// Bodies are, per endpoint, top-level fields set on the app request
	// body the harness builds (nil removes one); strings may use FakeVars.
	Bodies map[scenario.Endpoint]map[string]any
	// Start, when set, is how the harness starts the proxy, once per
	// instance; nil is a proxy that runs already, at Fakes.
	Start *ProxyStart
	// Fakes, when set, fixes the fakes' addresses, for a proxy whose
	// config cannot be templated; its instances run one at a time.
	Fakes *FakeAddrs
	// NumRetries is the retries the proxy is configured with; nil is
	// unknown (a scenario's num_retries knob wins).
	NumRetries *int
	// RetryAfterHint is Traits.RetryAfterHint.
	RetryAfterHint time.Duration
	// Install says how to install Start's command, for the error when it
	// is not found or not executable.
	Install string
	// Replaycheck is the value of {{replaycheck}}.
	Replaycheck string
	// Secrets are masked wherever the proxy's answers and output are shown
	// (beyond Headers' values and the harness's secret-named variables).
	Secrets []string
	// Forward, when set, is Traits.Forward: the real MCP server the
	// proxy's runs forward to.
	Forward *Forward
	// Ledger is Traits.Ledger: the ledger settings of the proxy's runs.
	Ledger scenario.LedgerSettings
	// Resume, when set with Start, is the command that restarts the proxy
	// after a kill in a scenario that kills it (StartVars, with the killed
	// life's {{port}}, {{config}} and {{run_dir}}), run in Start.Dir and
	// awaited at Start.ReadyURL; the proxy resumes its own pending work
	// from its store, and the harness does not re-send the app request.
	Resume *Resume
}

// ProxyStart is how the harness starts a proxy.
type ProxyStart struct {
	// Command is the argv (StartVars); an argument rendering to several
	// lines becomes several, an empty one is dropped.
	Command []string
	// Config is the config template's text (ProxyVars), rendered into a
	// file whose path is {{config}}; "" is none.
	Config string
	// ConfigName is the template's base name without .tmpl, the end of the
	// rendered file's name.
	ConfigName string
	// ConfigDir is the absolute directory the config is rendered into; ""
	// is a temporary directory of the start's own.
	ConfigDir string
	// Env is added to the proxy's environment (StartVars); its values are
	// secrets when they came from the environment.
	Env map[string]string
	// PassEnv names variables of the harness's environment the proxy gets
	// as they are (see process.Env).
	PassEnv []string
	// Dir is the working directory.
	Dir string
	// ReadyURL is probed with GET until any HTTP answer (ProxyVars); "" is
	// URL.
	ReadyURL string
	// ReadyTimeout bounds the probe; zero is DefaultReadyTimeout.
	ReadyTimeout time.Duration
	// StopGrace is the time between SIGTERM and SIGKILL at the end; zero
	// is process.DefaultStopGrace.
	StopGrace time.Duration
}

// NewProxy returns the proxy target spec describes.
func NewProxy(spec ProxySpec) Target {
	t := &proxy{spec: spec}
	for _, v := range spec.Headers {
		t.secrets = append(t.secrets, v, strings.TrimPrefix(v, "Bearer "))
	}
	t.secrets = append(t.secrets, spec.Secrets...)
	t.fixedPort = spec.Start != nil && !strings.Contains(spec.URL, "{{")
	return t
}

var _ Reachable = (*proxyInstance)(nil)

// proxy is a proxy target.
type proxy struct {
	spec      ProxySpec
	secrets   []string // the spec's, and its headers' values
	fixedPort bool     // the harness starts it at a URL with a port of its own (no {{port}})
}

// Name returns the spec's name for the target.
func (t *proxy) Name() string { return t.spec.Name }

// Traits says where the target's fakes listen, that its instances must
// run one at a time with fixed fakes, a fixed port, or a proxy the harness
// does not start, and that a proxy it starts with a resume can be killed
// and resumed.
func (t *proxy) Traits() Traits {
	tr := Traits{
		RetryAfterHint: t.spec.RetryAfterHint, Exclusive: t.spec.Fakes != nil || t.fixedPort || t.spec.Start == nil,
		Forward: t.spec.Forward, Ledger: t.spec.Ledger, Resumes: t.spec.Start != nil && t.spec.Resume != nil,
	}
	if t.spec.Fakes != nil {
		tr.Fakes = *t.spec.Fakes
	}
	return tr
}

// Start starts the proxy (when the spec says how) wired to f, and waits
// until it is ready.
func (t *proxy) Start(ctx context.Context, f Fakes, knobs *scenario.Gateway) (Instance, error) {
	v := newTemplateVars(f, knobs, t.spec.Replaycheck)
	inst := &proxyInstance{name: t.spec.Name, setup: history.Setup{NumRetries: -1}, secrets: append(secret.Environ(os.Environ()), t.secrets...)}
	if t.spec.NumRetries != nil {
		inst.setup.NumRetries = *t.spec.NumRetries
	}
	if knobs != nil {
		if knobs.NumRetries != nil {
			inst.setup.NumRetries = *knobs.NumRetries
		}
		inst.setup.Fallbacks = len(knobs.Fallbacks) > 0
		inst.setup.ToolTimeout = history.Duration(knobs.ToolTimeout)
		inst.setup.StreamIdleTimeout = history.Duration(knobs.StreamIdleTimeout)
		if t.spec.Start == nil {
			inst.notes = append(inst.notes, "the scenario's gateway knobs were not applied: target "+t.spec.Name+" is not started by the harness")
		}
	}
	var base string
	for attempt := 1; ; attempt++ {
		if t.spec.Start != nil {
			port, err := pickPort()
			if err != nil {
				return nil, fmt.Errorf("starting %s: %w", t.spec.Name, err)
			}
			v.Port = port
		}
		var err error
		if base, err = render(t.spec.URL, proxyVars, v); err != nil {
			return nil, fmt.Errorf("starting %s: rendering url: %w", t.spec.Name, err)
		}
		base = strings.TrimRight(base, "/")
		if t.spec.Start == nil {
			break
		}
		err = t.startProcess(ctx, inst, base, v)
		if err == nil {
			break
		}
		if !errors.Is(err, errPortTaken) || t.fixedPort || attempt == portAttempts {
			return nil, err
		}
		// The port picked was taken by another process before the proxy
		// listened on it: start it again on another.
		inst.proc, inst.out, inst.configPath, inst.tempDir, inst.resume = nil, nil, "", "", nil
	}
	bodies := map[scenario.Endpoint]map[string]any{}
	for ep, body := range t.spec.Bodies {
		r, err := renderValue(ctx, body, fakeVars, v)
		if err != nil {
			inst.Close()
			return nil, fmt.Errorf("starting %s: rendering bodies.%s: %w", t.spec.Name, ep, err)
		}
		bodies[ep], _ = r.(map[string]any)
	}
	header := http.Header{}
	for k, val := range t.spec.Headers {
		header.Set(k, val)
	}
	inst.app = app.New(base, header, bodies)
	return inst, nil
}

// startProcess makes the instance's run directory, renders the config, the
// command and the resume, starts the proxy and waits until it answers at its
// readiness URL.
func (t *proxy) startProcess(ctx context.Context, inst *proxyInstance, base string, v templateVars) error {
	s := t.spec.Start
	fail := func(format string, args ...any) error {
		cause := fmt.Errorf(format, args...) // keeps a %w of errPortTaken
		var lines []string
		if inst.out != nil {
			lines = inst.out.Lines()
		}
		inst.Close()
		return fmt.Errorf("starting target %s: %w%s", t.spec.Name, cause, process.Tail(t.spec.Name, lines))
	}
	// A port the harness picked is checked once the proxy is up instead: it
	// may be taken between any check here and the proxy's listen.
	if addr, ok := listeningAt(base); ok && t.fixedPort {
		return fail("its address %s is already taken by another process (a proxy left running?); stop it or change the target's url", addr)
	}
	runDir, err := os.MkdirTemp("", "replaycheck-proxy-")
	if err != nil {
		return fail("making its run directory: %v", err)
	}
	inst.tempDir, v.RunDir = runDir, runDir
	leftovers := []string{runDir}
	if s.Config != "" {
		rendered, err := render(s.Config, proxyVars, v)
		if err != nil {
			return fail("rendering config template: %v", err)
		}
		dir := s.ConfigDir
		if dir == "" {
			dir = runDir
		}
		file, err := os.CreateTemp(dir, ".replaycheck-*-"+s.ConfigName)
		if err != nil {
			return fail("writing the rendered config: %v", err)
		}
		inst.configPath = file.Name()
		if dir != runDir {
			leftovers = append(leftovers, inst.configPath)
		}
		_, werr := file.WriteString(rendered)
		if cerr := file.Close(); werr == nil {
			werr = cerr
		}
		if werr != nil {
			return fail("writing the rendered config: %v", werr)
		}
		v.Config = inst.configPath
	}
	argv, err := renderArgs(s.Command, startVars, v)
	if err != nil {
		return fail("rendering start.command: %v", err)
	}
	parent := os.Environ()
	env := process.Env(parent, s.PassEnv)
	for k, val := range s.Env {
		r, err := render(val, startVars, v)
		if err != nil {
			return fail("rendering start.env.%s: %v", k, err)
		}
		env = process.SetEnv(env, map[string]string{k: r})
	}
	inst.out = process.NewOutput(process.OutputBytes, inst.secrets)
	inst.grace = s.StopGrace
	if inst.grace <= 0 {
		inst.grace = process.DefaultStopGrace
	}
	cannotRun := func(cr *process.CannotRunError) error {
		inst.Close()
		cr.Install = t.spec.Install
		return fmt.Errorf("starting target %s: %w", t.spec.Name, cr)
	}
	if r := t.spec.Resume; r != nil {
		resume := process.Command{Env: env, Dir: s.Dir, Stdout: inst.out, Stderr: inst.out, Leftovers: leftovers}
		if resume.Argv, err = renderArgs(r.Command, startVars, v); err != nil {
			return fail("rendering resume.command: %v", err)
		}
		if len(resume.Argv) == 0 || resume.Argv[0] == "" {
			return fail("resume.command rendered empty")
		}
		if _, err := process.Resolve(resume.Argv[0], s.Dir); err != nil {
			return cannotRun(&process.CannotRunError{Command: resume.Argv[0], Err: err})
		}
		for k, val := range r.Env {
			rv, err := render(val, startVars, v)
			if err != nil {
				return fail("rendering resume.env.%s: %v", k, err)
			}
			resume.Env = process.SetEnv(resume.Env, map[string]string{k: rv})
		}
		inst.resume = &resume
	}
	p, err := process.Start(process.Command{Argv: argv, Env: env, Dir: s.Dir, Stdout: inst.out, Stderr: inst.out, Leftovers: leftovers})
	var cr *process.CannotRunError
	if errors.As(err, &cr) {
		return cannotRun(cr)
	}
	if err != nil {
		return fail("%v", err)
	}
	inst.proc = p
	inst.base, inst.ready = base, base
	if s.ReadyURL != "" {
		if inst.ready, err = render(s.ReadyURL, proxyVars, v); err != nil {
			return fail("rendering start.ready.url: %v", err)
		}
	}
	inst.readyTimeout = s.ReadyTimeout
	if inst.readyTimeout <= 0 {
		inst.readyTimeout = DefaultReadyTimeout
	}
	if port, err := strconv.Atoi(v.Port); err == nil && !t.fixedPort {
		inst.port = port
	}
	if err := inst.awaitReady(ctx, p); err != nil {
		return fail("%w", err)
	}
	return nil
}

// awaitReady waits until p answers at the instance's readiness URL and, on
// a port the harness picked, that p's process group holds it: an error
// wrapping errPortTaken when another process does.
func (i *proxyInstance) awaitReady(ctx context.Context, p *process.Process) error {
	if err := waitReady(ctx, p, i.ready, i.readyTimeout); err != nil {
		if addr, taken := listeningAt(i.base); taken && i.port > 0 && p.Exited() {
			return fmt.Errorf("%w, and the port picked for it, %s, is held by another process: %w", err, addr, errPortTaken)
		}
		return err
	}
	if i.port > 0 && sameAddr(i.ready, i.base) {
		if owned, known := p.Listens(i.port); known && !owned {
			return fmt.Errorf("%s answered, but not from the %s process: the port picked for it was taken by another process: %w", i.ready, i.name, errPortTaken)
		}
	}
	return nil
}

// errPortTaken marks a start that failed because the port the harness
// picked for the proxy was taken by another process before the proxy
// listened on it (a port is free only until someone binds it: a fake of a
// parallel run, another program). Start picks another, up to portAttempts
// times.
var errPortTaken = errors.New("port taken by another process")

// portAttempts bounds how many ports Start tries for one proxy.
const portAttempts = 3

// pickPort is freePort; tests replace it to hand out a port something
// else holds.
var pickPort = freePort

// sameAddr reports whether URLs a and b name the same host and port.
func sameAddr(a, b string) bool {
	ua, err1 := url.Parse(a)
	ub, err2 := url.Parse(b)
	return err1 == nil && err2 == nil && ua.Host == ub.Host
}

// waitReady polls url with GET until any HTTP answer arrives, the process
// exits, ctx ends or timeout passes.
func waitReady(ctx context.Context, p *process.Process, url string, timeout time.Duration) error {
	ctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	client := &http.Client{Timeout: time.Second}
	defer client.CloseIdleConnections()
	tick := time.NewTicker(25 * time.Millisecond)
	defer tick.Stop()
	for {
		req, err := http.NewRequestWithContext(ctx, http.MethodGet, url, nil)
		if err != nil {
			return fmt.Errorf("readiness URL %q: %w", url, err)
		}
		if resp, err := client.Do(req); err == nil {
			resp.Body.Close()
			return nil
		}
		select {
		case <-p.Done():
			return fmt.Errorf("the process exited during start (%s) before %s answered", p.ExitDescription(), url)
		case <-ctx.Done():
			select {
			case <-p.Done():
				return fmt.Errorf("the process exited during start (%s) before %s answered", p.ExitDescription(), url)
			default:
			}
			if errors.Is(ctx.Err(), context.DeadlineExceeded) {
				return fmt.Errorf("not ready: %s gave no HTTP answer within %s (start.ready.timeout)", url, timeout)
			}
			return fmt.Errorf("interrupted while waiting for %s: %w", url, ctx.Err())
		case <-tick.C:
		}
	}
}

// listeningAt reports whether something already accepts connections at the
// host:port of base.
func listeningAt(base string) (string, bool) {
	u, err := url.Parse(base)
	if err != nil || u.Host == "" {
		return "", false
	}
	addr := u.Host
	if u.Port() == "" {
		addr = net.JoinHostPort(u.Hostname(), map[string]string{"https": "443"}[u.Scheme]+map[bool]string{true: "80"}[u.Scheme != "https"])
	}
	c, err := net.DialTimeout("tcp", addr, 200*time.Millisecond)
	if err != nil {
		return addr, false
	}
	c.Close()
	return addr, true
}

// freePort returns a loopback port that was free a moment ago.
func freePort() (string, error) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return "", fmt.Errorf("finding a free port: %w", err)
	}
	defer ln.Close()
	_, port, _ := net.SplitHostPort(ln.Addr().String())
	return port, nil
}

// proxyInstance is a proxy target wired to a pair of fakes, with the process
// the harness started for it, if any.
type proxyInstance struct {
	name       string
	setup      history.Setup
	app        *app.Client
	out        *process.Output
	grace      time.Duration
	configPath string
	tempDir    string // the run directory ({{run_dir}}); it holds the rendered config unless start.config_dir does
	notes      []string
	secrets    []string // masked in what the answers show
	// base, ready, readyTimeout and port are where the started proxy
	// listens, its readiness URL and bound, and the port the harness
	// picked for it (0: the url's own).
	base, ready  string
	readyTimeout time.Duration
	port         int
	// resume is the rendered resume command; nil without one.
	resume *process.Command

	mu   sync.Mutex
	proc *process.Process // the current life's
}

// Send sends req; the answer's excerpt and any transport error have the
// target's secrets (header and environment values) masked, since a proxy may
// echo a key back in an error. With req.Kill, on a proxy with a resume, it
// kills the proxy's process group at the kill point and starts the resume
// (resumeLife): the app's connection breaks with the kill and the harness
// does not send the request again; the resumed proxy carries on with its
// own pending work, which the run's fakes see.
func (i *proxyInstance) Send(ctx context.Context, req Request) history.Exchange {
	p := i.process()
	if req.Kill == nil || i.resume == nil {
		x := i.send(ctx, req)
		i.noteExit(&x, p)
		return x
	}
	ctx, cancel := context.WithCancel(ctx) // ends the lives' watchers
	defer cancel()
	answered := make(chan struct{})
	var x history.Exchange
	go func() {
		defer close(answered)
		x = i.send(ctx, req)
	}()
	first := life{proc: p, start: time.Now(), done: answered, proxy: true, outcome: func() (int, bool, string) {
		return -1, x.CleanEnd, x.Body
	}}
	last, err := req.Kill.lives(ctx, first, func(ctx context.Context, n int, reached <-chan struct{}) (life, error) {
		return i.resumeLife(ctx, req.Kill, n, reached)
	})
	i.mu.Lock()
	i.proc = last.proc
	i.mu.Unlock()
	<-answered        // the kill broke it, or ctx ended it
	i.noteExit(&x, p) // a kill of the first life has reaped it by now
	if err != nil {
		x.TransportError = process.Mask(err.Error(), i.secrets)
	}
	return x
}

// send sends req, its answer's secrets masked.
func (i *proxyInstance) send(ctx context.Context, req Request) history.Exchange {
	x := i.app.Send(ctx, req.Request)
	x.Body = process.Mask(x.Body, i.secrets)
	x.TransportError = process.Mask(x.TransportError, i.secrets)
	return x
}

// noteExit adds to x's transport error that p, the proxy's process (nil: not
// started by the harness), has exited.
func (i *proxyInstance) noteExit(x *history.Exchange, p *process.Process) {
	if p == nil || x.TransportError == "" {
		return
	}
	select {
	case <-p.Done():
		x.TransportError += fmt.Sprintf(" (the %s process %s during the run)", i.name, p.ExitDescription())
	default:
	}
}

// resumeLife starts the n-th life of the proxy, its resume, on the same
// port, run directory and config, and waits until it is ready or, once
// reached is closed, at its kill point (a proxy that resumes its pending
// work before it serves); its output goes on the instance's, after a line
// that says the life began. The life is done once the fakes gave the run
// its final model answer after the resume began (Kill.Finished: the proxy
// finished its pending turn, a success) or its process exited (its exit
// code, no success); it tells no app anything.
func (i *proxyInstance) resumeLife(ctx context.Context, k *Kill, n int, reached <-chan struct{}) (life, error) {
	begin := time.Now()
	fmt.Fprintf(i.out, "replaycheck: life %d of %s: its resume starts\n", n, i.name)
	p, err := process.Start(*i.resume)
	if err != nil {
		return life{}, fmt.Errorf("starting the resume of %s: %w", i.name, err)
	}
	rctx, stop := context.WithCancel(ctx)
	go func() {
		select {
		case <-reached: // nil: never
			stop()
		case <-rctx.Done():
		}
	}()
	err = i.awaitReady(rctx, p)
	stop()
	if err != nil && !closed(reached) {
		_ = p.Stop(0)
		return life{}, fmt.Errorf("resuming %s: %w%s", i.name, err, process.Tail(i.name, i.out.Lines()))
	}
	done := make(chan struct{})
	var finished bool // set before done closes
	go func() {
		fctx, cancel := context.WithCancel(ctx)
		defer cancel()
		go func() {
			select {
			case <-p.Done():
				cancel()
			case <-fctx.Done():
			}
		}()
		if k.Finished != nil && k.Finished(fctx, begin) == nil {
			finished = true
			close(done)
			return
		}
		select {
		case <-p.Done():
			close(done)
		case <-ctx.Done(): // not done by itself
		}
	}()
	return life{proc: p, start: begin, done: done, proxy: true, outcome: func() (int, bool, string) {
		if finished {
			return -1, true, ""
		}
		return p.ExitCode(), false, ""
	}}, nil
}

// process is the current life's process; nil when the harness started none.
func (i *proxyInstance) process() *process.Process {
	i.mu.Lock()
	defer i.mu.Unlock()
	return i.proc
}

func (i *proxyInstance) Limits() history.Setup { return i.setup }

// BaseURL is the proxy's rendered URL and the spec's headers.
func (i *proxyInstance) BaseURL() (string, http.Header) { return i.app.Endpoint() }

// CannotRun is nil: a proxy that cannot run fails its Start.
func (i *proxyInstance) CannotRun() error { return nil }

// Close stops the proxy's process group and removes the rendered config and
// its temporary directory.
func (i *proxyInstance) Close() error {
	var errs []error
	if p := i.process(); p != nil {
		if err := p.Stop(i.grace); err != nil {
			errs = append(errs, fmt.Errorf("stopping %s: %w", i.name, err))
		}
	}
	if i.configPath != "" {
		if err := os.Remove(i.configPath); err != nil && !errors.Is(err, os.ErrNotExist) {
			errs = append(errs, err)
		}
	}
	if i.tempDir != "" {
		if err := os.RemoveAll(i.tempDir); err != nil {
			errs = append(errs, err)
		}
	}
	if i.app != nil {
		i.app.Close()
	}
	return errors.Join(errs...)
}

// Output is the started proxy's output; nil when no process was started.
func (i *proxyInstance) Output() *process.Output { return i.out }

// Notes says which of the scenario's gateway knobs were not applied.
func (i *proxyInstance) Notes() []string { return i.notes }
