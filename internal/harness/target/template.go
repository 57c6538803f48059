package target

import (
	"context"
	"encoding/json"
	"fmt"
	"regexp"
	"sort"
	"strconv"
	"strings"
	"text/template"

	"github.com/replaycheck/replaycheck/internal/harness/scenario"
)

// Template variables of target files, written {{name}} (Go text/template
// syntax, so {{if fallbacks}}…{{end}} and {{range}} work too).
const (
	varUpstreamURL  = "upstream_url"        // the model API fake's base URL, with /v1
	varUpstreamRoot = "upstream_root"       // the same without /v1 (Anthropic-style base URLs)
	varMCPURL       = "mcp_url"             // the ledger's Streamable HTTP URL
	varUpstreamAddr = "upstream_addr"       // host:port of the model API fake
	varMCPAddr      = "mcp_addr"            // host:port of the ledger
	varPort         = "port"                // a free loopback port for a started proxy
	varConfig       = "config"              // the rendered config file's path
	varReplaycheck  = "replaycheck"         // the replaycheck binary
	varNumRetries   = "num_retries"         // the scenario's num_retries knob, "" when unset
	varFallbacks    = "fallbacks"           // the scenario's fallbacks knob, a map
	varToolTimeout  = "tool_timeout"        // the scenario's tool_timeout knob, "" when unset
	varStreamIdle   = "stream_idle_timeout" // the scenario's stream_idle_timeout knob, "" when unset
	varPrompt       = "prompt"              // a client run's rendered prompt
	varToken        = "token"               // a client run's run token, or the run's whose forwarded server starts
	varEntry        = "entry"               // a client run's ledger entry, or the run's whose forwarded server starts
	varRunDir       = "run_dir"             // a client run's fresh scratch directory, a started proxy instance's kept across its lives
	// The stdio ledger (replaycheck ledger-stdio {{mcp_url}}) for a client
	// that spawns its MCP servers: the whole command as a JSON array, the
	// binary alone, and its arguments as a JSON array (also a YAML flow list).
	varLedgerStdioJSON     = "ledger_stdio_json"
	varLedgerStdioCommand  = "ledger_stdio_command"
	varLedgerStdioArgsJSON = "ledger_stdio_args_json"
)

// LedgerStdioCommand is the name of the replaycheck command that serves a
// ledger over MCP stdio: its argv is {{replaycheck}}, LedgerStdioCommand,
// {{mcp_url}}.
const LedgerStdioCommand = "ledger-stdio"

// templateVars are the values target file templates are rendered with.
type templateVars struct {
	UpstreamURL, MCPURL         string
	Port, Config, Replaycheck   string
	NumRetries, ToolTimeout     string
	StreamIdleTimeout           string
	Fallbacks                   map[string]string
	Prompt, Token, Entry        string
	RunDir                      string
	upstreamAddr, mcpAddr, root string
}

// newTemplateVars fills the fakes' URLs and the scenario's knobs.
func newTemplateVars(f Fakes, knobs *scenario.Gateway, replaycheck string) templateVars {
	v := templateVars{UpstreamURL: f.Upstream, MCPURL: f.MCP, Replaycheck: replaycheck, Fallbacks: map[string]string{}}
	v.root = strings.TrimSuffix(f.Upstream, "/v1")
	v.upstreamAddr = hostPort(f.Upstream)
	v.mcpAddr = hostPort(f.MCP)
	if knobs != nil {
		if knobs.NumRetries != nil {
			v.NumRetries = strconv.Itoa(*knobs.NumRetries)
		}
		for from, to := range knobs.Fallbacks {
			v.Fallbacks[from] = to
		}
		if knobs.ToolTimeout > 0 {
			v.ToolTimeout = knobs.ToolTimeout.D().String()
		}
		if knobs.StreamIdleTimeout > 0 {
			v.StreamIdleTimeout = knobs.StreamIdleTimeout.D().String()
		}
	}
	return v
}

// ledgerStdioArgv is the argv of the stdio ledger for the ledger at MCPURL.
func (v templateVars) ledgerStdioArgv() []string {
	return []string{v.Replaycheck, LedgerStdioCommand, v.MCPURL}
}

