package main

import (
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"testing"

	"github.com/goccy/go-yaml"

	"github.com/replaycheck/replaycheck/internal/harness/targetfile"
)

// workflow is the part of a GitHub Actions workflow the CI example relies on.
type workflow struct {
	Jobs map[string]struct {
		Strategy struct {
			Matrix struct {
				Shard []int `yaml:"shard"`
			} `yaml:"matrix"`
		} `yaml:"strategy"`
		Needs string            `yaml:"needs"`
		If    string            `yaml:"if"`
		Env   map[string]string `yaml:"env"`
		Steps []struct {
			Name string         `yaml:"name"`
			Uses string         `yaml:"uses"`
			If   string         `yaml:"if"`
			Run  string         `yaml:"run"`
			With map[string]any `yaml:"with"`
		} `yaml:"steps"`
	} `yaml:"jobs"`
}

// TestCIWorkflowExample checks the shipped workflow: one job per shard with
// N equal to the matrix size, the user's target file (TARGET, one that loads)
// with its gateway installed, the suite run on it by the repository's action
// (a release installed, no Go, inputs action.yml has, the shard and the
// baseline); then a merge job, also after a failed shard, that downloads
// every shard's artifact, merges their JSON with report merge into JUnit,
// Markdown and HTML, and uploads the HTML report with the merged JUnit and
// JSON.
func TestCIWorkflowExample(t *testing.T) {
	src, err := os.ReadFile("../../examples/ci/replaycheck.yml")
	if err != nil {
		t.Fatal(err)
	}
	var w workflow
	if err := yaml.Unmarshal(src, &w); err != nil {
		t.Fatalf("workflow does not parse: %v", err)
	}
	job, ok := w.Jobs["replaycheck"]
	if !ok {
		t.Fatal("no replaycheck job")
	}
	if n, err := strconv.Atoi(job.Env["SHARDS"]); err != nil || n != len(job.Strategy.Matrix.Shard) {
		t.Errorf("SHARDS=%q, but the matrix has %d shards", job.Env["SHARDS"], len(job.Strategy.Matrix.Shard))
	}
	for i, s := range job.Strategy.Matrix.Shard {
		if s != i+1 {
			t.Errorf("matrix shard %d is %d, want 1..N", i, s)
		}
	}
	// The user's own system is under test: a target file of the repository
	// that loads with the job's environment, and the gateway it starts is
	// installed by the job.
	expr := regexp.MustCompile(`\$\{\{[^}]*\}\}`) // what Actions expands, such as ${{ github.run_id }}
	for k, v := range job.Env {
		t.Setenv(k, expr.ReplaceAllString(v, "1"))
	}
	tf := job.Env["TARGET"]
	if _, err := targetfile.Load("../../"+tf, targetfile.Options{}); err != nil {
		t.Errorf("TARGET %q: %v", tf, err)
	}
	action := readAction(t)
	var usesAction, install bool
	for _, s := range job.Steps {
		switch {
		case strings.HasPrefix(s.Run, "pip install 'litellm[proxy]'"):
			install = true
		case strings.HasPrefix(s.Uses, "replaycheck/replaycheck@"):
			for name := range s.With {
				if _, ok := action.Inputs[name]; !ok {
					t.Errorf("the workflow passes input %s, which action.yml does not have", name)
				}
			}
			runCmd, _, _ := newRootCmd(strings.NewReader(""), &strings.Builder{}, &strings.Builder{}).Find([]string{"run"})
			for _, f := range regexp.MustCompile(`(?:^|\s)--([a-z][a-z-]*)`).FindAllStringSubmatch(fmt.Sprint(s.With["args"]), -1) {
				if runCmd.Flags().Lookup(f[1]) == nil {
					t.Errorf("the workflow passes --%s, which replaycheck run does not have", f[1])
				}
			}
			usesAction = s.With["targets"] == "${{ env.TARGET }}" && s.With["shard"] == "${{ matrix.shard }}/${{ env.SHARDS }}" &&
				strings.Contains(fmt.Sprint(s.With["baseline"]), "replaycheck-baseline.yaml") && s.With["version"] != nil
		case strings.HasPrefix(s.Uses, "actions/setup-go@"):
			t.Errorf("the replaycheck job sets up Go: the action installs a release")
		}
	}
	if !install || !usesAction {
		t.Errorf("the target's gateway installed %v, the action run on $TARGET's shard with a version and the baseline %v", install, usesAction)
	}

	merge, ok := w.Jobs["merge"]
	if !ok {
		t.Fatal("no merge job")
	}
	if merge.Needs != "replaycheck" || merge.If != "${{ !cancelled() }}" {
		t.Errorf("merge job needs %q if %q, want the shards, also after a failed one", merge.Needs, merge.If)
	}
	var download, merged, uploaded bool
	for _, s := range merge.Steps {
		switch {
		case strings.HasPrefix(s.Uses, "actions/download-artifact@"):
			// The action names a shard's artifact replaycheck-report-shard-I-of-N.
			download = s.With["pattern"] == "replaycheck-report-shard-*" && s.With["merge-multiple"] == nil
		case strings.Contains(s.Run, " report merge "):
			mergeCmd, _, _ := newRootCmd(strings.NewReader(""), &strings.Builder{}, &strings.Builder{}).Find([]string{"report", "merge"})
			for _, f := range regexp.MustCompile(`(?:^|[\s(])--([a-z][a-z-]*)`).FindAllStringSubmatch(s.Run, -1) {
				if mergeCmd.Flags().Lookup(f[1]) == nil {
					t.Errorf("the workflow passes --%s, which replaycheck report merge does not have", f[1])
				}
			}
			merged = strings.Contains(s.Run, "report merge replaycheck-report-shard-*/report.json") && strings.Contains(s.Run, "--junit junit.xml") &&
				strings.Contains(s.Run, `--markdown "$GITHUB_STEP_SUMMARY"`) && strings.Contains(s.Run, "--html report.html")
		case strings.HasPrefix(s.Uses, "actions/upload-artifact@"):
			uploaded = s.With["path"] == "junit.xml\nrun.json\nreport.html\n" && s.If == "${{ !cancelled() }}"
		}
	}
	if !download || !merged || !uploaded {
		t.Errorf("merge job downloads every shard's reports %v, merges their JSON into JUnit, Markdown and HTML %v, uploads them also after a failure %v", download, merged, uploaded)
	}
}

