// Package targetfile reads target files: YAML documents of kind proxy (a
// gateway at a URL, optionally started by the harness) or client (a command
// run once per scenario request), with ${NAME} references to the
// environment expanded, checked against the published schema (Schema) and
// the template variables each field may use, and turned into target values
// (target.NewProxy, target.NewClient). Resolve also takes a named target
// (builtin:guarded). Problems are *yamlfile.Error values at the file, line
// and column.
//
// A new file kind touches: its file here (its YAML type and a loader that
// fills its target's spec), a row in fileKinds and one in Schema's list
// (schema.go), schemas/target.schema.json (go test ./internal/harness/targetfile
// -update), the README's target-file section, and its kind in package
// target (see its doc). A new field touches its YAML type and loader here
// (proxy.go or client.go), the spec in package target, the schema file and
// the README.
package targetfile

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"sort"
	"strconv"
	"strings"

	"github.com/goccy/go-yaml/ast"
	"github.com/goccy/go-yaml/token"

	"github.com/replaycheck/replaycheck/internal/envref"
	"github.com/replaycheck/replaycheck/internal/harness/process"
	"github.com/replaycheck/replaycheck/internal/harness/target"
	"github.com/replaycheck/replaycheck/internal/secret"
	"github.com/replaycheck/replaycheck/internal/yamlfile"
)

// MaxSize bounds a target file and a config template.
const MaxSize = 1 << 20

// Options configure loading target files. The zero value reads the
// process environment and uses the running binary for {{replaycheck}}.
type Options struct {
	// Getenv reads ${NAME} references; nil means os.Getenv.
	Getenv func(string) string
	// Replaycheck is the value of {{replaycheck}}; "" means the running
	// binary (os.Executable).
	Replaycheck string
	// KeepRunDirs keeps each client run's scratch directory ({{run_dir}})
	// instead of removing it when the run ends.
	KeepRunDirs bool
}

// fileKind decodes a target file of one kind.
type fileKind struct {
	name string
	// load decodes the file strictly, checks it and builds its target.
	load func(f *source) (target.Target, error)
	doc  string
}

// fileKinds is the table of target file kinds, keyed by the YAML kind.
func fileKinds() []fileKind {
	return []fileKind{
		{"proxy", loadProxy, "a gateway or proxy reached at a URL, optionally started by the harness"},
		{"client", loadClient, "a command run once per scenario request, pointed at the fakes"},
	}
}

// Resolve turns a --target argument into a Target: a name with a known
// kind prefix (builtin:guarded, see target.ParseTarget) or the path of a
// target file.
func Resolve(arg string, opts Options) (target.Target, error) {
	if target.IsNamed(arg) {
		return target.ParseTarget(arg)
	}
	if _, err := os.Stat(arg); err == nil || strings.HasSuffix(arg, ".yaml") || strings.HasSuffix(arg, ".yml") {
		return Load(arg, opts)
	}
	t, err := target.ParseTarget(arg)
	if err != nil {
		return nil, fmt.Errorf("%w; nor is it a target file", err)
	}
	return t, nil
}

// Load loads a target file (kind proxy or client). Problems are
// *yamlfile.Error values naming the file, line and column; ${NAME}
// references are expanded here, and an unset one is such an error too.
func Load(path string, opts Options) (target.Target, error) {
	src, err := yamlfile.ReadFile(path, MaxSize)
	if err != nil {
		return nil, yamlfile.ReadError(path, err)
	}
	return Parse(path, src, opts)
}

// Parse parses the target file src, read from path (relative paths in it
// are resolved against path's directory).
func Parse(path string, src []byte, opts Options) (target.Target, error) {
	f, schemaErrs, err := open(path, src, opts)
	if err != nil {
		return nil, err
	}
	kind, _ := f.head["kind"].(string)
	var names []string
	for _, k := range fileKinds() {
		if k.name == kind {
			t, err := k.load(f)
			if err != nil {
				return nil, err
			}
			if len(schemaErrs) > 0 {
				return nil, schemaErrs
			}
			return t, nil
		}
		names = append(names, k.name+" ("+k.doc+")")
	}
	sort.Strings(names)
	if _, ok := f.head["kind"]; !ok {
		return nil, f.errorf(nil, "a target file needs a kind: %s", strings.Join(names, "; "))
	}
	return nil, f.errorf([]any{"kind"}, "unknown target kind %q; want %s", fmt.Sprint(f.head["kind"]), strings.Join(names, "; "))
}