// jsonArray is args as a JSON array of strings, with <, > and & as they
// are.
func jsonArray(args []string) string {
	var b strings.Builder
	enc := json.NewEncoder(&b)
	enc.SetEscapeHTML(false)
	if err := enc.Encode(args); err != nil {
		panic("encoding a list of strings: " + err.Error()) // cannot fail
	}
	return strings.TrimSuffix(b.String(), "\n")
}

func hostPort(u string) string {
	s := strings.TrimPrefix(strings.TrimPrefix(u, "http://"), "https://")
	host, _, _ := strings.Cut(s, "/")
	return host
}

// funcs returns the template functions of the variables in names.
func (v templateVars) funcs(names []string) template.FuncMap {
	all := template.FuncMap{
		varUpstreamURL:  func() string { return v.UpstreamURL },
		varUpstreamRoot: func() string { return v.root },
		varMCPURL:       func() string { return v.MCPURL },
		varUpstreamAddr: func() string { return v.upstreamAddr },
		varMCPAddr:      func() string { return v.mcpAddr },
		varPort:         func() string { return v.Port },
		varConfig:       func() string { return v.Config },
		varReplaycheck:  func() string { return v.Replaycheck },
		varNumRetries:   func() string { return v.NumRetries },
		varFallbacks:    func() map[string]string { return v.Fallbacks },
		varToolTimeout:  func() string { return v.ToolTimeout },
		varStreamIdle:   func() string { return v.StreamIdleTimeout },
		varPrompt:       func() string { return v.Prompt },
		varToken:        func() string { return v.Token },
		varEntry:        func() string { return v.Entry },
		varRunDir:       func() string { return v.RunDir },

		varLedgerStdioJSON:     func() string { return jsonArray(v.ledgerStdioArgv()) },
		varLedgerStdioCommand:  func() string { return v.Replaycheck },
		varLedgerStdioArgsJSON: func() string { return jsonArray(v.ledgerStdioArgv()[1:]) },
	}
	out := template.FuncMap{}
	for _, n := range names {
		out[n] = all[n]
	}
	return out
}

// Vars is a set of template variables: those a part of a target file may
// use.
type Vars int

// The sets of template variables.
const (
	// URLVars are a proxy's url's: {{port}}.
	URLVars Vars = iota
	// FakeVars are a proxy's bodies': the fakes' URLs and addresses.
	FakeVars
	// ProxyVars are a proxy's start.ready.url's and its config template's:
	// FakeVars, the knobs, {{port}}, {{run_dir}} (the instance's scratch
	// directory, which outlives a kill for its resume), {{replaycheck}} and
	// the stdio ledger's command ({{ledger_stdio_json}}, …).
	ProxyVars
	// StartVars are a proxy's start.command's, start.env's and resume's:
	// ProxyVars and {{config}}.
	StartVars
	// ClientVars are a client's command's and env's: FakeVars, the run's
	// prompt, token, entry and run_dir, {{replaycheck}} and the stdio
	// ledger's command ({{ledger_stdio_json}}, {{ledger_stdio_command}},
	// {{ledger_stdio_args_json}}).
	ClientVars
	// ForwardVars are a target's mcp.command's and mcp.env's (see Forward):
	// the run's token and entry.
	ForwardVars
)

// names lists the variables of vs.
func (vs Vars) names() []string {
	return [...][]string{URLVars: {varPort}, FakeVars: fakeVars, ProxyVars: proxyVars, StartVars: startVars, ClientVars: clientVars, ForwardVars: forwardVars}[vs]
}

// CheckTemplate parses text with the variables of vs and reports an unknown
// variable or a syntax error in words. Text without "{{" is plain.
func CheckTemplate(text string, vs Vars) error { return checkTemplate(text, vs.names()) }

