package main

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"testing"

	"github.com/goccy/go-yaml"
	"github.com/google/go-cmp/cmp"

	"github.com/replaycheck/replaycheck/internal/harness/targetfile"
	"github.com/replaycheck/replaycheck/internal/matrix"
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
// every shard's artifact and merges their JSON with the action's merge mode
// (TestActionScripts runs it on run reports), which writes and uploads the
// JUnit, JSON, HTML and Markdown reports.
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
	var download, merged bool
	for _, s := range merge.Steps {
		switch {
		case strings.HasPrefix(s.Uses, "actions/download-artifact@"):
			// The action names a shard's artifact replaycheck-report-shard-I-of-N.
			download = s.With["pattern"] == "replaycheck-report-shard-*" && s.With["merge-multiple"] == nil
		case strings.HasPrefix(s.Uses, "replaycheck/replaycheck@"):
			for name := range s.With {
				if _, ok := action.Inputs[name]; !ok {
					t.Errorf("the merge job passes input %s, which action.yml does not have", name)
				}
			}
			merged = s.With["command"] == "merge" && s.With["reports"] == "replaycheck-report-shard-*/report.json" && s.With["version"] != nil
		case s.Run != "" || strings.HasPrefix(s.Uses, "actions/upload-artifact@"):
			t.Errorf("the merge job's step %q is the action's merge mode by hand", s.Name)
		}
	}
	if !download || !merged {
		t.Errorf("merge job downloads every shard's reports %v, merges them with the action's merge mode (a release installed) %v", download, merged)
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

// TestCIMatrixWorkflowExample checks the shipped matrix workflow
// (examples/ci/matrix.yml) and runs it as GitHub would, each job on a
// runner of its own, with the action's scripts: every shard job's matrix
// step with its inputs (the agents replaced by the built-in gateways on one
// mechanism: the real agents' sweeps take minutes), its report directory
// handed to the merge job as download-artifact does (a directory named
// after the artifact), then the merge job's step with its inputs: one
// matrix with the cells of the matrix built whole, its Markdown in the step
// summary and its page as the html output; with replaycheck-matrix.json
// saved, exit 1 when a cell turned DUPLICATE since, 0 when none changed.
func TestCIMatrixWorkflowExample(t *testing.T) {
	src, err := os.ReadFile("../../examples/ci/matrix.yml")
	if err != nil {
		t.Fatal(err)
	}
	var w workflow
	if err := yaml.Unmarshal(src, &w); err != nil {
		t.Fatalf("workflow does not parse: %v", err)
	}
	job, merge := w.Jobs["matrix"], w.Jobs["merge"]
	if n, err := strconv.Atoi(job.Env["SHARDS"]); err != nil || n != len(job.Strategy.Matrix.Shard) || n < 2 {
		t.Fatalf("SHARDS=%q, but the matrix has %d shards", job.Env["SHARDS"], len(job.Strategy.Matrix.Shard))
	}
	for i, s := range job.Strategy.Matrix.Shard {
		if s != i+1 {
			t.Errorf("matrix shard %d is %d, want 1..N", i, s)
		}
	}
	if merge.Needs != "matrix" || merge.If != "${{ !cancelled() }}" {
		t.Errorf("merge job needs %q if %q, want the shards, also after a failed one", merge.Needs, merge.If)
	}
	action := readAction(t)
	// actionStep is job's step that runs the repository's action with
	// command, with its inputs as the action's scripts read them; expand
	// stands for what Actions expands.
	actionStep := func(job string, steps []map[string]any, command string, expand func(string) string) []string {
		t.Helper()
		for _, with := range steps {
			if with["command"] != command {
				continue
			}
			var env []string
			for name, v := range with {
				if _, ok := action.Inputs[name]; !ok {
					t.Errorf("%s: the workflow passes input %s, which action.yml does not have", job, name)
				}
				env = append(env, "INPUT_"+strings.ToUpper(strings.ReplaceAll(name, "-", "_"))+"="+expand(fmt.Sprint(v)))
			}
			if with["version"] == nil {
				t.Errorf("%s: the action installs no release (no version)", job)
			}
			return env
		}
		t.Fatalf("%s: no step runs the action with command %s", job, command)
		return nil
	}
	var shardSteps, mergeSteps []map[string]any
	var installs, downloads bool
	for _, s := range job.Steps {
		switch {
		case strings.HasPrefix(s.Uses, "replaycheck/replaycheck@"):
			shardSteps = append(shardSteps, s.With)
		case strings.HasPrefix(s.Run, "npm ci --prefix targets/clients"):
			installs = true
		}
	}
	for _, s := range merge.Steps {
		switch {
		case strings.HasPrefix(s.Uses, "replaycheck/replaycheck@"):
			mergeSteps = append(mergeSteps, s.With)
		case strings.HasPrefix(s.Uses, "actions/download-artifact@"):
			// The action names a shard's artifact replaycheck-report-shard-I-of-N.
			downloads = s.With["pattern"] == "replaycheck-report-shard-*" && s.With["merge-multiple"] == nil
		}
	}
	if !installs || !downloads {
		t.Errorf("the shard jobs install the agents %v; the merge job downloads every shard's artifact %v", installs, downloads)
	}
	// The agents are the repository's target files, with the versions
	// their rows name; the matrix's flags are matrix's.
	matrixCmd, _, _ := newRootCmd(strings.NewReader(""), &strings.Builder{}, &strings.Builder{}).Find([]string{"matrix"})
	for _, with := range shardSteps {
		for _, f := range regexp.MustCompile(`(?:^|\s)--([a-z][a-z-]*)`).FindAllStringSubmatch(fmt.Sprint(with["args"]), -1) {
			if matrixCmd.Flags().Lookup(f[1]) == nil {
				t.Errorf("the workflow passes --%s, which replaycheck matrix does not have", f[1])
			}
		}
		for _, tf := range strings.Fields(fmt.Sprint(with["targets"])) {
			if _, err := targetfile.Load("../../"+tf, targetfile.Options{}); err != nil {
				t.Errorf("agent %s: %v", tf, err)
			}
			if v, err := targetfile.ReadVersion(context.Background(), "../../"+tf, targetfile.Options{}); err != nil || v == "" {
				t.Errorf("agent %s: version %q: %v", tf, v, err)
			}
		}
	}

	bin := releaseBinary(t)
	newRunner := func() *actionRunner {
		r := newActionRunner(t)
		if out, code := r.run("install.sh", "INPUT_BINARY="+bin); code != 0 {
			t.Fatalf("install.sh: exit %d\n%s", code, out)
		}
		return r
	}
	const agents, kinds = "INPUT_TARGETS=builtin:guarded\nbuiltin:naive", "--kinds 500"
	whole := newRunner()
	if out, code := whole.run("run.sh", "INPUT_COMMAND=matrix", agents, "INPUT_ARGS="+kinds); code != 0 || whole.outputs()["exit-code"] != "0" {
		t.Fatalf("the whole matrix: exit %d\n%s", code, out)
	}
	wholeJSON := filepath.Join(whole.work, "replaycheck-report", "report.json")

	m := newRunner()
	for _, shard := range job.Strategy.Matrix.Shard {
		expand := func(s string) string {
			s = strings.ReplaceAll(s, "${{ matrix.shard }}", strconv.Itoa(shard))
			return strings.ReplaceAll(s, "${{ env.SHARDS }}", job.Env["SHARDS"])
		}
		env := actionStep("matrix", shardSteps, "matrix", expand)
		for i, e := range env {
			if strings.HasPrefix(e, "INPUT_ARGS=") {
				env[i] = e + " " + kinds
			}
		}
		r := newRunner()
		out, code := r.run("run.sh", append(env, agents)...)
		o := r.outputs()
		if code != 0 || o["exit-code"] != "0" || o["junit"] != "" {
			t.Fatalf("shard %d: run.sh exit %d, outputs %v, want exit-code 0 and no junit\n%s", shard, code, o, out)
		}
		// What upload-artifact and download-artifact make of it.
		if err := os.CopyFS(filepath.Join(m.work, o["artifact-name"]), os.DirFS(filepath.Join(r.work, o["report-dir"]))); err != nil {
			t.Fatal(err)
		}
	}

	mergeJob := func(name string, saved []byte) (map[string]string, string) {
		t.Helper()
		_ = os.Remove(filepath.Join(m.work, "replaycheck-matrix.json")) // a run without one saved
		if saved != nil {
			if err := os.WriteFile(filepath.Join(m.work, "replaycheck-matrix.json"), saved, 0o644); err != nil {
				t.Fatal(err)
			}
		}
		env := actionStep("merge", mergeSteps, "merge", func(s string) string { return hashFilesArgs(m.work, s) })
		out, code := m.run("run.sh", append(env, "INPUT_REPORT_DIR="+name)...)
		if code != 0 {
			t.Fatalf("merge: run.sh exited %d, want 0 (the action's last step fails the job)\n%s", code, out)
		}
		return m.outputs(), out
	}
	o, out := mergeJob("merged", nil)
	if o["exit-code"] != "0" || o["junit"] != "" || o["html"] != "merged/report.html" {
		t.Errorf("merge: outputs %v, want exit-code 0, no junit and the page\n%s", o, out)
	}
	if b, err := os.ReadFile(filepath.Join(m.work, o["html"])); err != nil || !strings.Contains(string(b), "builtin:naive") {
		t.Errorf("the merged matrix's page %s: %v", o["html"], err)
	}
	if summary, _ := os.ReadFile(m.summary); !strings.Contains(string(summary), "| builtin:naive | — | **DUPLICATE** 500 |") ||
		!strings.Contains(string(summary), "| builtin:guarded | — | safe 1 |") {
		t.Errorf("the step summary lacks the merged matrix's rows:\n%s", summary)
	}
	if diff := cmp.Diff(matrixVerdicts(t, wholeJSON), matrixVerdicts(t, filepath.Join(m.work, "merged", "report.json"))); diff != "" {
		t.Errorf("the matrix built whole (-) and merged from the shards (+) differ:\n%s", diff)
	}
	// The shards' reproductions are in the merged report directory, which
	// the action uploads, where the merged cells name them.
	mergedMatrix, err := readMatrix(filepath.Join(m.work, "merged", "report.json"))
	if err != nil {
		t.Fatal(err)
	}
	reproductions := 0
	for _, r := range mergedMatrix.Rows {
		for _, c := range r.Cells {
			if c.Reproduction == "" {
				continue
			}
			reproductions++
			if _, err := os.Stat(filepath.Join(m.work, c.Reproduction)); err != nil || !strings.HasPrefix(c.Reproduction, "merged/matrix-reproductions/shard-2-of-") {
				t.Errorf("%s · %s: reproduction %s (%v), want a file of merged/matrix-reproductions/shard-2-of-N", r.Target, c.Mechanism, c.Reproduction, err)
			}
		}
	}
	if reproductions == 0 || mergedMatrix.Reproductions != "merged/matrix-reproductions" {
		t.Errorf("the merged matrix names %d reproductions in %q, want naive's 500 in merged/matrix-reproductions", reproductions, mergedMatrix.Reproductions)
	}

	saved, err := os.ReadFile(wholeJSON)
	if err != nil {
		t.Fatal(err)
	}
	if o, out := mergeJob("same", saved); o["exit-code"] != "0" || strings.Contains(out, "→") {
		t.Errorf("merge --diff against the same matrix: exit-code %s, want 0 and no change\n%s", o["exit-code"], out)
	}
	safer := strings.Replace(string(saved), `"verdict": "DUPLICATE"`, `"verdict": "safe"`, 1)
	if safer == string(saved) {
		t.Fatal("the whole matrix has no DUPLICATE cell to turn safe")
	}
	o, out = mergeJob("worse", []byte(safer))
	if o["exit-code"] != "1" || !strings.Contains(out, "! builtin:naive · 500: safe → DUPLICATE") ||
		o["failure"] != "a cell turned DUPLICATE or LOST since replaycheck-matrix.json: builtin:naive · 500: safe → DUPLICATE" {
		t.Errorf("merge --diff against a matrix where naive was safe: exit-code %s and failure %q, want 1 naming the cell\n%s", o["exit-code"], o["failure"], out)
	}

	// A shard job that uploaded nothing: the merge names the shard missing.
	n := job.Env["SHARDS"]
	if err := os.Rename(filepath.Join(m.work, "replaycheck-report-shard-2-of-"+n), filepath.Join(m.work, "held-back")); err != nil {
		t.Fatal(err)
	}
	o, out = mergeJob("holes", nil)
	if o["exit-code"] != "2" || !strings.Contains(out, fmt.Sprintf("shard 2 of %s is missing: the parts given are replaycheck-report-shard-1-of-%[1]s/report.json, replaycheck-report-shard-3-of-%[1]s/report.json", n)) {
		t.Errorf("merge without shard 2's part: exit-code %s, want 2 naming shard 2 and the parts given\n%s", o["exit-code"], out)
	}
}

// hashFilesArgs evaluates the one expression the matrix example's merge
// step has, ARGS when FILE is in dir and else nothing:
//
//	${{ hashFiles('FILE') != '' && 'ARGS' || '' }}
//
// Any other text is returned as it is.
func hashFilesArgs(dir, s string) string {
	m := regexp.MustCompile(`^\$\{\{ hashFiles\('([^']+)'\) != '' && '([^']*)' \|\| '' \}\}$`).FindStringSubmatch(s)
	if m == nil {
		return s
	}
	if _, err := os.Stat(filepath.Join(dir, m[1])); err != nil {
		return ""
	}
	return m[2]
}

// matrixVerdicts reads the matrix saved at path as "AGENT MECHANISM" →
// verdict.
func matrixVerdicts(t *testing.T, path string) map[string]matrix.Verdict {
	t.Helper()
	m, err := readMatrix(path)
	if err != nil {
		t.Fatal(err)
	}
	out := map[string]matrix.Verdict{}
	for _, r := range m.Rows {
		for _, c := range r.Cells {
			out[r.Target+" "+c.Mechanism] = c.Verdict
		}
	}
	return out
}
