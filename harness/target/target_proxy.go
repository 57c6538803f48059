package target

import (
	"context"
	"errors"
	"fmt"
	"net"
	"net/http"
	"net/url"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"time"

	"github.com/replaycheck/replaycheck/fakes/fault"
	"github.com/replaycheck/replaycheck/harness/history"
	"github.com/replaycheck/replaycheck/harness/scenario"
	"github.com/replaycheck/replaycheck/internal/yamlfile"
)

// DefaultReadyTimeout bounds a started proxy's readiness when the file sets
// none.
const DefaultReadyTimeout = 30 * time.Second

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
}

// ProxyStart is how the harness starts a proxy.
type ProxyStart struct {
	// Command is the argv; it may use the fake variables, {{port}},
	// {{config}}, {{replaycheck}} and the knob variables.
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
	// Timeout bounds the wait; zero is DefaultReadyTimeout.
	Timeout fault.Duration `yaml:"timeout,omitempty" json:"timeout,omitempty" jsonschema_description:"deadline of the probe (default 30s)"`
}

// FakeAddrs are fixed loopback addresses of the fakes.
type FakeAddrs struct {
	// Upstream is the model API fake's host:port, e.g. 127.0.0.1:8765.
	Upstream string `yaml:"upstream_addr,omitempty" json:"upstream_addr,omitempty" jsonschema_description:"the model API fake's host:port, e.g. 127.0.0.1:8765"`
	// MCP is the ledger's host:port, e.g. 127.0.0.1:8766.
	MCP string `yaml:"mcp_addr,omitempty" json:"mcp_addr,omitempty" jsonschema_description:"the ledger MCP server's host:port, e.g. 127.0.0.1:8766"`
}

// The optional interfaces proxy targets implement.
var (
	_ Placer      = (*proxy)(nil)
	_ RetryHinter = (*proxy)(nil)
	_ Reachable   = (*proxyInstance)(nil)
	_ Noter       = (*proxyInstance)(nil)
	_ OutputTail  = (*proxyInstance)(nil)
)

// proxy is a proxy target loaded from a file.
type proxy struct {
	spec        ProxyFile
	name        string
	dir         string
	config      string // the config template's text
	configName  string // the config template's base name
	configDir   string // where the config is rendered; "" is a temporary directory
	replaycheck string
	secrets     []string
	fixedPort   bool // the URL names a port of its own (no {{port}})
}

