package run

import (
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"sort"
	"strings"

	"github.com/goccy/go-yaml/ast"
	"github.com/goccy/go-yaml/parser"

	"github.com/replaycheck/replaycheck/harness/scenario"
)

// MaxTargetFileSize bounds a target file and a config template.
const MaxTargetFileSize = 1 << 20

// TargetFileOptions configure loading target files. The zero value reads the
// process environment and uses the running binary for {{replaycheck}}.
type TargetFileOptions struct {
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
	// load decodes src strictly and checks it.
	load func(f *targetSource) (Target, error)
	doc  string
}

// fileKinds is the table of target file kinds, keyed by the YAML kind.
func fileKinds() []fileKind {
	return []fileKind{
		{"proxy", loadProxy, "a gateway or proxy reached at a URL, optionally started by the harness"},
		{"client", loadClient, "a command run once per scenario request, pointed at the fakes"},
	}
}

// ResolveTarget turns a --target argument into a Target: a name with a
// known kind prefix (builtin:guarded) or the path of a target file.
func ResolveTarget(arg string, opts TargetFileOptions) (Target, error) {
	kind, _, hasKind := strings.Cut(arg, ":")
	for _, k := range targetKinds() {
		if hasKind && k.name == kind {
			return ParseTarget(arg)
		}
	}
	if _, err := os.Stat(arg); err == nil || strings.HasSuffix(arg, ".yaml") || strings.HasSuffix(arg, ".yml") {
		return LoadTargetFile(arg, opts)
	}
	t, err := ParseTarget(arg)
	if err != nil {
		return nil, fmt.Errorf("%w; nor is it a target file", err)
	}
	return t, nil
}

// LoadTargetFile loads a target file (kind proxy or client). Problems are
// *scenario.Error values naming the file, line and column; ${NAME}
// references are expanded here, and an unset one is such an error too.
func LoadTargetFile(path string, opts TargetFileOptions) (Target, error) {
	if opts.Getenv == nil {
		opts.Getenv = os.Getenv
	}
	if opts.Replaycheck == "" {
		opts.Replaycheck = selfPath()
	}
	src, err := scenario.ReadFile(path, MaxTargetFileSize)
	if err != nil {
		return nil, &scenario.Error{File: path, Msg: scenario.DescribeReadError(err)}
	}
	return ParseTargetFile(path, src, opts)
}

// ParseTargetFile parses the target file src, read from path (relative
// paths in it are resolved against path's directory).
func ParseTargetFile(path string, src []byte, opts TargetFileOptions) (Target, error) {
	if opts.Getenv == nil {
		opts.Getenv = os.Getenv
	}
	if opts.Replaycheck == "" {
		opts.Replaycheck = selfPath()
	}
	var head map[string]any
	if err := scenario.DecodeStrict(path, src, &head); err != nil {
		return nil, err
	}
	f := &targetSource{path: path, src: src, opts: opts}
	if root, err := parser.ParseBytes(src, 0); err == nil && len(root.Docs) > 0 {
		f.root = root.Docs[0].Body
	}
	kind, _ := head["kind"].(string)
	var names []string
	for _, k := range fileKinds() {
		if k.name == kind {
			return k.load(f)
		}
		names = append(names, k.name+" ("+k.doc+")")
	}
	sort.Strings(names)
	if _, ok := head["kind"]; !ok {
		return nil, f.errorf(nil, "a target file needs a kind: %s", strings.Join(names, "; "))
	}
	return nil, f.errorf([]any{"kind"}, "unknown target kind %q; want %s", fmt.Sprint(head["kind"]), strings.Join(names, "; "))
}

// targetSource is a target file being loaded: its text for errors.
type targetSource struct {
	path string
	src  []byte
	root ast.Node
	opts TargetFileOptions
	// secrets are the values of secret-named ${NAME} references expanded so
	// far (see expand).
	secrets []string
}

// dir is the directory relative paths in the file are resolved against.
func (f *targetSource) dir() string { return filepath.Dir(f.path) }

// errorf returns a *scenario.Error at the node at path (mapping keys as
// strings, sequence indexes as ints), or at no place when the path is not in
// the file.
func (f *targetSource) errorf(path []any, format string, args ...any) error {
	if len(path) == 0 {
		return &scenario.Error{File: f.path, Msg: fmt.Sprintf(format, args...)}
	}
	line, col := f.pos(path)
	return scenario.NewError(f.path, f.src, line, col, format, args...)
}

func (f *targetSource) pos(path []any) (int, int) {
	cur := f.root
	for _, step := range path {
		var next ast.Node
		switch k := step.(type) {
		case string:
			if m, ok := cur.(*ast.MappingNode); ok {
				for _, p := range m.Values {
					if p.Key.String() == k {
						next = p.Value
					}
				}
			}
			if mv, ok := cur.(*ast.MappingValueNode); ok && mv.Key.String() == k {
				next = mv.Value
			}
		case int:
			if seq, ok := cur.(*ast.SequenceNode); ok && k < len(seq.Values) {
				next = seq.Values[k]
			}
		}
		if next == nil {
			return 0, 0 // not in the file: the error names no place
		}
		cur = next
	}
	if cur == nil || cur.GetToken() == nil {
		return 0, 0
	}
	p := cur.GetToken().Position
	return p.Line, p.Column
}

// expand expands ${NAME} in s, the value at path.
// Values of references whose name says they are secret are collected in
// f.secrets, to be masked wherever the target's output is shown.
func (f *targetSource) expand(s string, path ...any) (string, error) {
	out, err := expandEnv(s, f.opts.Getenv)
	if err != nil {
		return "", f.errorf(path, "%v", err)
	}
	for _, m := range envRef.FindAllStringSubmatch(s, -1) {
		if v := f.opts.Getenv(m[1]); v != "" && secretName.MatchString(m[1]) {
			f.secrets = append(f.secrets, v)
		}
	}
	return out, nil
}

// secretName matches environment variable names that hold secrets.
var secretName = regexp.MustCompile(`(?i)key|token|secret|passw|credential`)

// expandAll expands ${NAME} in every element of ss, the list at path.
func (f *targetSource) expandAll(ss []string, path ...any) ([]string, error) {
	out := make([]string, len(ss))
	for i, s := range ss {
		var err error
		if out[i], err = f.expand(s, append(path, i)...); err != nil {
			return nil, err
		}
	}
	return out, nil
}

// expandMap expands ${NAME} in every value of m, the mapping at path.
func (f *targetSource) expandMap(m map[string]string, path ...any) (map[string]string, error) {
	out := make(map[string]string, len(m))
	for k, v := range m {
		var err error
		if out[k], err = f.expand(v, append(path, k)...); err != nil {
			return nil, err
		}
	}
	return out, nil
}

// fromEnv returns the keys of m whose values take something from the
// environment (${NAME}): secrets, masked in captured output.
func fromEnv(m map[string]string) map[string]bool {
	out := map[string]bool{}
	for k, v := range m {
		out[k] = envRef.MatchString(v)
	}
	return out
}

// check checks text's template variables, text being the value at path.
func (f *targetSource) check(text string, names []string, path ...any) error {
	if err := checkTemplate(text, names); err != nil {
		return f.errorf(path, "%v", err)
	}
	return nil
}

// name is the target's name: the file's own, or its base name.
func (f *targetSource) name(own string) string {
	if own != "" {
		return own
	}
	base := filepath.Base(f.path)
	return strings.TrimSuffix(strings.TrimSuffix(base, ".yaml"), ".yml")
}
