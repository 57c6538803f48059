package scenario

import (
	"errors"
	"fmt"
	"io"
	"io/fs"
	"maps"
	"os"
	"path"
	"path/filepath"
	"reflect"
	"slices"
	"strings"

	"github.com/goccy/go-yaml"
	"github.com/goccy/go-yaml/ast"
	"github.com/goccy/go-yaml/parser"
	"github.com/goccy/go-yaml/token"

	"github.com/replaycheck/replaycheck/fakes/ledger"
	"github.com/replaycheck/replaycheck/harness/history"
	"github.com/replaycheck/replaycheck/harness/rules"
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
			errs = append(errs, &Error{File: p, Msg: DescribeReadError(err)})
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
			errs = append(errs, &Error{File: p, Msg: DescribeReadError(err)})
		}
	}
	var c collector
	c.errs = errs
	for _, f := range files {
		src, err := ReadFile(f, MaxFileSize)
		if err != nil {
			c.errs = append(c.errs, &Error{File: f, Msg: DescribeReadError(err)})
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
			c.errs = append(c.errs, newError(file, src, s.Line, 1, "duplicate scenario name %q (first in %s:%d)", s.Name, prev.File, prev.Line))
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
			c.errs = append(c.errs, &Error{File: name, Msg: DescribeReadError(err)})
			return nil
		}
		c.add(name, src)
		return nil
	})
	if err != nil {
		c.errs = append(c.errs, &Error{File: filepath.Join(prefix, root), Msg: DescribeReadError(err)})
	}
	return c.result()
}

// ReadFile reads the file at path, refusing one larger than limit bytes. It
// bounds the reads of every YAML file the harness loads (scenarios, targets,
// baselines).
func ReadFile(path string, limit int) ([]byte, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	b, err := io.ReadAll(io.LimitReader(f, int64(limit)+1))
	if err != nil {
		return nil, err
	}
	if len(b) > limit {
		return nil, fmt.Errorf("larger than %d bytes", limit)
	}
	return b, nil
}

// DescribeReadError is the text of a ReadFile error for an *Error whose File
// already names the path: a *fs.PathError gives only its cause.
func DescribeReadError(err error) string {
	var pe *fs.PathError
	if errors.As(err, &pe) {
		return pe.Err.Error()
	}
	return err.Error()
}

// Parse decodes the scenarios in src, which was read from file, strictly: an
// unknown field, a wrong type, a bad duration, an unknown fault, rule,
// endpoint or template variable is an *Error at its line and column. A
// scenario with a problem is left out; the others are returned.
func Parse(file string, src []byte) ([]*Scenario, ErrorList) {
	errs := checkTemplates(file, src)
	var f *ast.File
	err := guard(func() (err error) { f, err = parser.ParseBytes(src, 0); return err })
	if err != nil {
		return nil, append(errs, yamlError(file, src, err, nil))
	}
	var nodes []ast.Node
	for _, doc := range f.Docs {
		body := unwrap(doc.Body)
		switch n := body.(type) {
		case nil:
		case *ast.SequenceNode:
			for _, item := range n.Values {
				nodes = append(nodes, unwrap(item))
			}
		default:
			nodes = append(nodes, n)
		}
	}
	if len(nodes) == 0 && len(errs) == 0 {
		return nil, ErrorList{{File: file, Msg: "no scenario in the file; want a scenario (a mapping) or a list of them"}}
	}
	var out []*Scenario
	for _, n := range nodes {
		if !isMapping(n) {
			line, col := tokenPos(n)
			errs = append(errs, newError(file, src, line, col, "want a scenario (a mapping with name, request, expect, …), got %s", n.Type()))
			continue
		}
		s := &Scenario{File: file}
		s.Line, _ = tokenPos(n)
		if err := guard(func() error { return yaml.NodeToValue(n, s, yaml.Strict(), yaml.DisallowUnknownField()) }); err != nil {
			errs = append(errs, yamlError(file, src, err, n))
			continue
		}
		if verrs := validate(file, src, n, s); len(verrs) > 0 {
			errs = append(errs, verrs...)
			continue
		}
		s.Warnings = clientWarnings(file, src, n, s)
		out = append(out, s)
	}
	return out, errs
}