func loadProxy(f *targetSource) (Target, error) {
	var p ProxyFile
	if err := f.decode(&p); err != nil {
		return nil, err
	}
	t := &proxy{name: f.name(p.Name), dir: f.dir(), replaycheck: f.opts.Replaycheck}
	if strings.TrimSpace(p.URL) == "" {
		return nil, f.errorf([]any{"url"}, "a proxy target needs a url, e.g. http://127.0.0.1:4000")
	}
	if err := f.check(p.URL, []string{varPort}, "url"); err != nil {
		return nil, err
	}
	for _, v := range p.Headers {
		t.secrets = append(t.secrets, v, strings.TrimPrefix(v, "Bearer "))
	}
	for ep, body := range p.Bodies {
		if !scenario.Endpoint(ep).Valid() {
			return nil, f.errorf([]any{"bodies"}, "bodies: unknown endpoint %q; want %s", ep, scenario.EndpointNames())
		}
		if err := checkBody(f, body, fakeVars, "bodies", ep); err != nil {
			return nil, err
		}
	}
	if p.NumRetries != nil && *p.NumRetries < 0 {
		return nil, f.errorf([]any{"num_retries"}, "num_retries %d: want 0 or more", *p.NumRetries)
	}
	if p.Fakes != nil {
		for _, a := range []struct{ key, addr string }{{"upstream_addr", p.Fakes.Upstream}, {"mcp_addr", p.Fakes.MCP}} {
			if a.addr == "" {
				continue
			}
			if _, _, err := net.SplitHostPort(a.addr); err != nil {
				return nil, f.errorf([]any{"fakes", a.key}, "%s %q: want host:port, e.g. 127.0.0.1:8765", a.key, a.addr)
			}
		}
	}
	if s := p.Start; s != nil {
		if len(s.Command) == 0 {
			return nil, f.errorf([]any{"start"}, "start needs a command (an argv list)")
		}
		for i, a := range s.Command {
			if err := f.check(a, startVars, "start", "command", i); err != nil {
				return nil, err
			}
		}
		for k, v := range s.Env {
			if err := f.check(v, startVars, "start", "env", k); err != nil {
				return nil, err
			}
			if f.takesEnv("start", "env", k) {
				t.secrets = append(t.secrets, v)
			}
		}
		if err := f.check(s.Ready.URL, proxyVars, "start", "ready", "url"); err != nil {
			return nil, err
		}
		if s.Config != "" {
			path := s.Config
			if !filepath.IsAbs(path) {
				path = filepath.Join(t.dir, path)
			}
			b, err := yamlfile.ReadFile(path, MaxTargetFileSize)
			if err != nil {
				return nil, f.errorf([]any{"start", "config"}, "config template %s: %s", path, yamlfile.DescribeReadError(err))
			}
			if err := checkTemplate(string(b), proxyVars); err != nil {
				return nil, f.errorf([]any{"start", "config"}, "config template %s: %v", path, err)
			}
			t.config = string(b)
			t.configName = strings.TrimSuffix(filepath.Base(path), ".tmpl")
		}
		if s.ConfigDir != "" && s.Config == "" {
			return nil, f.errorf([]any{"start", "config_dir"}, "config_dir without config: there is no config to render")
		}
		if s.ConfigDir != "" {
			dir := s.ConfigDir
			if !filepath.IsAbs(dir) {
				dir = filepath.Join(t.dir, dir)
			}
			// Absolute: {{config}} is handed to a proxy that runs in
			// start.dir, not in the harness's working directory.
			abs, err := filepath.Abs(dir)
			if err != nil {
				return nil, f.errorf([]any{"start", "config_dir"}, "config_dir %s: %v", dir, err)
			}
			if fi, err := os.Stat(abs); err != nil || !fi.IsDir() {
				return nil, f.errorf([]any{"start", "config_dir"}, "config_dir %s is no directory to render the config into", abs)
			}
			t.configDir = abs
		}
		if err := checkPassEnv(f, s.PassEnv, "start", "pass_env"); err != nil {
			return nil, err
		}
		if !filepath.IsAbs(s.Dir) {
			s.Dir = filepath.Join(t.dir, s.Dir)
		}
		t.fixedPort = !strings.Contains(p.URL, "{{")
	} else if p.Fakes == nil || p.Fakes.Upstream == "" || p.Fakes.MCP == "" {
		return nil, f.errorf(nil, "a proxy the harness does not start must name the fakes' fixed addresses (fakes: {upstream_addr, mcp_addr}) it is configured with; or set start to have it started with a rendered config")
	}
	t.secrets = append(t.secrets, f.secrets...)
	t.spec = p
	return t, nil
}

// checkBody checks the templates of every string in a body value.
func checkBody(f *targetSource, x any, names []string, path ...any) error {
	switch v := x.(type) {
	case string:
		return f.check(v, names, path...)
	case map[string]any:
		for k, e := range v {
			if err := checkBody(f, e, names, append(path, k)...); err != nil {
				return err
			}
		}
	case []any:
		for i, e := range v {
			if err := checkBody(f, e, names, append(path, i)...); err != nil {
				return err
			}
		}
	}
	return nil
}

// Name returns the file's name for the target.
func (t *proxy) Name() string { return t.name }

// Placement says where the target's fakes listen and whether its instances
// must run one at a time: with fixed fakes, a fixed port, or a proxy the
// harness does not start.
func (t *proxy) Placement() (FakeAddrs, bool) {
	var addrs FakeAddrs
	if t.spec.Fakes != nil {
		addrs = *t.spec.Fakes
	}
	return addrs, t.spec.Fakes != nil || t.fixedPort || t.spec.Start == nil
}

// RetryAfterHint is the file's retry_after_hint.
func (t *proxy) RetryAfterHint() time.Duration { return t.spec.RetryAfterHint.D() }