// actionMetadata is the part of action.yml the CI example relies on.
type actionMetadata struct {
	Inputs map[string]struct {
		Default string `yaml:"default"`
	} `yaml:"inputs"`
}

func readAction(t *testing.T) actionMetadata {
	t.Helper()
	src, err := os.ReadFile("../../action.yml")
	if err != nil {
		t.Fatal(err)
	}
	var a actionMetadata
	if err := yaml.Unmarshal(src, &a); err != nil {
		t.Fatalf("action.yml: %v", err)
	}
	return a
}

// TestDocumentedFlagsExist checks that every flag README.md, CONTRIBUTING.md
// and docs/ (docFiles) pass to a replaycheck command is a flag of that
// command.
func TestDocumentedFlagsExist(t *testing.T) {
	root := newRootCmd(strings.NewReader(""), &strings.Builder{}, &strings.Builder{})
	invocation := regexp.MustCompile(`replaycheck"? (run|baseline|list|validate|serve|gateway|schema|rules|explore|report merge)\b(.*)`)
	flag := regexp.MustCompile(`(?:^|\s)--([a-z][a-z-]*)`)
	docs, err := docFiles("../..")
	if err != nil {
		t.Fatal(err)
	}
	for _, file := range docs {
		src, err := os.ReadFile(filepath.Join("../..", file))
		if err != nil {
			t.Fatal(err)
		}
		lines := strings.Split(string(src), "\n")
		for i := 0; i < len(lines); i++ {
			m := invocation.FindStringSubmatch(lines[i])
			if m == nil {
				continue
			}
			args := m[2]
			for strings.HasSuffix(strings.TrimSpace(args), `\`) && i+1 < len(lines) {
				i++
				args += " " + lines[i]
			}
			args, _, _ = strings.Cut(args, "#")
			cmd, _, err := root.Find(strings.Fields(m[1]))
			if err != nil {
				t.Fatalf("%s:%d: %v", file, i+1, err)
			}
			for _, f := range flag.FindAllStringSubmatch(args, -1) {
				if f[1] != "help" && cmd.Flags().Lookup(f[1]) == nil { // cobra adds --help as it runs
					t.Errorf("%s:%d: replaycheck %s has no flag --%s", file, i+1, m[1], f[1])
				}
			}
		}
	}
}
