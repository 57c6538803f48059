package replaychecktest_test

import (
	"go/parser"
	"go/token"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// The phrases a package doc uses to say whether the package is API.
const (
	saysAPI    = "part of replaycheck's Go API"
	saysNotAPI = "not an API"
)

// apiPackages are the importable packages that are replaycheck's Go API, as
// docs/tutorials/go-library.md lists them; every other package outside
// internal/ must say it is not one.
var apiPackages = map[string]bool{
	"replaychecktest": true,
	"fakes/upstream":  true,
	"fakes/ledger":    true,
	"fakes/fault":     true,
}

// TestPublicPackagesSayWhetherTheyAreAPI holds every importable library
// package's doc to what the Go library tutorial says: the API packages say
// they are part of the Go API, the others that they are not an API, so that
// `go doc` and the docs agree.
func TestPublicPackagesSayWhetherTheyAreAPI(t *testing.T) {
	root, err := filepath.Abs("..")
	if err != nil {
		t.Fatal(err)
	}
	seen := map[string]bool{}
	err = filepath.WalkDir(root, func(path string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if !d.IsDir() {
			return nil
		}
		rel, _ := filepath.Rel(root, path)
		rel = filepath.ToSlash(rel)
		switch {
		case rel == ".":
			return nil
		case strings.HasPrefix(d.Name(), ".") || d.Name() == "testdata" || d.Name() == "node_modules",
			rel == "internal", rel == "cmd", rel == "examples", rel == "bin":
			return filepath.SkipDir
		}
		doc, name := packageDoc(t, path)
		if doc == "" || name == "main" || rel == "scenarios" {
			return nil // no library package, a command, or embedded files
		}
		seen[rel] = true
		flat := strings.Join(strings.Fields(doc), " ")
		switch {
		case apiPackages[rel] && !strings.Contains(flat, saysAPI):
			t.Errorf("%s: its package doc does not say it is %q", rel, saysAPI)
		case !apiPackages[rel] && !strings.Contains(flat, saysNotAPI):
			t.Errorf("%s: its package doc does not say it is %q (or add it to apiPackages and the Go library tutorial)", rel, saysNotAPI)
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	tutorial, err := os.ReadFile(filepath.Join(root, "docs", "tutorials", "go-library.md"))
	if err != nil {
		t.Fatal(err)
	}
	for p := range apiPackages {
		if !seen[p] {
			t.Errorf("API package %s not found in the tree", p)
		}
		if !strings.Contains(string(tutorial), "`"+p+"`") {
			t.Errorf("docs/tutorials/go-library.md does not name the API package `%s`", p)
		}
	}
}

// packageDoc returns the package doc and name of the non-test Go files in
// dir, "" when there are none.
func packageDoc(t *testing.T, dir string) (doc, name string) {
	t.Helper()
	entries, err := os.ReadDir(dir)
	if err != nil {
		t.Fatal(err)
	}
	fset := token.NewFileSet()
	for _, e := range entries {
		if e.IsDir() || !strings.HasSuffix(e.Name(), ".go") || strings.HasSuffix(e.Name(), "_test.go") {
			continue
		}
		f, err := parser.ParseFile(fset, filepath.Join(dir, e.Name()), nil, parser.PackageClauseOnly|parser.ParseComments)
		if err != nil {
			t.Fatal(err)
		}
		name = f.Name.Name
		if f.Doc != nil {
			doc += f.Doc.Text()
		}
	}
	return doc, name
}
