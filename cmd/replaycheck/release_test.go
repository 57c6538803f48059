package main

import (
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/goccy/go-yaml"
)

// goreleaserConfig is the part of .goreleaser.yaml a release relies on.
type goreleaserConfig struct {
	Builds []struct {
		Main    string   `yaml:"main"`
		Env     []string `yaml:"env"`
		Goos    []string `yaml:"goos"`
		Goarch  []string `yaml:"goarch"`
		Ldflags []string `yaml:"ldflags"`
	} `yaml:"builds"`
	Archives []struct {
		Files []string `yaml:"files"`
	} `yaml:"archives"`
	Dockers []struct {
		IDs        []string `yaml:"ids"`
		Dockerfile string   `yaml:"dockerfile"`
		Images     []string `yaml:"images"`
		Platforms  []string `yaml:"platforms"`
	} `yaml:"dockers_v2"`
}

// TestGoreleaserConfig checks the release configuration without goreleaser
// (building it takes minutes): static binaries of this command for Linux,
// macOS and Windows on amd64 and arm64, the version stamped into the
// variable `replaycheck version` prints, archive files that exist, and the
// container image built from the Dockerfile. When goreleaser is installed
// (on PATH, in bin/ by make release-check, or in $(go env GOPATH)/bin) it
// checks the file too.
func TestGoreleaserConfig(t *testing.T) {
	const root = "../.."
	b, err := os.ReadFile(filepath.Join(root, ".goreleaser.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	var c goreleaserConfig
	if err := yaml.Unmarshal(b, &c); err != nil {
		t.Fatalf(".goreleaser.yaml: %v", err)
	}
	if len(c.Builds) != 1 {
		t.Fatalf("%d builds, want 1", len(c.Builds))
	}
	build := c.Builds[0]
	goos, goarch := slices.Sorted(slices.Values(build.Goos)), slices.Sorted(slices.Values(build.Goarch))
	if build.Main != "./cmd/replaycheck" || !slices.Equal(goos, []string{"darwin", "linux", "windows"}) || !slices.Equal(goarch, []string{"amd64", "arm64"}) {
		t.Errorf("build %s for %v × %v, want ./cmd/replaycheck for darwin, linux, windows × amd64, arm64", build.Main, goos, goarch)
	}
	if !slices.Contains(build.Env, "CGO_ENABLED=0") {
		t.Errorf("build env %v, want CGO_ENABLED=0 (static binaries, cross-compiled)", build.Env)
	}
	_ = version // the variable the ldflags set; this test does not compile without it
	if !slices.ContainsFunc(build.Ldflags, func(f string) bool { return strings.Contains(f, "-X main.version={{.Version}}") }) {
		t.Errorf("ldflags %v do not stamp main.version", build.Ldflags)
	}
	for _, a := range c.Archives {
		for _, pattern := range a.Files {
			// goreleaser's ** is not filepath.Glob's: check the part before it.
			glob, _, _ := strings.Cut(pattern, "**")
			if glob == "" || strings.HasSuffix(glob, "/") {
				glob += "*"
			}
			if m, err := filepath.Glob(filepath.Join(root, glob)); err != nil || len(m) == 0 {
				t.Errorf("archive file %q matches nothing (%v)", pattern, err)
			}
		}
	}

	// The image: the Dockerfile copies the binary from where dockers_v2
	// puts each platform's build, $TARGETPLATFORM/replaycheck.
	if len(c.Dockers) != 1 {
		t.Fatalf("%d dockers_v2 entries, want 1 (the image)", len(c.Dockers))
	}
	d := c.Dockers[0]
	dockerfile, err := os.ReadFile(filepath.Join(root, d.Dockerfile))
	if err != nil {
		t.Fatalf("dockers_v2 dockerfile: %v", err)
	}
	if !strings.Contains(string(dockerfile), "COPY $TARGETPLATFORM/replaycheck ") || !slices.Equal(d.IDs, []string{"replaycheck"}) {
		t.Errorf("dockers_v2 builds %s from builds %v, want the Dockerfile copying $TARGETPLATFORM/replaycheck of build replaycheck", d.Dockerfile, d.IDs)
	}
	if !slices.Equal(d.Images, []string{"ghcr.io/replaycheck/replaycheck"}) || !slices.Equal(d.Platforms, []string{"linux/amd64", "linux/arm64"}) {
		t.Errorf("dockers_v2 pushes %v for %v, want ghcr.io/replaycheck/replaycheck for linux/amd64 and linux/arm64", d.Images, d.Platforms)
	}

	bin, err := exec.LookPath("goreleaser")
	if _, serr := os.Stat(filepath.Join(root, "bin", "goreleaser")); err != nil && serr == nil {
		bin, err = filepath.Abs(filepath.Join(root, "bin", "goreleaser")) // make release-check
	}
	if err != nil {
		gopath, gerr := exec.Command("go", "env", "GOPATH").Output()
		bin = filepath.Join(strings.TrimSpace(string(gopath)), "bin", "goreleaser")
		if _, serr := os.Stat(bin); gerr != nil || serr != nil {
			t.Log("goreleaser is not installed: skipping goreleaser check")
			return
		}
	}
	check := exec.Command(bin, "check")
	check.Dir = root
	if out, err := check.CombinedOutput(); err != nil {
		t.Errorf("goreleaser check: %v\n%s", err, out)
	}
}