// Start starts the proxy (when the file says how) wired to f, and waits
// until it is ready.
func (t *proxy) Start(ctx context.Context, f Fakes, knobs *scenario.Gateway) (Instance, error) {
	v := newTemplateVars(f, knobs, t.replaycheck)
	inst := &proxyInstance{name: t.name, setup: history.Setup{NumRetries: -1}, secrets: append(parentSecrets(os.Environ()), t.secrets...)}
	if t.spec.NumRetries != nil {
		inst.setup.NumRetries = *t.spec.NumRetries
	}
	if knobs != nil {
		if knobs.NumRetries != nil {
			inst.setup.NumRetries = *knobs.NumRetries
		}
		inst.setup.Fallbacks = len(knobs.Fallbacks) > 0
		inst.setup.ToolTimeout = history.Duration(knobs.ToolTimeout)
		if t.spec.Start == nil {
			inst.notes = append(inst.notes, "the scenario's gateway knobs were not applied: target "+t.name+" is not started by the harness")
		}
	}
	var base string
	for attempt := 1; ; attempt++ {
		if t.spec.Start != nil {
			port, err := pickPort()
			if err != nil {
				return nil, fmt.Errorf("starting %s: %w", t.name, err)
			}
			v.Port = port
		}
		var err error
		if base, err = render(t.spec.URL, proxyVars, v); err != nil {
			return nil, fmt.Errorf("starting %s: rendering url: %w", t.name, err)
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
		inst.proc, inst.out, inst.configPath = nil, nil, ""
	}
	bodies := map[scenario.Endpoint]map[string]any{}
	for ep, body := range t.spec.Bodies {
		r, err := renderValue(ctx, body, fakeVars, v)
		if err != nil {
			inst.Close()
			return nil, fmt.Errorf("starting %s: rendering bodies.%s: %w", t.name, ep, err)
		}
		bodies[scenario.Endpoint(ep)], _ = r.(map[string]any)
	}
	header := http.Header{}
	for k, val := range t.spec.Headers {
		header.Set(k, val)
	}
	inst.sender = &sender{
		base:   base,
		client: &http.Client{Transport: &http.Transport{MaxIdleConnsPerHost: 64}},
		header: header,
		body: func(r Request) map[string]any {
			b := seedBody(r)
			for k, val := range bodies[r.Endpoint] {
				if val == nil {
					delete(b, k)
				} else {
					b[k] = val
				}
			}
			for k, val := range r.Body {
				b[k] = val
			}
			return b
		},
	}
	return inst, nil
}

// startProcess renders the config and the command, starts the proxy and
// waits until it answers at its readiness URL.
func (t *proxy) startProcess(ctx context.Context, inst *proxyInstance, base string, v templateVars) error {
	s := t.spec.Start
	fail := func(format string, args ...any) error {
		cause := fmt.Errorf(format, args...) // keeps a %w of errPortTaken
		var lines []string
		if inst.out != nil {
			lines = inst.out.Lines()
		}
		inst.Close()
		return fmt.Errorf("starting target %s: %w%s", t.name, cause, tail(t.name, lines))
	}
	var leftovers []string
	// A port the harness picked is checked once the proxy is up instead: it
	// may be taken between any check here and the proxy's listen.
	if addr, ok := listeningAt(base); ok && t.fixedPort {
		return fail("its address %s is already taken by another process (a proxy left running?); stop it or change the target's url", addr)
	}
	if t.config != "" {
		rendered, err := render(t.config, proxyVars, v)
		if err != nil {
			return fail("rendering config template: %v", err)
		}
		dir := t.configDir
		if dir == "" {
			tmp, err := os.MkdirTemp("", "replaycheck-proxy-")
			if err != nil {
				return fail("making a directory for the rendered config: %v", err)
			}
			inst.tempDir, dir = tmp, tmp
			leftovers = append(leftovers, tmp)
		}
		file, err := os.CreateTemp(dir, ".replaycheck-*-"+t.configName)
		if err != nil {
			return fail("writing the rendered config: %v", err)
		}
		inst.configPath = file.Name()
		if inst.tempDir == "" {
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
	env := processEnv(parent, s.PassEnv)
	for k, val := range s.Env {
		r, err := render(val, startVars, v)
		if err != nil {
			return fail("rendering start.env.%s: %v", k, err)
		}
		env = setEnv(env, map[string]string{k: r})
	}
	inst.out = newOutput(outputBytes, inst.secrets)
	inst.grace = s.StopGrace.D()
	if inst.grace <= 0 {
		inst.grace = defaultStopGrace
	}
	p, err := startProcess(command{argv: argv, env: env, dir: s.Dir, stdout: inst.out, stderr: inst.out, leftovers: leftovers})
	var cr *CannotRunError
	if errors.As(err, &cr) {
		inst.Close()
		cr.Install = t.spec.Install
		return fmt.Errorf("starting target %s: %w", t.name, cr)
	}
	if err != nil {
		return fail("%v", err)
	}
	inst.proc = p
	ready := base
	if s.Ready.URL != "" {
		if ready, err = render(s.Ready.URL, proxyVars, v); err != nil {
			return fail("rendering start.ready.url: %v", err)
		}
	}
	timeout := s.Ready.Timeout.D()
	if timeout <= 0 {
		timeout = DefaultReadyTimeout
	}
	if err := waitReady(ctx, p, ready, timeout); err != nil {
		if addr, taken := listeningAt(base); taken && !t.fixedPort && exited(p) {
			return fail("%v, and the port picked for it, %s, is held by another process: %w", err, addr, errPortTaken)
		}
		return fail("%v", err)
	}
	if port, err := strconv.Atoi(v.Port); err == nil && !t.fixedPort && sameAddr(ready, base) {
		if owned, known := groupListens(port, p.pgid); known && !owned {
			return fail("%s answered, but not from the %s process: the port picked for it was taken by another process: %w", ready, t.name, errPortTaken)
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

// exited reports whether p's leader has exited.
func exited(p *process) bool {
	select {
	case <-p.Done():
		return true
	default:
		return false
	}
}

// sameAddr reports whether URLs a and b name the same host and port.
func sameAddr(a, b string) bool {
	ua, err1 := url.Parse(a)
	ub, err2 := url.Parse(b)
	return err1 == nil && err2 == nil && ua.Host == ub.Host
}

// waitReady polls url with GET until any HTTP answer arrives, the process
// exits, ctx ends or timeout passes.
func waitReady(ctx context.Context, p *process, url string, timeout time.Duration) error {
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
	sender     *sender
	proc       *process
	out        *output
	grace      time.Duration
	configPath string
	tempDir    string // holds the rendered config; "" when it is elsewhere
	notes      []string
	secrets    []string // masked in what the answers show
}

// Send sends req; the answer's excerpt and any transport error have the
// target's secrets (header and environment values) masked, since a proxy may
// echo a key back in an error.
func (i *proxyInstance) Send(ctx context.Context, req Request) history.Exchange {
	x := i.sender.send(ctx, req)
	x.Body = mask(x.Body, i.secrets)
	x.TransportError = mask(x.TransportError, i.secrets)
	if i.proc != nil && x.TransportError != "" {
		select {
		case <-i.proc.Done():
			x.TransportError += fmt.Sprintf(" (the %s process %s during the run)", i.name, i.proc.ExitDescription())
		default:
		}
	}
	return x
}

func (i *proxyInstance) Limits() history.Setup { return i.setup }

// BaseURL is the proxy's rendered URL and the file's headers.
func (i *proxyInstance) BaseURL() (string, http.Header) { return i.sender.endpoint() }

// Close stops the proxy's process group and removes the rendered config and
// its temporary directory.
func (i *proxyInstance) Close() error {
	var errs []error
	if i.proc != nil {
		if err := i.proc.Stop(i.grace); err != nil {
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
	if i.sender != nil {
		i.sender.client.CloseIdleConnections()
	}
	return errors.Join(errs...)
}

// OutputSeq marks the proxy's output so far; 0 when no process was started.
func (i *proxyInstance) OutputSeq() uint64 {
	if i.out == nil {
		return 0
	}
	return i.out.Seq()
}

// OutputSince returns the proxy's kept output lines after mark seq.
func (i *proxyInstance) OutputSince(seq uint64) []string {
	if i.out == nil {
		return nil
	}
	return i.out.Since(seq)
}

// Notes says which of the scenario's gateway knobs were not applied.
func (i *proxyInstance) Notes() []string { return i.notes }
