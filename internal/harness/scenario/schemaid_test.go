package scenario

import (
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
)

// TestSchemaIDResolves checks that the scenario schema's $id is the URL of
// the repository's own file at a ref: the path after the ref is a file the
// repository tracks, the published file carries SchemaID (or, at a release
// tag that scripts/release.sh made, that tag's URL), and a release's schema
// names its tag.
func TestSchemaIDResolves(t *testing.T) {
	rel, ok := strings.CutPrefix(SchemaID, schemaBase+"main/")
	if !ok || rel != SchemaFile {
		t.Fatalf("SchemaID %s, want %smain/%s", SchemaID, schemaBase, SchemaFile)
	}
	root := filepath.Join("..", "..", "..")
	if _, err := os.Stat(filepath.Join(root, filepath.FromSlash(rel))); err != nil {
		t.Fatalf("the $id's path %s is not in the repository: %v", rel, err)
	}
	published := SchemaID
	if git, err := exec.LookPath("git"); err == nil {
		ls := exec.Command(git, "ls-files", "--error-unmatch", rel)
		ls.Dir = root
		if out, err := ls.CombinedOutput(); err != nil {
			t.Errorf("git does not track %s, so the $id would not resolve at a tag: %v\n%s", rel, err, out)
		}
		// At a release tag the file names the tag.
		tags := exec.Command(git, "tag", "--points-at", "HEAD")
		tags.Dir = root
		out, err := tags.Output()
		if err != nil {
			t.Fatalf("git tag --points-at HEAD: %v", err)
		}
		for tag := range strings.FieldsSeq(string(out)) {
			if releaseTag.MatchString(tag) {
				published = SchemaURL(tag)
			}
		}
	}
	for _, tt := range []struct {
		name   string
		schema func() ([]byte, error)
		want   string
	}{
		{name: "the published file", schema: func() ([]byte, error) { return os.ReadFile(filepath.Join(root, rel)) }, want: published},
		{name: "a release's", schema: func() ([]byte, error) { return SchemaAt("v1.2.3") }, want: schemaBase + "v1.2.3/" + SchemaFile},
	} {
		b, err := tt.schema()
		if err != nil {
			t.Fatal(err)
		}
		var s struct {
			ID string `json:"$id"`
		}
		if err := json.Unmarshal(b, &s); err != nil || s.ID != tt.want {
			t.Errorf("%s: $id %q (%v), want %s", tt.name, s.ID, err, tt.want)
		}
	}
}

// releaseTag matches a release's tag, as scripts/release.sh makes them.
var releaseTag = regexp.MustCompile(`^v[0-9]+\.[0-9]+\.[0-9]+$`)