// validate checks what decoding cannot: required parts, fault and script
// settings, rule names and count keys.
func validate(file string, src []byte, n ast.Node, s *Scenario) ErrorList {
	var errs ErrorList
	fail := func(path []any, format string, args ...any) {
		line, col := tokenPos(at(n, path...))
		errs = append(errs, newError(file, src, line, col, format, args...))
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
			fail([]any{"requests", i}, "request needs an endpoint: chat, responses or messages")
		}
	}
	if s.Request != nil && s.Request.Endpoint == "" && !client {
		fail([]any{"request"}, "request needs an endpoint: chat, responses or messages")
	}
	if reflect.DeepEqual(s.Expect, history.Expect{}) {
		fail([]any{"expect"}, "scenario %q expects nothing: set expect with counts or rules", s.Name)
	}
	if err := s.Model.Validate(); err != nil {
		fail([]any{"model"}, "model: %v", err)
	}
	for i, f := range s.Faults.Upstream {
		if err := f.Validate(); err != nil {
			fail([]any{"faults", "upstream", i}, "upstream fault: %v", err)
		}
	}
	for i, f := range s.Faults.MCP {
		if err := f.Validate(); err != nil {
			fail([]any{"faults", "mcp", i}, "mcp fault: %v", err)
		}
	}
	known := rules.Names()
	for i, r := range s.Expect.Rules {
		if !slices.Contains(known, r) {
			fail([]any{"expect", "rules", i}, "unknown rule %q; want one of %s", r, strings.Join(known, ", "))
		}
	}
	checkCounts := func(c history.Counts, prefix ...any) {
		for _, k := range slices.Sorted(maps.Keys(c.Upstream)) {
			if err := rules.UpstreamKey(k); err != nil {
				fail(append(slices.Clone(prefix), "upstream", k), "%v", err)
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
	checkCounts(s.Expect.Counts, "expect")
	for _, p := range slices.Sorted(maps.Keys(s.Expect.Targets)) {
		if _, err := path.Match(p, ""); err != nil {
			fail([]any{"expect", "targets", p}, "targets: bad target name pattern %q: want a path.Match pattern such as builtin:* (%v)", p, err)
		}
		c := s.Expect.Targets[p]
		if reflect.DeepEqual(c, history.Counts{}) {
			fail([]any{"expect", "targets", p}, "targets %q expects nothing: set counts such as {upstream: {initial: 1}}", p)
		}
		checkCounts(c, "expect", "targets", p)
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
		reqs = append(reqs, req{"request", at(n, "request")})
	}
	for i := range s.Requests {
		reqs = append(reqs, req{fmt.Sprintf("requests[%d]", i), at(n, "requests", i)})
	}
	var out []*Error
	for _, r := range reqs {
		for _, p := range pairs(r.node) {
			key := keyName(p)
			i := slices.IndexFunc(clientIgnored, func(c struct{ field, why string }) bool { return c.field == key })
			if i < 0 {
				continue
			}
			line, col := tokenPos(p.Key)
			e := newError(file, src, line, col, "%s.%s is ignored on client targets, where this scenario (expect.client) runs: %s",
				r.label, key, clientIgnored[i].why)
			e.Warning = true
			out = append(out, e)
		}
	}
	return out
}

// yamlError turns a decoding error into an *Error at its position. Errors of
// custom decoders (durations, fault timings, endpoints) carry no position;
// they are found again by decoding the node's parts one by one.
func yamlError(file string, src []byte, err error, n ast.Node) *Error {
	return yamlErrorOf(file, src, err, n, reflect.TypeFor[Scenario]())
}

// yamlErrorOf is yamlError for a node decoded into a value of type t.
func yamlErrorOf(file string, src []byte, err error, n ast.Node, t reflect.Type) *Error {
	var te *yaml.TypeError
	if errors.As(err, &te) && te.Token != nil {
		p := te.Token.Position
		return newError(file, src, p.Line, p.Column, "%s", typeMessage(te))
	}
	var ye yaml.Error
	if errors.As(err, &ye) && ye.GetToken() != nil {
		p := ye.GetToken().Position
		msg := ye.GetMessage()
		if strings.HasPrefix(msg, "unknown field ") && n != nil {
			if names := fieldsAround(n, t, p.Line, p.Column); len(names) > 0 {
				msg += "; want one of " + strings.Join(names, ", ")
			}
		}
		return newError(file, src, p.Line, p.Column, "%s", msg)
	}
	if n != nil {
		if at, lerr := locate(n, t); at != nil {
			msg := lerr.Error()
			var ce *history.CountError
			if errors.As(lerr, &ce) {
				// A count names its key ("writes: …") and points at the
				// bound at fault.
				if key := keyOf(at); key != "" && !strings.HasPrefix(msg, key) {
					msg = key + ": " + msg
				}
				if ce.Bound != "" {
					at = valueOf(at, ce.Bound, ce.Key)
				}
			}
			line, col := tokenPos(at)
			return newError(file, src, line, col, "%s", msg)
		}
		line, col := tokenPos(n)
		return newError(file, src, line, col, "%s", err.Error())
	}
	return &Error{File: file, Msg: err.Error()}
}

// typeMessage says what a field wants in YAML terms rather than Go's.
func typeMessage(te *yaml.TypeError) string {
	want := te.DstType.String()
	switch te.DstType.Kind() {
	case reflect.Int, reflect.Int8, reflect.Int16, reflect.Int32, reflect.Int64, reflect.Uint, reflect.Uint8, reflect.Uint16, reflect.Uint32, reflect.Uint64:
		want = "a whole number"
	case reflect.Float32, reflect.Float64:
		want = "a number"
	case reflect.Bool:
		want = "true or false"
	case reflect.String:
		want = "a string"
	case reflect.Slice, reflect.Array:
		want = "a list"
	case reflect.Map, reflect.Struct:
		want = "a mapping"
	}
	msg := fmt.Sprintf("want %s, got %q", want, te.Token.Value)
	if key := te.Token.Prev; key != nil && key.Type == token.MappingValueType && key.Prev != nil {
		msg = key.Prev.Value + ": " + msg
	}
	return msg
}

var (
	funcUnmarshaler  = reflect.TypeFor[interface{ UnmarshalYAML(func(any) error) error }]()
	bytesUnmarshaler = reflect.TypeFor[interface{ UnmarshalYAML([]byte) error }]()
)

// locate returns the deepest node under n (of Go type t) that fails to
// decode, with its error, or nil when every part decodes.
func locate(n ast.Node, t reflect.Type) (ast.Node, error) {
	n = unwrap(n)
	for t.Kind() == reflect.Pointer {
		t = t.Elem()
	}
	custom := reflect.PointerTo(t).Implements(funcUnmarshaler) || reflect.PointerTo(t).Implements(bytesUnmarshaler)
	if custom {
		err := guard(func() error {
			return yaml.NodeToValue(n, reflect.New(t).Interface(), yaml.Strict(), yaml.DisallowUnknownField())
		})
		if err == nil {
			return nil, nil
		}
		if at, aerr := locateChildren(n, t); at != nil {
			return at, aerr
		}
		return n, err
	}
	return locateChildren(n, t)
}

func locateChildren(n ast.Node, t reflect.Type) (ast.Node, error) {
	switch t.Kind() {
	case reflect.Struct:
		for _, p := range pairs(n) {
			f, ok := fieldByYAMLName(t, keyName(p))
			if !ok {
				continue
			}
			if at, err := locate(p.Value, f.Type); at != nil {
				return at, err
			}
		}
	case reflect.Slice:
		if seq, ok := n.(*ast.SequenceNode); ok {
			for _, v := range seq.Values {
				if at, err := locate(v, t.Elem()); at != nil {
					return at, err
				}
			}
		}
	case reflect.Map:
		for _, p := range pairs(n) {
			if at, err := locate(p.Value, t.Elem()); at != nil {
				return at, err
			}
		}
	}
	return nil, nil
}

// fieldsAround returns the YAML field names of the struct whose mapping under
// n (of Go type t) has a key at line:col, so an unknown field can be answered
// with the known ones; nil when no such mapping is found.
func fieldsAround(n ast.Node, t reflect.Type, line, col int) []string {
	n = unwrap(n)
	for t.Kind() == reflect.Pointer {
		t = t.Elem()
	}
	switch t.Kind() {
	case reflect.Struct:
		for _, p := range pairs(n) {
			if l, c := tokenPos(p.Key); l == line && c == col {
				return yamlNames(t)
			}
			if f, ok := fieldByYAMLName(t, keyName(p)); ok {
				if names := fieldsAround(p.Value, f.Type, line, col); names != nil {
					return names
				}
			}
		}
	case reflect.Slice:
		if seq, ok := n.(*ast.SequenceNode); ok {
			for _, v := range seq.Values {
				if names := fieldsAround(v, t.Elem(), line, col); names != nil {
					return names
				}
			}
		}
	case reflect.Map:
		for _, p := range pairs(n) {
			if names := fieldsAround(p.Value, t.Elem(), line, col); names != nil {
				return names
			}
		}
	}
	return nil
}

// yamlNames returns the YAML names of t's fields, in declaration order.
func yamlNames(t reflect.Type) []string {
	var out []string
	for i := range t.NumField() {
		f := t.Field(i)
		name, opts, _ := strings.Cut(f.Tag.Get("yaml"), ",")
		switch {
		case name == "-" || !f.IsExported():
		case strings.Contains(opts, "inline") && f.Type.Kind() == reflect.Struct:
			out = append(out, yamlNames(f.Type)...)
		case name != "":
			out = append(out, name)
		}
	}
	return out
}

// fieldByYAMLName finds the field of struct type t that YAML key name sets,
// looking into inline structs.
func fieldByYAMLName(t reflect.Type, name string) (reflect.StructField, bool) {
	for i := range t.NumField() {
		f := t.Field(i)
		tag, opts, _ := strings.Cut(f.Tag.Get("yaml"), ",")
		if strings.Contains(opts, "inline") && f.Type.Kind() == reflect.Struct {
			if g, ok := fieldByYAMLName(f.Type, name); ok {
				return g, true
			}
			continue
		}
		if tag == name || tag == "" && strings.EqualFold(f.Name, name) {
			return f, true
		}
	}
	return reflect.StructField{}, false
}

// at returns the node at path under n (mapping keys as strings, sequence
// indexes as ints), or the deepest node found on the way.
func at(n ast.Node, path ...any) ast.Node {
	cur := unwrap(n)
	for _, step := range path {
		var next ast.Node
		switch k := step.(type) {
		case string:
			for _, p := range pairs(cur) {
				if keyName(p) == k {
					next = p.Value
					break
				}
			}
		case int:
			if seq, ok := cur.(*ast.SequenceNode); ok && k < len(seq.Values) {
				next = seq.Values[k]
			}
		}
		if next == nil {
			return cur
		}
		cur = unwrap(next)
	}
	return cur
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
	for _, p := range pairs(n) {
		if keyName(p) == key {
			if wantKey {
				return p.Key
			}
			return unwrap(p.Value)
		}
	}
	return n
}

// keyName is the key of p as the decoder reads it: unquoted.
func keyName(p *ast.MappingValueNode) string {
	if s, ok := p.Key.(*ast.StringNode); ok {
		return s.Value
	}
	return p.Key.String()
}

func pairs(n ast.Node) []*ast.MappingValueNode {
	switch m := unwrap(n).(type) {
	case *ast.MappingNode:
		return m.Values
	case *ast.MappingValueNode:
		return []*ast.MappingValueNode{m}
	}
	return nil
}

func isMapping(n ast.Node) bool {
	switch n.(type) {
	case *ast.MappingNode, *ast.MappingValueNode:
		return true
	}
	return false
}

func unwrap(n ast.Node) ast.Node {
	for {
		switch v := n.(type) {
		case *ast.TagNode:
			n = v.Value
		case *ast.AnchorNode:
			n = v.Value
		case *ast.DocumentNode:
			n = v.Body
		default:
			return n
		}
	}
}

func tokenPos(n ast.Node) (int, int) {
	if n == nil || n.GetToken() == nil {
		return 0, 0
	}
	p := n.GetToken().Position
	return p.Line, p.Column
}

// guard runs f and turns a panic of the YAML library (which some malformed
// inputs provoke) into an error.
func guard(f func() error) (err error) {
	defer func() {
		if r := recover(); r != nil {
			err = fmt.Errorf("cannot decode this YAML (%v)", r)
		}
	}()
	return f()
}

// ledgerTools are the tools the ledger serves: the names annotations and
// per-tool call counts may use.
func ledgerTools() []string {
	return []string{ledger.ToolCommitWrite, ledger.ToolCommitWriteKeyed, ledger.ToolReadLedger}
}