// Variable sets, as lists of names.
var (
	fakeVars    = []string{varUpstreamURL, varUpstreamRoot, varMCPURL, varUpstreamAddr, varMCPAddr}
	knobVars    = []string{varNumRetries, varFallbacks, varToolTimeout, varStreamIdle}
	stdioVars   = []string{varLedgerStdioJSON, varLedgerStdioCommand, varLedgerStdioArgsJSON}
	proxyVars   = concat(fakeVars, knobVars, []string{varPort, varRunDir, varReplaycheck}, stdioVars)
	startVars   = concat(proxyVars, []string{varConfig})
	clientVars  = concat(fakeVars, []string{varPrompt, varToken, varEntry, varRunDir, varReplaycheck}, stdioVars)
	forwardVars = []string{varToken, varEntry}
)

func concat(parts ...[]string) []string {
	var out []string
	for _, p := range parts {
		out = append(out, p...)
	}
	return out
}

// usesVar reports whether one of texts uses a template variable of names
// ({{name}}, {{- name}}, or as an argument: {{json name}}).
func usesVar(texts []string, names ...string) bool {
	re := regexp.MustCompile(`\{\{[^}]*\b(` + strings.Join(names, "|") + `)\b`)
	for _, t := range texts {
		if re.MatchString(t) {
			return true
		}
	}
	return false
}

var undefinedFunc = regexp.MustCompile(`function "([^"]*)" not defined`)

// checkTemplate parses text with the variables in names and reports an
// unknown variable or a syntax error in words. Text without "{{" is plain.
func checkTemplate(text string, names []string) error {
	if !strings.Contains(text, "{{") {
		return nil
	}
	_, err := template.New("t").Option("missingkey=error").Funcs(templateVars{}.funcs(names)).Parse(text)
	if err == nil {
		return nil
	}
	if m := undefinedFunc.FindStringSubmatch(err.Error()); m != nil {
		sorted := append([]string(nil), names...)
		sort.Strings(sorted)
		return fmt.Errorf("unknown template variable {{%s}} here; want one of %s", m[1], strings.Join(sorted, ", "))
	}
	msg := err.Error()
	if i := strings.Index(msg, ": "); strings.HasPrefix(msg, "template: ") && i >= 0 {
		if j := strings.Index(msg[i+2:], ": "); j >= 0 {
			msg = msg[i+2+j+2:]
		}
	}
	return fmt.Errorf("bad template: %s", msg)
}

// render fills text's templates with v (names as in checkTemplate).
func render(text string, names []string, v templateVars) (string, error) {
	if !strings.Contains(text, "{{") {
		return text, nil
	}
	t, err := template.New("t").Option("missingkey=error").Funcs(v.funcs(names)).Parse(text)
	if err != nil {
		return "", err
	}
	var b strings.Builder
	if err := t.Execute(&b, nil); err != nil {
		return "", err
	}
	return b.String(), nil
}

// renderArgs renders a command: an argument that renders to several lines
// becomes one argument per non-empty line, one that renders empty is dropped
// (so {{range}} and {{if}} can add optional flags).
func renderArgs(args []string, names []string, v templateVars) ([]string, error) {
	var out []string
	for _, a := range args {
		r, err := render(a, names, v)
		if err != nil {
			return nil, err
		}
		if !strings.Contains(a, "{{") {
			out = append(out, r)
			continue
		}
		for _, l := range strings.Split(r, "\n") {
			if l != "" {
				out = append(out, l)
			}
		}
	}
	return out, nil
}

// renderValue renders every string in a decoded YAML value (body
// templates), stopping with ctx's error when ctx is done.
func renderValue(ctx context.Context, x any, names []string, v templateVars) (any, error) {
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	switch t := x.(type) {
	case string:
		return render(t, names, v)
	case map[string]any:
		out := make(map[string]any, len(t))
		for k, e := range t {
			r, err := renderValue(ctx, e, names, v)
			if err != nil {
				return nil, err
			}
			out[k] = r
		}
		return out, nil
	case []any:
		out := make([]any, len(t))
		for i, e := range t {
			r, err := renderValue(ctx, e, names, v)
			if err != nil {
				return nil, err
			}
			out[i] = r
		}
		return out, nil
	}
	return x, nil
}
