package scenario

import (
	"errors"
	"fmt"
	"io/fs"
	"maps"
	"net/url"
	"os"
	"path"
	"path/filepath"
	"reflect"
	"slices"
	"strings"

	"github.com/goccy/go-yaml/ast"
	"github.com/goccy/go-yaml/token"

	"github.com/replaycheck/replaycheck/fakes/ledger"
	"github.com/replaycheck/replaycheck/fakes/upstream"
	"github.com/replaycheck/replaycheck/internal/envref"
	"github.com/replaycheck/replaycheck/internal/harness/history"
	"github.com/replaycheck/replaycheck/internal/harness/process"
	"github.com/replaycheck/replaycheck/internal/harness/rules"
	"github.com/replaycheck/replaycheck/internal/wire"
	"github.com/replaycheck/replaycheck/internal/yamlfile"
)

// MaxFileSize bounds the size of one scenario file.
const MaxFileSize = 1 << 20

// Load loads every scenario in paths: files, or directories searched
// recursively for *.yaml and *.yml files in lexical order. It reports every
// problem it finds as an ErrorList (each an *Error naming file, line and
// column), and the scenarios of the files that had none. Scenario names must
// be unique across all paths.
func Load(paths ...string) ([]*Scenario, error) {
	var files []string
	var errs ErrorList
	for _, p := range paths {
		fi, err := os.Stat(p)
		if err != nil {
			errs = append(errs, &Error{File: p, Msg: yamlfile.DescribeReadError(err)})
			continue
		}
		if !fi.IsDir() {
			files = append(files, p)
			continue
		}
		err = filepath.WalkDir(p, func(path string, d fs.DirEntry, err error) error {
			if err != nil {
				return err
			}
			if !d.IsDir() && (strings.HasSuffix(path, ".yaml") || strings.HasSuffix(path, ".yml")) {
				files = append(files, path)
			}
			return nil
		})
		if err != nil {
			errs = append(errs, &Error{File: p, Msg: yamlfile.DescribeReadError(err)})
		}
	}
	var c collector
	c.errs = errs
	for _, f := range files {
		src, err := yamlfile.ReadFile(f, MaxFileSize)
		if err != nil {
			c.errs = append(c.errs, &Error{File: f, Msg: yamlfile.DescribeReadError(err)})
			continue
		}
		c.add(f, src)
	}
	return c.result()
}

// collector gathers the scenarios of several files, checking that their
// names are unique, and every problem.
type collector struct {
	out  []*Scenario
	errs ErrorList
	seen map[string]*Scenario
}

func (c *collector) add(file string, src []byte) {
	if c.seen == nil {
		c.seen = map[string]*Scenario{}
	}
	ss, ferrs := Parse(file, src)
	c.errs = append(c.errs, ferrs...)
	for _, s := range ss {
		if prev, ok := c.seen[s.Name]; ok {
			c.errs = append(c.errs, yamlfile.NewError(file, src, s.Line, 1, "duplicate scenario name %q (first in %s:%d)", s.Name, prev.File, prev.Line))
			continue
		}
		c.seen[s.Name] = s
		c.out = append(c.out, s)
	}
}

func (c *collector) result() ([]*Scenario, error) {
	if len(c.errs) > 0 {
		return c.out, c.errs
	}
	return c.out, nil
}

// LoadFS loads every *.yaml and *.yml file under root in fsys, like Load;
// errors name files as prefix joined with their path in fsys.
func LoadFS(fsys fs.FS, root, prefix string) ([]*Scenario, error) {
	var c collector
	err := fs.WalkDir(fsys, root, func(p string, d fs.DirEntry, err error) error {
		if err != nil || d.IsDir() || !(strings.HasSuffix(p, ".yaml") || strings.HasSuffix(p, ".yml")) {
			return err
		}
		name := filepath.Join(prefix, filepath.FromSlash(p))
		src, err := fs.ReadFile(fsys, p)
		if err != nil {
			c.errs = append(c.errs, &Error{File: name, Msg: yamlfile.DescribeReadError(err)})
			return nil
		}
		c.add(name, src)
		return nil
	})
	if err != nil {
		c.errs = append(c.errs, &Error{File: filepath.Join(prefix, root), Msg: yamlfile.DescribeReadError(err)})
	}
	return c.result()
}

