package main

import (
	"encoding/json"
	"io/fs"
	"os"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"testing"
)

// docFiles returns the documentation files whose commands
// TestREADMECommands runs and whose flags TestDocumentedFlagsExist checks,
// relative to root and with forward slashes: README.md, CONTRIBUTING.md and
// every Markdown file under docs/, in lexical order after the first two.
func docFiles(root string) ([]string, error) {
	files := []string{"README.md", "CONTRIBUTING.md"}
	err := filepath.WalkDir(filepath.Join(root, "docs"), func(path string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if !d.IsDir() && strings.HasSuffix(path, ".md") {
			rel, err := filepath.Rel(root, path)
			if err != nil {
				return err
			}
			files = append(files, filepath.ToSlash(rel))
		}
		return nil
	})
	return files, err
}

// readmeMaxLines is the most lines README.md may have: it leads to docs/,
// which holds the rest.
const readmeMaxLines = 300

// TestReadmeLength checks that README.md stays a front page.
func TestReadmeLength(t *testing.T) {
	src, err := os.ReadFile("../../README.md")
	if err != nil {
		t.Fatal(err)
	}
	if n := strings.Count(string(src), "\n"); n > readmeMaxLines {
		t.Errorf("README.md has %d lines, more than %d: move the detail to a page of docs/", n, readmeMaxLines)
	}
}

// mdLink is a Markdown link or image target: [text](target).
var mdLink = regexp.MustCompile(`\]\(([^)\s]+)\)`)

// mdHeading is a Markdown heading line.
var mdHeading = regexp.MustCompile(`^#{1,6}\s+(.*?)\s*#*\s*$`)

// mdAnchors returns the anchors GitHub gives the headings of a Markdown
// file: lower case, punctuation but - and _ dropped, spaces as -, a repeated
// one suffixed -1, -2.
func mdAnchors(src string) map[string]bool {
	anchors := make(map[string]bool)
	seen := make(map[string]int)
	fence := false
	for _, line := range strings.Split(src, "\n") {
		if strings.HasPrefix(strings.TrimSpace(line), "```") {
			fence = !fence
			continue
		}
		m := mdHeading.FindStringSubmatch(line)
		if fence || m == nil {
			continue
		}
		var b strings.Builder
		for _, r := range strings.ToLower(m[1]) {
			switch {
			case r == ' ':
				b.WriteRune('-')
			case r == '-' || r == '_' || r >= 'a' && r <= 'z' || r >= '0' && r <= '9' || r > 127:
				b.WriteRune(r)
			}
		}
		a := b.String()
		if n := seen[a]; n > 0 {
			seen[a]++
			a = a + "-" + string(rune('0'+n))
		} else {
			seen[a] = 1
		}
		anchors[a] = true
	}
	return anchors
}

// TestDocLinks checks that every relative link of the documentation
// (docFiles, and the Markdown files they link to in the repository) names
// a file or directory of the repository, and, for a link to a Markdown
// file with #anchor, one of its headings.
func TestDocLinks(t *testing.T) {
	const root = "../.."
	files, err := docFiles(root)
	if err != nil {
		t.Fatal(err)
	}
	files = append(files, "scenarios/README.md", "examples/agent/README.md")
	for _, file := range files {
		src, err := os.ReadFile(filepath.Join(root, file))
		if err != nil {
			t.Fatal(err)
		}
		fence := false
		for i, line := range strings.Split(string(src), "\n") {
			if strings.HasPrefix(strings.TrimSpace(line), "```") {
				fence = !fence
			}
			if fence {
				continue
			}
			for _, m := range mdLink.FindAllStringSubmatch(line, -1) {
				target := m[1]
				if strings.Contains(target, "://") || strings.HasPrefix(target, "mailto:") {
					continue
				}
				path, anchor, _ := strings.Cut(target, "#")
				dest := file
				if path != "" {
					dest = filepath.ToSlash(filepath.Join(filepath.Dir(file), path))
				}
				st, err := os.Stat(filepath.Join(root, dest))
				if err != nil {
					t.Errorf("%s:%d: link %s: %v", file, i+1, target, err)
					continue
				}
				if anchor == "" || st.IsDir() || !strings.HasSuffix(dest, ".md") {
					continue
				}
				to, err := os.ReadFile(filepath.Join(root, dest))
				if err != nil {
					t.Fatal(err)
				}
				if !mdAnchors(string(to))[anchor] {
					t.Errorf("%s:%d: link %s: %s has no heading with the anchor #%s", file, i+1, target, dest, anchor)
				}
			}
		}
	}
}

// TestDocsSuiteSize checks the size of the shipped suite where the
// documentation states it: the scenarios `replaycheck run` runs with no
// arguments (on builtin:guarded).
func TestDocsSuiteSize(t *testing.T) {
	code, out, errOut := execute(t, "list", "--target", "builtin:guarded", "--json")
	if code != exitOK {
		t.Fatalf("list: exit %d\n%s", code, errOut)
	}
	var suite []json.RawMessage
	if err := json.Unmarshal([]byte(out), &suite); err != nil {
		t.Fatalf("list --json: %v\n%s", err, out)
	}
	stated := map[string]*regexp.Regexp{
		"README.md":       regexp.MustCompile(`runs the whole suite \((\d+) scenarios\)`),
		"CONTRIBUTING.md": regexp.MustCompile(`runs the (\d+) scenarios`),
	}
	for file, re := range stated {
		src, err := os.ReadFile(filepath.Join("../..", file))
		if err != nil {
			t.Fatal(err)
		}
		m := re.FindSubmatch(src)
		if m == nil {
			t.Errorf("%s no longer says how many scenarios run runs (%s): update this test", file, re)
			continue
		}
		if n, _ := strconv.Atoi(string(m[1])); n != len(suite) {
			t.Errorf("%s says run runs %d scenarios; it runs %d", file, n, len(suite))
		}
	}
}
