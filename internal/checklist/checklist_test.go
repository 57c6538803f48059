package checklist

import (
	"bytes"
	"go/parser"
	"go/token"
	"io/fs"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"
)

// root is the module's root, seen from this package's directory.
const root = "../.."

// checklist is one "Adding a THING NAME takes these files:" list of a
// package doc, and the throwaway the test adds by it.
type checklist struct {
	// name names the checklist in the log.
	name string
	// doc is the file whose package doc holds it; heading is the start of
	// its line ("Adding a rule NAME").
	doc, heading string
	// throwaway is NAME for the throwaway; placeholders maps the list's
	// other placeholders to the files the throwaway uses.
	throwaway    string
	placeholders map[string]string
	// edits are the throwaway's writes, by file: nil when the test only
	// counts the list.
	edits map[string]edit
}

// edit turns a file's text into the throwaway's; old is "" for a new file.
type edit func(t *testing.T, old string) string

// create is a new file's edit.
func create(text string) edit {
	return func(t *testing.T, old string) string {
		if old != "" {
			t.Fatalf("the new file exists already")
		}
		return text
	}
}

// insert is an edit that puts text before (after == false) or after anchor,
// which must occur once.
func insert(anchor, text string, after bool) edit {
	return func(t *testing.T, old string) string {
		if n := strings.Count(old, anchor); n != 1 {
			t.Fatalf("anchor %q occurs %d times, want once", anchor, n)
		}
		i := strings.Index(old, anchor)
		if after {
			i += len(anchor)
		}
		return old[:i] + text + old[i:]
	}
}

// both applies a, then b.
func both(a, b edit) edit {
	return func(t *testing.T, old string) string { return b(t, a(t, old)) }
}

// files returns the files c's list names, NAME and the placeholders
// replaced, in list order: the code files and the test files (a _test.go
// file, or a scenario: what checks the thing rather than makes it).
func (c checklist) files(t *testing.T, dir string) (code, tests []string) {
	t.Helper()
	f, err := parser.ParseFile(token.NewFileSet(), filepath.Join(dir, c.doc), nil, parser.PackageClauseOnly|parser.ParseComments)
	if err != nil {
		t.Fatal(err)
	}
	if f.Doc == nil {
		t.Fatalf("%s: no package doc", c.doc)
	}
	lines := strings.Split(f.Doc.Text(), "\n")
	start := slices.IndexFunc(lines, func(l string) bool {
		rest, ok := strings.CutPrefix(l, c.heading)
		return ok && (strings.HasPrefix(rest, " ") || strings.HasPrefix(rest, ","))
	})
	if start < 0 {
		t.Fatalf("%s: no line starting %q in the package doc", c.doc, c.heading)
	}
	i := start
	for i < len(lines)-1 && i < start+2 && !strings.HasSuffix(lines[i], ":") {
		i++
	}
	if heading := strings.Join(lines[start:i+1], " "); !strings.HasSuffix(heading, " takes these files:") {
		t.Fatalf("%s: %q does not end \"takes these files:\"", c.doc, heading)
	}
	for _, l := range lines[i+1:] {
		if strings.HasPrefix(l, "    ") {
			continue // an item's next line
		}
		item, ok := strings.CutPrefix(l, "  - ")
		if !ok {
			break
		}
		path, _, ok := strings.Cut(item, ":")
		if !ok || strings.ContainsAny(path, " ,") {
			t.Fatalf("%s: item %q of %q does not start with a file and a colon", c.doc, item, c.heading)
		}
		path = strings.ReplaceAll(path, "NAME", c.throwaway)
		for from, to := range c.placeholders {
			path = strings.ReplaceAll(path, from, to)
		}
		if strings.HasSuffix(path, "_test.go") || strings.HasPrefix(path, "scenarios/") {
			tests = append(tests, path)
		} else {
			code = append(code, path)
		}
	}
	if len(code) == 0 {
		t.Fatalf("%s: the list after %q names no file", c.doc, c.heading)
	}
	return code, tests
}

// generated are the files the generators rewrite: a throwaway may change
// them and no other file its checklist does not name.
var generated = []string{
	"schemas/scenario.schema.json",
	"schemas/target.schema.json",
	"fakes/control/openapi.yaml",
	"internal/harness/rules/rules.md",
	"internal/harness/scenario/testdata/",
}