// open parses the target file src, read from path, and expands its ${NAME}
// references. schemaErrs are what the published schema finds wrong with the
// file as written, reported when the loader finds none of its own.
func open(path string, src []byte, opts Options) (f *source, schemaErrs yamlfile.ErrorList, err error) {
	if opts.Getenv == nil {
		opts.Getenv = os.Getenv
	}
	if opts.Replaycheck == "" {
		opts.Replaycheck = selfPath()
	}
	body, err := yamlfile.ParseDocument(path, src)
	if err != nil {
		return nil, nil, err
	}
	// The file as written, ${NAME} references and all (expandEnv replaces
	// them in the tree), is what the published schema and an editor judge.
	schemaErrs = checkSchema(path, src, body)
	f = &source{path: path, src: src, opts: opts, fromEnv: map[ast.Node]bool{}, expanded: map[ast.Node]ast.Node{}}
	if f.root, err = f.expandEnv(body, true); err != nil {
		return nil, nil, err
	}
	if err := f.decode(&f.head); err != nil {
		return nil, nil, err
	}
	return f, schemaErrs, nil
}

// source is a target file being loaded: its text for errors and its tree
// with ${NAME} expanded.
type source struct {
	path string
	src  []byte
	// root is the document's body, every scalar value expanded (expandEnv);
	// its nodes keep their places in src.
	root ast.Node
	// head is root decoded as a map, for its kind.
	head map[string]any
	opts Options
	// secrets are the values of secret-named ${NAME} references in the file
	// (see secret.Name), masked wherever the target's output is shown.
	secrets []string
	// fromEnv holds the scalar nodes that took something from the
	// environment.
	fromEnv map[ast.Node]bool
	// expanded holds each node expandEnv has visited with what it became:
	// the node of an anchor is also at each of its aliases, and is
	// expanded once.
	expanded map[ast.Node]ast.Node
}

// dir is the directory relative paths in the file are resolved against.
func (f *source) dir() string { return filepath.Dir(f.path) }

// errorf returns a *yamlfile.Error at the node at path (mapping keys as
// strings, sequence indexes as ints), or at no place when the path is not in
// the file.
func (f *source) errorf(path []any, format string, args ...any) error {
	msg := process.Mask(fmt.Sprintf(format, args...), f.secrets)
	if len(path) == 0 {
		return &yamlfile.Error{File: f.path, Msg: msg}
	}
	return f.errorAt(f.node(path), "%s", msg)
}

// errorAt returns a *yamlfile.Error at node n (at no place when n is nil).
func (f *source) errorAt(n ast.Node, format string, args ...any) error {
	return yamlfile.ErrorAt(f.path, f.src, n, format, args...)
}

// node returns the node at path (mapping keys as strings, sequence indexes
// as ints), nil when the path is not in the file.
func (f *source) node(path []any) ast.Node {
	n, ok := yamlfile.Lookup(f.root, path...)
	if !ok {
		return nil
	}
	return n
}

// decode decodes the expanded file into v strictly; a secret in an error
// (a value of the wrong type) is masked.
func (f *source) decode(v any) error {
	err := yamlfile.DecodeNode(f.path, f.src, f.root, v)
	var se *yamlfile.Error
	if errors.As(err, &se) {
		se.Msg = process.Mask(se.Msg, f.secrets)
	}
	return err
}

// expandEnv expands ${NAME} and ${NAME:-default} in every scalar value under
// n (not in mapping keys) and returns n with them expanded; an unset NAME
// without a default is an error at its scalar. A plain (unquoted) scalar that
// expands to true, false or a number becomes that, so that `num_retries:
// ${RETRIES:-2}` decodes as if 2 were written there; a quoted one stays a
// string. retype is false under a tag, which says the type itself.
func (f *source) expandEnv(n ast.Node, retype bool) (ast.Node, error) {
	if x, ok := f.expanded[n]; ok {
		return x, nil
	}
	x, err := f.expandNode(n, retype)
	if err != nil {
		return nil, err
	}
	f.expanded[n] = x
	return x, nil
}

