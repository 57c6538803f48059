package main

import (
	"os"
	"regexp"
	"strconv"
	"strings"
	"testing"

	"github.com/goccy/go-yaml"
	"github.com/replaycheck/replaycheck/harness/targetfile"
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
// N equal to the matrix size, Go set up from go.mod, the user's target file
// (TARGET, one that loads) with its gateway installed, the suite run on it with
// --junit, --json and --markdown "$GITHUB_STEP_SUMMARY", and the JUnit and
// JSON files uploaded also when the run failed; then a merge job, also after
// a failed shard, that downloads every shard's reports, merges their JSON
// with report merge into JUnit, Markdown and HTML, and uploads the HTML
// report with the merged JUnit and JSON.
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
	var setupGo, run, upload, install bool
	for _, s := range job.Steps {
		switch {
		case strings.HasPrefix(s.Uses, "actions/setup-go@"):
			setupGo = s.With["go-version-file"] == "go.mod"
		case strings.HasPrefix(s.Run, "pip install 'litellm[proxy]'"):
			install = true
		case strings.Contains(s.Run, " run "):
			runCmd, _, _ := newRootCmd(strings.NewReader(""), &strings.Builder{}, &strings.Builder{}).Find([]string{"run"})
			for _, f := range regexp.MustCompile(`(?:^|[\s(])--([a-z][a-z-]*)`).FindAllStringSubmatch(s.Run, -1) {
				if runCmd.Flags().Lookup(f[1]) == nil {
					t.Errorf("the workflow passes --%s, which replaycheck run does not have", f[1])
				}
			}
			run = strings.Contains(s.Run, `--target "$TARGET"`) &&
				strings.Contains(s.Run, `--junit "junit-${{ matrix.shard }}.xml"`) &&
				strings.Contains(s.Run, `--json "run-${{ matrix.shard }}.json"`) &&
				strings.Contains(s.Run, `--markdown "$GITHUB_STEP_SUMMARY"`) &&
				strings.Contains(s.Run, `--shard "${{ matrix.shard }}/$SHARDS"`) &&
				strings.Contains(s.Run, "--baseline replaycheck-baseline.yaml")
		case strings.HasPrefix(s.Uses, "actions/upload-artifact@"):
			upload = s.With["path"] == "junit-${{ matrix.shard }}.xml\nrun-${{ matrix.shard }}.json\n" &&
				s.With["name"] == "replaycheck-shard-${{ matrix.shard }}" && s.If == "${{ !cancelled() }}"
		}
	}
	if !setupGo || !install || !run || !upload {
		t.Errorf("setup-go from go.mod %v, the target's gateway installed %v, run on $TARGET with reports %v, upload after failures %v", setupGo, install, run, upload)
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
			download = s.With["pattern"] == "replaycheck-shard-*" && s.With["merge-multiple"] == true
		case strings.Contains(s.Run, " report merge "):
			mergeCmd, _, _ := newRootCmd(strings.NewReader(""), &strings.Builder{}, &strings.Builder{}).Find([]string{"report", "merge"})
			for _, f := range regexp.MustCompile(`(?:^|[\s(])--([a-z][a-z-]*)`).FindAllStringSubmatch(s.Run, -1) {
				if mergeCmd.Flags().Lookup(f[1]) == nil {
					t.Errorf("the workflow passes --%s, which replaycheck report merge does not have", f[1])
				}
			}
			merged = strings.Contains(s.Run, "report merge run-*.json") && strings.Contains(s.Run, "--junit junit.xml") &&
				strings.Contains(s.Run, `--markdown "$GITHUB_STEP_SUMMARY"`) && strings.Contains(s.Run, "--html report.html")
		case strings.HasPrefix(s.Uses, "actions/upload-artifact@"):
			uploaded = s.With["path"] == "junit.xml\nrun.json\nreport.html\n" && s.If == "${{ !cancelled() }}"
		}
	}
	if !download || !merged || !uploaded {
		t.Errorf("merge job downloads every shard's reports %v, merges their JSON into JUnit, Markdown and HTML %v, uploads them also after a failure %v", download, merged, uploaded)
	}
}

// TestDocumentedFlagsExist checks that every flag the README passes to a
// replaycheck command is a flag of that command.
func TestDocumentedFlagsExist(t *testing.T) {
	root := newRootCmd(strings.NewReader(""), &strings.Builder{}, &strings.Builder{})
	invocation := regexp.MustCompile(`replaycheck"? (run|baseline|list|validate|serve|gateway|schema|rules|report merge)\b(.*)`)
	flag := regexp.MustCompile(`(?:^|\s)--([a-z][a-z-]*)`)
	for _, file := range []string{"../../README.md"} {
		src, err := os.ReadFile(file)
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
				if cmd.Flags().Lookup(f[1]) == nil {
					t.Errorf("%s:%d: replaycheck %s has no flag --%s", file, i+1, m[1], f[1])
				}
			}
		}
	}
}