// Parse decodes the scenarios in src, which was read from file, strictly: an
// unknown field, a wrong type (a quoted "500" for a number, 123 for a
// string: what the published schema refuses, it refuses), a bad duration, an
// unknown fault, rule, endpoint or template variable is an *Error at its line
// and column. A
// scenario with a problem is left out; the others are returned.
func Parse(file string, src []byte) ([]*Scenario, ErrorList) {
	errs := checkTemplates(file, src)
	docs, err := yamlfile.Parse(file, src)
	if err != nil {
		return nil, append(errs, asError(err))
	}
	var nodes []ast.Node
	for _, body := range docs {
		if seq, ok := body.(*ast.SequenceNode); ok {
			for _, item := range seq.Values {
				nodes = append(nodes, yamlfile.Unwrap(item))
			}
			continue
		}
		nodes = append(nodes, body)
	}
	if len(nodes) == 0 && len(errs) == 0 {
		return nil, ErrorList{{File: file, Msg: "no scenario in the file; want a scenario (a mapping) or a list of them"}}
	}
	var out []*Scenario
	for _, n := range nodes {
		if !yamlfile.IsMapping(n) {
			errs = append(errs, yamlfile.ErrorAt(file, src, n, "want a scenario (a mapping with name, request, expect, …), got %s", n.Type()))
			continue
		}
		s := &Scenario{File: file}
		s.Line, _ = yamlfile.Pos(n)
		if err := yamlfile.DecodeNode(file, src, n, s, yamlfile.WithBlame(blameCount)); err != nil {
			errs = append(errs, asError(err))
			continue
		}
		if verrs := validate(file, src, n, s); len(verrs) > 0 {
			errs = append(errs, verrs...)
			continue
		}
		if serrs := checkSchema(file, src, n); len(serrs) > 0 {
			errs = append(errs, serrs...)
			continue
		}
		s.Warnings = clientWarnings(file, src, n, s)
		out = append(out, s)
	}
	return out, errs
}

// asError is err, which yamlfile returns, as the *Error it is.
func asError(err error) *Error {
	var e *Error
	if errors.As(err, &e) {
		return e
	}
	return &Error{Msg: err.Error()}
}

// blameCount places a bad count (a *history.CountError) at the bound at
// fault and names its key ("writes: …").
func blameCount(at ast.Node, err error) (ast.Node, string) {
	msg := err.Error()
	var ce *history.CountError
	if !errors.As(err, &ce) {
		return at, msg
	}
	if key := keyOf(at); key != "" && !strings.HasPrefix(msg, key) {
		msg = key + ": " + msg
	}
	if ce.Bound != "" {
		at = valueOf(at, ce.Bound, ce.Key)
	}
	return at, msg
}