// expandNode is expandEnv of n not visited before.
func (f *source) expandNode(n ast.Node, retype bool) (ast.Node, error) {
	var err error
	switch v := n.(type) {
	case *ast.MappingNode:
		for _, p := range v.Values {
			if p.Value, err = f.expandEnv(p.Value, true); err != nil {
				return nil, err
			}
		}
	case *ast.MappingValueNode:
		if v.Value, err = f.expandEnv(v.Value, true); err != nil {
			return nil, err
		}
	case *ast.SequenceNode:
		for i := range v.Values {
			if v.Values[i], err = f.expandEnv(v.Values[i], true); err != nil {
				return nil, err
			}
		}
	case *ast.AnchorNode:
		if v.Value, err = f.expandEnv(v.Value, retype); err != nil {
			return nil, err
		}
	case *ast.TagNode:
		if v.Value, err = f.expandEnv(v.Value, false); err != nil {
			return nil, err
		}
	case *ast.LiteralNode:
		s, err := f.expandScalar(v.Value, v, false)
		if err != nil {
			return nil, err
		}
		v.Value = s.(*ast.StringNode)
	case *ast.StringNode:
		return f.expandScalar(v, v, retype && v.Token.Type == token.StringType)
	}
	return n, nil
}

// expandScalar expands the string scalar n, which errors place at node at
// (see expandEnv).
func (f *source) expandScalar(n *ast.StringNode, at ast.Node, retype bool) (ast.Node, error) {
	out, refs, err := envref.Expand(n.Value, f.opts.Getenv)
	if err != nil {
		return nil, f.errorAt(at, "%v", err)
	}
	if len(refs) == 0 && out == n.Value {
		return n, nil
	}
	tk := *n.Token
	tk.Value = out
	var x ast.Node = ast.String(&tk)
	if retype {
		x = typedScalar(&tk)
	}
	if len(refs) > 0 {
		f.fromEnv[x] = true
	}
	for _, name := range refs {
		if v := f.opts.Getenv(name); v != "" && secret.Name(name) {
			f.secrets = append(f.secrets, v)
		}
	}
	return x, nil
}

// typedScalar is the node of the plain scalar tk: true or false, or a
// number written in the one way that decoding it into a string field gives
// back (so 010, 1.50 or 1e3 stay strings), else a string.
func typedScalar(tk *token.Token) ast.Node {
	s := tk.Value
	if s == "true" || s == "false" {
		tk.Type = token.BoolType
		return ast.Bool(tk)
	}
	if i, err := strconv.ParseInt(s, 10, 64); err == nil && strconv.FormatInt(i, 10) == s {
		tk.Type = token.IntegerType
		return ast.Integer(tk)
	}
	if x, err := strconv.ParseFloat(s, 64); err == nil && strings.Contains(s, ".") && strconv.FormatFloat(x, 'f', -1, 64) == s {
		tk.Type = token.FloatType
		return ast.Float(tk)
	}
	return ast.String(tk)
}

// takesEnv says whether the scalar at path took something from the
// environment (a secret when it is an env value).
func (f *source) takesEnv(path ...any) bool {
	n := yamlfile.Unwrap(f.node(path))
	if lit, ok := n.(*ast.LiteralNode); ok {
		n = lit.Value
	}
	return f.fromEnv[n]
}

// check checks text's template variables, text being the value at path.
func (f *source) check(text string, vs target.Vars, path ...any) error {
	if err := target.CheckTemplate(text, vs); err != nil {
		return f.errorf(path, "%v", err)
	}
	return nil
}

// name is the target's name: the file's own, or its base name.
func (f *source) name(own string) string {
	if own != "" {
		return own
	}
	base := filepath.Base(f.path)
	return strings.TrimSuffix(strings.TrimSuffix(base, ".yaml"), ".yml")
}

// selfPath is the running binary, the default of {{replaycheck}}.
func selfPath() string {
	p, err := os.Executable()
	if err != nil {
		return "replaycheck"
	}
	return p
}

// checkPassEnv checks the names of a pass_env list, at path in f: each is
// a variable name (not empty, no "=").
func checkPassEnv(f *source, names []string, path ...any) error {
	for i, n := range names {
		if !process.VarName(n) {
			return f.errorf(append(path, i), "pass_env: %q is not a variable name", n)
		}
	}
	return nil
}
