package main

import (
	"bytes"
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/goccy/go-yaml"

	"github.com/replaycheck/replaycheck/internal/harness/scenario"
)

// TestReleaseTagNamesItsSchema runs scripts/release.sh in a copy of this
// tree (a new repository holding the work tree's files): `tag v9.8.7` makes
// an annotated tag on a child of HEAD that changes only the scenario schema,
// to exactly what replaycheck 9.8.7's `replaycheck schema` prints (its $id
// the file's URL at the tag), and leaves the branch and the work tree alone;
// it refuses a tag that exists and a version that is not vX.Y.Z. The
// goreleaser before hook (`release.sh check {{ .Version }}`) passes at that
// tag and on the branch for a snapshot, and fails for the release on the
// branch's file (a tag not made by the script); the schema tests pass at
// the tag.
func TestReleaseTagNamesItsSchema(t *testing.T) {
	if testing.Short() {
		t.Skip("builds replaycheck several times")
	}
	for _, c := range []string{"git", "sh", "go"} {
		if _, err := exec.LookPath(c); err != nil {
			t.Skipf("%s is not on PATH", c)
		}
	}
	const tag, release = "v9.8.7", "9.8.7"
	ctx, cancel := context.WithTimeout(t.Context(), 5*time.Minute)
	defer cancel()
	root, err := filepath.Abs("../..")
	if err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	run := func(wantOK bool, name string, args ...string) string {
		t.Helper()
		cmd := exec.CommandContext(ctx, name, args...)
		cmd.Dir = dir
		cmd.Env = append(os.Environ(),
			"GIT_AUTHOR_NAME=t", "GIT_AUTHOR_EMAIL=t@example.com",
			"GIT_COMMITTER_NAME=t", "GIT_COMMITTER_EMAIL=t@example.com",
			"GIT_CONFIG_GLOBAL=/dev/null", "GIT_CONFIG_NOSYSTEM=1")
		var stderr bytes.Buffer
		cmd.Stderr = &stderr
		out, err := cmd.Output()
		if (err == nil) != wantOK {
			t.Fatalf("%s %s: %v (want success %v)\n%s%s", name, strings.Join(args, " "), err, wantOK, out, stderr.Bytes())
		}
		return strings.TrimSpace(string(out))
	}
	run(true, "git", "init", "-q")
	run(true, "git", "--work-tree="+root, "add", "-A")
	run(true, "git", "commit", "-q", "-m", "the tree under test")
	run(true, "git", "reset", "-q", "--hard")
	head := run(true, "git", "rev-parse", "HEAD")

	run(true, "sh", "scripts/release.sh", "tag", tag)
	if got := run(true, "git", "rev-parse", "HEAD"); got != head {
		t.Errorf("HEAD moved to %s, want %s", got, head)
	}
	if st := run(true, "git", "status", "--porcelain"); st != "" {
		t.Errorf("the work tree changed:\n%s", st)
	}
	if typ := run(true, "git", "cat-file", "-t", tag); typ != "tag" {
		t.Errorf("%s is a %s, want an annotated tag", tag, typ)
	}
	if parent := run(true, "git", "rev-parse", tag+"^{commit}^"); parent != head {
		t.Errorf("the tag's commit's parent is %s, want HEAD %s", parent, head)
	}
	if changed := run(true, "git", "diff", "--name-only", "HEAD", tag); changed != scenario.SchemaFile {
		t.Errorf("the tag changes %q, want only %s", changed, scenario.SchemaFile)
	}

	// The file at the tag is what that release's `replaycheck schema`
	// prints, byte for byte.
	atTag := run(true, "git", "show", tag+":"+scenario.SchemaFile)
	saved := version
	version = release
	var printed strings.Builder
	err = runSchema(ctx, &schemaOptions{Out: &printed})
	version = saved
	if err != nil {
		t.Fatal(err)
	}
	if atTag != strings.TrimSpace(printed.String()) {
		t.Errorf("%s at %s is not what replaycheck %s prints", scenario.SchemaFile, tag, release)
	}
	if !strings.Contains(atTag, `"$id": "`+scenario.SchemaURL(tag)+`"`) {
		t.Errorf("%s at %s does not have the $id %s", scenario.SchemaFile, tag, scenario.SchemaURL(tag))
	}

	run(false, "sh", "scripts/release.sh", "tag", tag)
	run(false, "sh", "scripts/release.sh", "tag", "9.8.8")

	// The goreleaser hook, as goreleaser runs it for a version.
	b, err := os.ReadFile(filepath.Join(root, ".goreleaser.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	var c struct {
		Before struct{ Hooks []string } `yaml:"before"`
	}
	if err := yaml.Unmarshal(b, &c); err != nil {
		t.Fatal(err)
	}
	i := slices.IndexFunc(c.Before.Hooks, func(h string) bool { return strings.Contains(h, "scripts/release.sh check") })
	if i < 0 {
		t.Fatalf(".goreleaser.yaml's before hooks %q do not run scripts/release.sh check", c.Before.Hooks)
	}
	hook := func(wantOK bool, version string) {
		t.Helper()
		argv := strings.Fields(strings.ReplaceAll(c.Before.Hooks[i], "{{ .Version }}", version))
		run(wantOK, argv[0], argv[1:]...)
	}
	hook(true, release+"-SNAPSHOT-"+head[:7]) // a snapshot on the branch
	hook(false, release)                      // a tag on the branch's commit
	run(true, "git", "checkout", "-q", tag)
	hook(true, release)
	// The repository's own schema tests pass at the tag.
	run(true, "go", "test", "-trimpath", "-count=1", "-run", "^(TestSchemaIDResolves|TestSchemaFilesCurrent)$", "./internal/harness/scenario", "./internal/harness/targetfile")
}