// validate checks what decoding cannot: required parts, fault and script
// settings, rule names and count keys.
func validate(file string, src []byte, n ast.Node, s *Scenario) ErrorList {
	var errs ErrorList
	fail := func(path []any, format string, args ...any) {
		errs = append(errs, yamlfile.ErrorAt(file, src, yamlfile.At(n, path...), format, args...))
	}
	if strings.TrimSpace(s.Name) == "" {
		fail([]any{"name"}, "scenario needs a name")
	}
	// A client scenario's request is one run of the client's command, which
	// sends what it sends: it needs neither a request nor an endpoint.
	client := s.Expect.Client != nil
	switch {
	case s.Request != nil && len(s.Requests) > 0:
		fail([]any{"requests"}, "set request or requests, not both")
	case s.Request == nil && len(s.Requests) == 0 && !client:
		fail(nil, "scenario %q needs a request: set request or requests", s.Name)
	}
	for i, r := range s.Requests {
		if r.Endpoint == "" && !client {
			fail([]any{"requests", i}, "request needs an endpoint: %s", EndpointNames())
		}
	}
	if s.Request != nil && s.Request.Endpoint == "" && !client {
		fail([]any{"request"}, "request needs an endpoint: %s", EndpointNames())
	}
	checkRepeat(s, fail)
	// allow_failures is a threshold over runs, not an expectation of one.
	if reflect.DeepEqual(s.Expect, history.Expect{AllowFailures: s.Expect.AllowFailures}) {
		fail([]any{"expect"}, "scenario %q expects nothing: set expect with counts or rules", s.Name)
	}
	if err := s.Model.Script.Validate(); err != nil {
		// A step's problem is placed at the step, or at its setting.
		at := []any{"model"}
		var se *upstream.StepError
		if errors.As(err, &se) {
			at = append(at, se.Step)
			if se.Field != "" {
				at = append(at, se.Field)
			}
		}
		fail(at, "model: %v", err)
	}
	if err := s.Model.load(file); err != nil {
		fail([]any{"model", "cassette"}, "model: %v", err)
	}
	if err := s.MCP.loadCassette(file); err != nil {
		fail([]any{"mcp", "cassette"}, "%v", err)
	}
	if s.MCP != nil {
		s.MCP.dir = filepath.Dir(file) // mcp.command runs there, as the cassette resolves
		if err := s.MCP.Protocol.Check(); err != nil {
			fail([]any{"mcp", "protocol"}, "mcp.protocol %q: %v", s.MCP.Protocol, err)
		}
	}
	for i, f := range s.Faults.Upstream {
		if err := f.Validate(); err != nil {
			fail([]any{"faults", "upstream", i}, "upstream fault: %v", err)
		}
	}
	for i, f := range s.Faults.MCP {
		if err := validateMCPFault(s, f); err != nil {
			at := []any{"faults", "mcp", i}
			// A setting of a fault kind is a FieldError (the setting) in
			// the chain of a FieldError (the kind).
			for inner := err; ; {
				var fe *ledger.FieldError
				if !errors.As(inner, &fe) {
					break
				}
				at = append(at, fe.Field)
				inner = fe.Err
			}
			fail(at, "mcp fault: %v", err)
		}
	}
	for i, f := range s.Faults.Target {
		if err := f.Validate(); err != nil {
			fail([]any{"faults", "target", i}, "target fault: %v", err)
		}
	}
	if len(s.Faults.Target) > 1 {
		fail([]any{"faults", "target", 1}, "one target fault per scenario: its times says how many kill-and-resume cycles")
	}
	checkTransport(s, fail)
	known := rules.Names()
	for i, r := range s.Expect.Rules {
		if !slices.Contains(known, r) {
			fail([]any{"expect", "rules", i}, "unknown rule %q; want one of %s", r, strings.Join(known, ", "))
		}
	}
	for i, r := range s.Expect.RulesIfJudged {
		switch {
		case !slices.Contains(known, r):
			fail([]any{"expect", "rules_if_judged", i}, "unknown rule %q; want one of %s", r, strings.Join(known, ", "))
		case slices.Contains(s.Expect.Rules, r):
			fail([]any{"expect", "rules_if_judged", i}, "rule %q is in both rules (must hold) and rules_if_judged (must not fail): name it in one", r)
		}
	}
	checkCounts := func(c history.Counts, prefix ...any) {
		for _, k := range slices.SortedFunc(maps.Keys(c.Upstream), wire.CompareCountKeys) {
			if err := k.Check(); err != nil {
				fail(append(slices.Clone(prefix), "upstream", k.String()), "%v", err)
			}
		}
		if m := c.MCP; m != nil && m.Calls != nil {
			for _, t := range slices.Sorted(maps.Keys(m.Calls.PerTool)) {
				if !slices.Contains(ledgerTools(), t) {
					fail(append(slices.Clone(prefix), "mcp", "calls", t), "mcp calls: unknown tool %q; want one of %s", t, strings.Join(ledgerTools(), ", "))
				}
			}
		}
	}
	// A status is judged as a number: a quoted "500" or a 700 would
	// decode, pass here and fail every run.
	checkStatus := func(c history.Counts, prefix ...any) {
		if c.Status == nil {
			return
		}
		at := append(slices.Clone(prefix), "status")
		if v := yamlfile.Unwrap(yamlfile.At(n, at...)); v.Type() != ast.IntegerType {
			fail(at, "status: want an HTTP status as a number such as 500, not a %s", strings.ToLower(v.Type().String()))
			return
		}
		if *c.Status < 100 || *c.Status > 599 {
			fail(at, "status: want an HTTP status from 100 to 599, got %d", *c.Status)
		}
	}
	checkCounts(s.Expect.Counts, "expect")
	checkStatus(s.Expect.Counts, "expect")
	for _, p := range slices.Sorted(maps.Keys(s.Expect.Targets)) {
		if _, err := path.Match(p, ""); err != nil {
			fail([]any{"expect", "targets", p}, "targets: bad target name pattern %q: want a path.Match pattern such as builtin:* (%v)", p, err)
		}
		c := s.Expect.Targets[p]
		if reflect.DeepEqual(c, history.Counts{}) {
			fail([]any{"expect", "targets", p}, "targets %q expects nothing: set counts such as {upstream: {initial: 1}}", p)
		}
		checkCounts(c, "expect", "targets", p)
		checkStatus(c, "expect", "targets", p)
	}
	// A tool the ledger does not serve would be counted or annotated as
	// nothing: a misspelt name must not pass as a count of zero.
	tools := ledgerTools()
	for _, t := range slices.Sorted(maps.Keys(s.Annotations)) {
		if !slices.Contains(tools, t) {
			fail([]any{"annotations", t}, "annotations: unknown tool %q; want one of %s", t, strings.Join(tools, ", "))
		}
	}
	slices.SortFunc(errs, func(a, b *Error) int { return a.Line*1000 + a.Col - b.Line*1000 - b.Col })
	return errs
}