// TestChecklists adds a throwaway upstream fault kind, MCP fault kind (with
// a stdio effect), rule and gateway switch to a copy of the module, each
// writing only the code files its package doc's checklist names, and checks
// that the copy builds, that its schemas regenerate naming the new
// kinds and rule, that nothing but the named and the generated files
// changed, and that the owning packages' tests pass there. It logs how many
// files each checklist takes (the dialect's too, which it only counts).
func TestChecklists(t *testing.T) {
	if testing.Short() {
		t.Skip("copies the module and builds it (-short)")
	}
	if _, err := exec.LookPath("go"); err != nil {
		t.Skip("no go command")
	}
	dir := t.TempDir()
	copyTree(t, root, dir)

	checklists := []checklist{upstreamKind(), mcpKind(), rule(), gatewaySwitch(), {
		name: "dialect", doc: "internal/dialect/dialect.go", heading: "Adding a dialect NAME", throwaway: "throwaway",
	}}
	written := map[string]bool{}
	for _, c := range checklists {
		code, tests := c.files(t, dir)
		t.Logf("%s: %d files (%s), and %d of tests (%s)", c.name, len(code), strings.Join(code, ", "), len(tests), strings.Join(tests, ", "))
		if c.edits == nil {
			continue
		}
		for file, e := range c.edits {
			if !slices.Contains(code, file) {
				t.Fatalf("%s: the throwaway writes %s, which its checklist (%s) does not name", c.name, file, c.doc)
			}
			path := filepath.Join(dir, file)
			old, err := os.ReadFile(path)
			if err != nil && !os.IsNotExist(err) {
				t.Fatal(err)
			}
			if err := os.WriteFile(path, []byte(e(t, string(old))), 0o644); err != nil {
				t.Fatal(err)
			}
			written[file] = true
		}
		for _, file := range code {
			if !written[file] {
				t.Errorf("%s: its checklist names %s, which the throwaway does not write: the list and the test have drifted", c.name, file)
			}
		}
	}
	if t.Failed() {
		t.FailNow()
	}

	goCmd(t, dir, "build", "./...")
	// The generators.
	goCmd(t, dir, "test", "./internal/harness/targetfile", "-run", "TestSchemaFilesCurrent", "-update")
	goCmd(t, dir, "test", "./fakes/control", "-run", "TestSpecFaultSchemas", "-update")
	goCmd(t, dir, "test", "./internal/harness/scenario", "-skip", "TestSchemaIDResolves", "-update") // the copy has no .git
	goCmd(t, dir, "test", "./internal/harness/rules", "-run", "TestRulesMarkdownCurrent", "-update")
	schema, err := os.ReadFile(filepath.Join(dir, "schemas/scenario.schema.json"))
	if err != nil {
		t.Fatal(err)
	}
	for _, name := range []string{`"throwaway_upstream"`, `"throwaway_mcp"`, `"throwaway-rule"`} {
		if !bytes.Contains(schema, []byte(name)) {
			t.Errorf("the regenerated scenario schema does not name %s", name)
		}
	}
	for _, file := range changed(t, root, dir) {
		if !written[file] && !slices.ContainsFunc(generated, func(g string) bool { return strings.HasPrefix(file, g) }) {
			t.Errorf("%s changed, which no checklist names and no generator writes", file)
		}
	}
	// The owning packages' tests.
	goCmd(t, dir, "test", "-short", "./fakes/upstream", "./fakes/ledger", "./fakes/ledgerstdio", "./internal/wire")
	// TestRules wants each rule's pass, fail and unknown cases in
	// rules_test.go, a test file of the checklist the throwaway does not
	// write.
	goCmd(t, dir, "test", "-short", "-skip", "^TestRules$", "./internal/harness/rules")
	goCmd(t, dir, "test", "-short", "-run", "TestParseBugs", "./fakes/gateway")
}

// goCmd runs the go command in dir, offline, and fails t with its output if
// it fails.
func goCmd(t *testing.T, dir string, args ...string) {
	t.Helper()
	start := time.Now()
	cmd := exec.Command("go", args...)
	cmd.Dir = dir
	// Built as this test was (with -race under make test), so the copy
	// compiles only the module's own packages: their dependencies are in
	// the build cache already.
	cmd.Env = append(os.Environ(), "GOPROXY=off", "GOWORK=off", "GOFLAGS=-mod=readonly -buildvcs=false"+raceFlag)
	out, err := cmd.CombinedOutput()
	if err != nil {
		t.Fatalf("go %s: %v\n%s", strings.Join(args, " "), err, out)
	}
	t.Logf("go %s: %s", strings.Join(args, " "), time.Since(start).Round(time.Millisecond))
}

// skipped are the entries copyTree leaves out, at any depth.
var skipped = []string{".git", "node_modules"}

// copyTree copies the module at src to dst, without .git, node_modules and
// the top-level bin.
func copyTree(t *testing.T, src, dst string) {
	t.Helper()
	err := filepath.WalkDir(src, func(path string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		rel, err := filepath.Rel(src, path)
		if err != nil {
			return err
		}
		if slices.Contains(skipped, d.Name()) || rel == "bin" {
			if d.IsDir() {
				return filepath.SkipDir
			}
			return nil
		}
		target := filepath.Join(dst, rel)
		if d.IsDir() {
			return os.MkdirAll(target, 0o755)
		}
		if !d.Type().IsRegular() {
			return nil
		}
		b, err := os.ReadFile(path)
		if err != nil {
			return err
		}
		info, err := d.Info()
		if err != nil {
			return err
		}
		return os.WriteFile(target, b, info.Mode().Perm())
	})
	if err != nil {
		t.Fatalf("copying the module: %v", err)
	}
}

// changed returns the files of the copy dst that differ from the module
// src's, or are new, by their slash paths.
func changed(t *testing.T, src, dst string) []string {
	t.Helper()
	var out []string
	err := filepath.WalkDir(dst, func(path string, d fs.DirEntry, err error) error {
		if err != nil || d.IsDir() {
			return err
		}
		rel, err := filepath.Rel(dst, path)
		if err != nil {
			return err
		}
		now, err := os.ReadFile(path)
		if err != nil {
			return err
		}
		was, err := os.ReadFile(filepath.Join(src, rel))
		if err != nil || !bytes.Equal(was, now) {
			out = append(out, filepath.ToSlash(rel))
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	return out
}