// checkTransport checks mcp.transport and that the MCP faults need no
// transport but that one (ledger.Fault.Transport): a fault acting on the
// HTTP exchange cannot fire over stdio, nor one acting on the stdio process
// over HTTP.
func checkTransport(s *Scenario, fail func(path []any, format string, args ...any)) {
	want, from := wire.MCPTransportAny, ""
	if s.MCP != nil {
		switch s.MCP.Transport {
		case wire.MCPTransportAny, wire.MCPTransportHTTP, wire.MCPTransportStdio:
		default:
			fail([]any{"mcp", "transport"}, "mcp.transport %q: want %s or %s", s.MCP.Transport, wire.MCPTransportHTTP, wire.MCPTransportStdio)
			return
		}
		want, from = s.MCP.Transport, "mcp.transport is "+string(s.MCP.Transport)
		checkForward(s, fail)
	}
	for i, f := range s.Faults.MCP {
		need := f.Transport()
		if need == wire.MCPTransportAny || validateMCPFault(s, f) != nil {
			continue
		}
		if want == wire.MCPTransportAny {
			want, from = need, fmt.Sprintf("faults.mcp[%d] (%s) needs %s", i, f.Kind(), need)
			continue
		}
		if need != want {
			fail([]any{"faults", "mcp", i}, "mcp fault %s needs MCP over %s, but %s: a scenario runs over one transport", f.Kind(), need, from)
		}
	}
}

// validateMCPFault validates f as a fault of s: of the ledger's tools, or,
// when s forwards to a real server, of any tool name (the ledger checks it
// against the server's tools as it arms it).
func validateMCPFault(s *Scenario, f ledger.Fault) error {
	if s.MCP.Forward() != nil {
		return f.ValidateForwarded()
	}
	return f.Validate()
}

// checkForward checks mcp.relay, mcp.command, mcp.env, mcp.cassette and
// mcp.writes, and that a scenario forwarding to a real server sets no ledger
// annotations. It expands the environment's ${NAME} and ${NAME:-default} in
// mcp.command and mcp.env's values, as a target file does in its own
// (envref.Expand); their {{token}} and {{entry}} are the run's.
func checkForward(s *Scenario, fail func(path []any, format string, args ...any)) {
	m := s.MCP
	if m.Command != nil {
		m.Command = slices.Clone(m.Command)
	}
	for i, a := range m.Command {
		x, _, err := envref.Expand(a, os.Getenv)
		if err != nil {
			fail([]any{"mcp", "command", i}, "mcp.command: %v", err)
		}
		m.Command[i] = x
	}
	if m.Env != nil {
		m.Env = maps.Clone(m.Env)
	}
	for k, v := range m.Env {
		x, _, err := envref.Expand(v, os.Getenv)
		if err != nil {
			fail([]any{"mcp", "env", k}, "mcp.env.%s: %v", k, err)
		}
		m.Env[k] = x
	}
	if m.Forward() != nil && len(s.Annotations) > 0 {
		fail([]any{"annotations"}, "annotations are the ledger's tools' hints; a forwarded server advertises its own (use mcp.writes to say which of its tools write)")
	}
	for _, f := range []struct {
		name string
		set  bool
	}{{"env", m.Env != nil}, {"pass_env", m.PassEnv != nil}, {"install", m.Install != ""}} {
		if f.set && len(m.Command) == 0 {
			fail([]any{"mcp", f.name}, "mcp.%s belongs to mcp.command; set mcp.command too (a server at mcp.relay runs in its own)", f.name)
		}
	}
	for i, n := range m.PassEnv {
		if !process.VarName(n) {
			fail([]any{"mcp", "pass_env", i}, "mcp.pass_env: %q is not a variable name", n)
		}
	}
	switch {
	case m.Relay != "" && len(m.Command) > 0:
		fail([]any{"mcp", "command"}, "mcp.relay and mcp.command: set one, the MCP server to forward to")
	case m.Cassette != "" && (m.Relay != "" || len(m.Command) > 0):
		fail([]any{"mcp", "cassette"}, "mcp.cassette replays a recorded server in place of a real one: set one of mcp.relay, mcp.command and mcp.cassette")
	case m.Relay != "":
		if u, err := url.Parse(m.Relay); err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
			fail([]any{"mcp", "relay"}, "mcp.relay %q: want an http or https URL of a Streamable HTTP MCP endpoint", m.Relay)
		}
	case m.Command != nil && (len(m.Command) == 0 || m.Command[0] == ""):
		fail([]any{"mcp", "command"}, "mcp.command: want the server's argv, such as [npx, -y, my-mcp-server]")
	case m.Writes != nil && m.Forward() == nil:
		fail([]any{"mcp", "writes"}, "mcp.writes names the tools that write on a forwarded server; set mcp.relay, mcp.command or mcp.cassette too")
	}
}

// clientIgnored are the request fields a client target does not use, with
// why: a client's command sends its own requests.
var clientIgnored = []struct{ field, why string }{
	{"endpoint", "a client calls the endpoints it calls"},
	{"stream", "a client streams or not as it chooses"},
	{"prompt", "it reaches a client only as $REPLAYCHECK_PROMPT ({{prompt}} in a target file), which a client with its own prompt does not read"},
	{"model", "a client asks for the model it is configured with"},
	{"body", "a client builds its own request bodies"},
	{"headers", "a client sends its own headers"},
}

// clientWarnings warns about each request field of a client scenario
// (expect.client) that client targets ignore, at the field's key.
func clientWarnings(file string, src []byte, n ast.Node, s *Scenario) []*Error {
	if s.Expect.Client == nil {
		return nil
	}
	type req struct {
		label string
		node  ast.Node
	}
	var reqs []req
	if s.Request != nil {
		reqs = append(reqs, req{"request", yamlfile.At(n, "request")})
	}
	for i := range s.Requests {
		reqs = append(reqs, req{fmt.Sprintf("requests[%d]", i), yamlfile.At(n, "requests", i)})
	}
	var out []*Error
	for _, r := range reqs {
		for _, p := range yamlfile.Pairs(r.node) {
			key := yamlfile.KeyName(p)
			i := slices.IndexFunc(clientIgnored, func(c struct{ field, why string }) bool { return c.field == key })
			if i < 0 {
				continue
			}
			e := yamlfile.ErrorAt(file, src, p.Key, "%s.%s is ignored on client targets, where this scenario (expect.client) runs: %s",
				r.label, key, clientIgnored[i].why)
			e.Warning = true
			out = append(out, e)
		}
	}
	return out
}

// keyOf returns the mapping key whose value is n, read from the tokens
// before n ("writes" for the 1 of writes: 1), or "".
func keyOf(n ast.Node) string {
	tk := n.GetToken()
	if tk == nil {
		return ""
	}
	// A block mapping's token is its first key; a value's is itself.
	if m, ok := n.(*ast.MappingNode); ok && !m.IsFlowStyle && len(m.Values) > 0 {
		tk = m.Values[0].Key.GetToken()
	}
	if p := tk.Prev; p != nil && p.Type == token.MappingValueType && p.Prev != nil {
		return p.Prev.Value
	}
	return ""
}

// valueOf returns the value of key in mapping n (the key itself when
// wantKey), or n when it has no such key.
func valueOf(n ast.Node, key string, wantKey bool) ast.Node {
	for _, p := range yamlfile.Pairs(n) {
		if yamlfile.KeyName(p) == key {
			if wantKey {
				return p.Key
			}
			return yamlfile.Unwrap(p.Value)
		}
	}
	return n
}

// ledgerTools are the tools the ledger serves: the names annotations and
// per-tool call counts may use.
func ledgerTools() []string {
	return []string{ledger.ToolCommitWrite, ledger.ToolCommitWriteKeyed, ledger.ToolReadLedger}
}
