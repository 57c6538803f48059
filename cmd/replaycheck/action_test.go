package main

import (
	"archive/tar"
	"bytes"
	"compress/gzip"
	"context"
	"crypto/sha256"
	"encoding/xml"
	"fmt"
	"net/http"
	"net/http/httptest"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strings"
	"sync/atomic"
	"testing"
	"time"
)

// actionRunner is a GitHub Actions runner as the action's scripts see it: a
// temp directory, the GITHUB_* files, and PATH extended by GITHUB_PATH.
type actionRunner struct {
	t                     *testing.T
	temp, work            string
	path, output, summary string
}

func newActionRunner(t *testing.T) *actionRunner {
	root := t.TempDir()
	r := &actionRunner{t: t, temp: filepath.Join(root, "runner-temp"), work: filepath.Join(root, "workspace"),
		path: filepath.Join(root, "github-path"), output: filepath.Join(root, "github-output"), summary: filepath.Join(root, "step-summary")}
	for _, d := range []string{r.temp, r.work} {
		if err := os.MkdirAll(d, 0o755); err != nil {
			t.Fatal(err)
		}
	}
	return r
}

// run runs one of the action's scripts (.github/action/NAME) in the
// workspace with env, as the action's step would, and returns its combined
// output and exit code.
func (r *actionRunner) run(name string, env ...string) (string, int) {
	r.t.Helper()
	script, err := filepath.Abs(filepath.Join("../../.github/action", name))
	if err != nil {
		r.t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, "bash", script)
	cmd.Dir = r.work
	path := os.Getenv("PATH")
	if b, err := os.ReadFile(r.path); err == nil {
		for _, dir := range strings.Fields(string(b)) {
			path = dir + string(os.PathListSeparator) + path // what the runner does with GITHUB_PATH
		}
	}
	cmd.Env = append(os.Environ(), "PATH="+path, "RUNNER_TEMP="+r.temp, "RUNNER_OS=Linux", "RUNNER_ARCH="+map[string]string{"amd64": "X64", "arm64": "ARM64"}[runtime.GOARCH],
		"GITHUB_PATH="+r.path, "GITHUB_OUTPUT="+r.output, "GITHUB_STEP_SUMMARY="+r.summary)
	cmd.Env = append(cmd.Env, env...)
	out, err := cmd.CombinedOutput()
	code := 0
	if err != nil {
		exit, ok := err.(*exec.ExitError)
		if !ok {
			r.t.Fatalf("%s: %v", name, err)
		}
		code = exit.ExitCode()
	}
	return string(out), code
}

// outputs reads the step outputs written so far (GITHUB_OUTPUT), the last
// value of each name winning; the file is then emptied for the next step.
func (r *actionRunner) outputs() map[string]string {
	r.t.Helper()
	b, err := os.ReadFile(r.output)
	if err != nil {
		r.t.Fatal(err)
	}
	out := map[string]string{}
	for _, line := range strings.Split(strings.TrimSpace(string(b)), "\n") {
		k, v, _ := strings.Cut(line, "=")
		out[k] = v
	}
	if err := os.Remove(r.output); err != nil {
		r.t.Fatal(err)
	}
	return out
}

// TestActionScripts runs the action's scripts outside GitHub: install.sh
// puts the binary input on GITHUB_PATH, run.sh runs the seed scenarios on
// the guarded gateway (exit-code 0) and on the naive one (exit-code 1,
// the step itself exiting 0 so the reports upload), writes the JUnit, JSON,
// HTML and Markdown reports, appends the summary to the step summary and
// names the artifact after the shard; a baseline with explore is refused.
func TestActionScripts(t *testing.T) {
	bin := releaseBinary(t)
	r := newActionRunner(t)
	if out, code := r.run("install.sh", "INPUT_BINARY="+bin); code != 0 || !strings.Contains(out, "replaycheck ") {
		t.Fatalf("install.sh with a binary: exit %d\n%s", code, out)
	}
	if b, err := os.ReadFile(r.path); err != nil || strings.TrimSpace(string(b)) != filepath.Join(r.temp, "replaycheck-bin") {
		t.Fatalf("GITHUB_PATH holds %q (%v), want %s", b, err, filepath.Join(r.temp, "replaycheck-bin"))
	}
	seed, err := filepath.Abs("../../scenarios/seed/fault-on-chat.yaml")
	if err != nil {
		t.Fatal(err)
	}

	tests := []struct {
		name         string
		env          []string
		wantCode     string
		wantArtifact string
		wantFailures int
		wantFailure  string // the job's error says what the exit code means
	}{
		{name: "guarded passes", env: []string{"INPUT_TARGETS=builtin:guarded", "INPUT_SCENARIOS=" + seed, "INPUT_REPORT_DIR=guarded"}, wantCode: "0", wantArtifact: "replaycheck-report"},
		{name: "naive fails, in a shard", env: []string{"INPUT_TARGETS=\n builtin:naive \n", "INPUT_SCENARIOS=" + seed, "INPUT_SHARD=1/1", "INPUT_ARGS=--timeout 60s", "INPUT_REPORT_DIR=naive"},
			wantCode: "1", wantArtifact: "replaycheck-report-shard-1-of-1", wantFailures: 1, wantFailure: "a rule broke"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			before, _ := os.ReadFile(r.summary)
			out, code := r.run("run.sh", tt.env...)
			if code != 0 {
				t.Fatalf("run.sh exited %d, want 0 (the action's last step fails the job)\n%s", code, out)
			}
			o := r.outputs()
			if o["exit-code"] != tt.wantCode || o["artifact-name"] != tt.wantArtifact || o["failure"] != tt.wantFailure {
				t.Errorf("outputs %v, want exit-code %s, artifact-name %s and failure %q\n%s", o, tt.wantCode, tt.wantArtifact, tt.wantFailure, out)
			}
			dir := filepath.Join(r.work, o["report-dir"])
			for _, f := range []string{"junit.xml", "report.json", "report.html", "summary.md"} {
				if fi, err := os.Stat(filepath.Join(dir, f)); err != nil || fi.Size() == 0 {
					t.Errorf("report %s: %v", f, err)
				}
			}
			var junit struct {
				Failures int `xml:"failures,attr"`
				Tests    int `xml:"tests,attr"`
			}
			if b, err := os.ReadFile(filepath.Join(r.work, o["junit"])); err != nil || xml.Unmarshal(b, &junit) != nil || junit.Tests == 0 || junit.Failures != tt.wantFailures {
				t.Errorf("junit %s: %d tests, %d failures (%v), want %d failures", o["junit"], junit.Tests, junit.Failures, err, tt.wantFailures)
			}
			summary, _ := os.ReadFile(r.summary)
			md, _ := os.ReadFile(filepath.Join(dir, "summary.md"))
			if len(md) == 0 || string(summary) != string(before)+string(md) {
				t.Errorf("the step summary did not get summary.md appended (%d bytes before, %d after, %d in summary.md)", len(before), len(summary), len(md))
			}
		})
	}

	// Matrix mode: the targets are the agents; no JUnit; the Markdown
	// matrix goes to the step summary.
	before, _ := os.ReadFile(r.summary)
	out, code := r.run("run.sh", "INPUT_COMMAND=matrix", "INPUT_TARGETS=builtin:guarded\nbuiltin:naive", "INPUT_ARGS=--kinds 500", "INPUT_REPORT_DIR=matrix")
	if o := r.outputs(); code != 0 || o["exit-code"] != "0" || o["junit"] != "" {
		t.Errorf("matrix: run.sh exit %d, outputs %v, want exit-code 0 and no junit\n%s", code, o, out)
	}
	for _, f := range []string{"report.json", "report.html", "summary.md"} {
		if fi, err := os.Stat(filepath.Join(r.work, "matrix", f)); err != nil || fi.Size() == 0 {
			t.Errorf("matrix report %s: %v", f, err)
		}
	}
	if summary, _ := os.ReadFile(r.summary); !strings.Contains(string(summary[len(before):]), "| builtin:naive | — | **DUPLICATE** 500 |") {
		t.Errorf("the step summary lacks the matrix's naive row:\n%s", summary[len(before):])
	}
	if out, code := r.run("run.sh", "INPUT_COMMAND=matrix", "INPUT_SCENARIOS="+seed); code != 2 || !strings.Contains(out, "give none with command matrix") {
		t.Errorf("matrix with scenarios: exit %d, want 2 saying why\n%s", code, out)
	}

	// Merge mode: the run reports above joined, with their JUnit (the
	// matrix's parts are TestCIMatrixWorkflowExample's); a pattern that
	// matches nothing, or a shard, is refused.
	out, code = r.run("run.sh", "INPUT_COMMAND=merge", "INPUT_REPORTS=guarded/report.json\n n*/report.json", "INPUT_REPORT_DIR=merged")
	if o := r.outputs(); code != 0 || o["exit-code"] != "1" || o["junit"] != "merged/junit.xml" || o["html"] != "merged/report.html" || o["artifact-name"] != "replaycheck-report" {
		t.Errorf("merge of the run reports: run.sh exit %d, outputs %v, want exit-code 1 (naive broke a rule) and the JUnit\n%s", code, o, out)
	}
	if b, err := os.ReadFile(filepath.Join(r.work, "merged", "junit.xml")); err != nil || !strings.Contains(string(b), "builtin:guarded") || !strings.Contains(string(b), "builtin:naive") {
		t.Errorf("merged JUnit lacks a target (%v):\n%s", err, b)
	}
	for _, tt := range []struct{ env, want string }{
		{"INPUT_REPORTS=shard-*/report.json", "no file matches shard-*/report.json"},
		{"INPUT_SHARD=1/2", "SHARD: merge joins the reports' JSON"},
		{"INPUT_REPORTS=", "give the JSON reports to merge"},
	} {
		if out, code := r.run("run.sh", "INPUT_COMMAND=merge", "INPUT_REPORTS=guarded/report.json", tt.env); code != 2 || !strings.Contains(out, tt.want) {
			t.Errorf("merge with %s: exit %d, want 2 saying %q\n%s", tt.env, code, tt.want, out)
		}
	}

	out, code = r.run("run.sh", "INPUT_COMMAND=explore", "INPUT_BASELINE=replaycheck-baseline.yaml")
	if code != 2 || !strings.Contains(out, "baseline works with command run only") {
		t.Errorf("explore with a baseline: exit %d, want 2 saying why\n%s", code, out)
	}
}

// TestActionInstallsARelease serves a release as GitHub does (the archive
// goreleaser names replaycheck_VERSION_OS_ARCH.tar.gz and checksums.txt)
// and checks that install.sh installs its binary, and refuses an archive
// whose checksum does not match.
func TestActionInstallsARelease(t *testing.T) {
	if runtime.GOOS != "linux" {
		t.Skip("the action's scripts are tested on Linux")
	}
	exe := "#!/bin/sh\necho replaycheck 1.2.3 from the release\n"
	var tgz bytes.Buffer
	gz := gzip.NewWriter(&tgz)
	tw := tar.NewWriter(gz)
	for _, f := range []struct {
		name, body string
		mode       int64
	}{{"README.md", "# replaycheck\n", 0o644}, {"replaycheck", exe, 0o755}} {
		if err := tw.WriteHeader(&tar.Header{Name: f.name, Mode: f.mode, Size: int64(len(f.body))}); err != nil {
			t.Fatal(err)
		}
		if _, err := tw.Write([]byte(f.body)); err != nil {
			t.Fatal(err)
		}
	}
	if err := tw.Close(); err != nil {
		t.Fatal(err)
	}
	if err := gz.Close(); err != nil {
		t.Fatal(err)
	}
	archive := fmt.Sprintf("replaycheck_1.2.3_linux_%s.tar.gz", runtime.GOARCH)
	sum := fmt.Sprintf("%x", sha256.Sum256(tgz.Bytes()))
	var checksums atomic.Value // the release's checksums.txt, set before each install
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, req *http.Request) {
		switch req.URL.Path {
		case "/v1.2.3/" + archive:
			_, _ = w.Write(tgz.Bytes())
		case "/v1.2.3/checksums.txt":
			_, _ = fmt.Fprint(w, checksums.Load())
		default:
			http.NotFound(w, req)
		}
	}))
	t.Cleanup(srv.Close)

	checksums.Store(sum + "  " + archive + "\n" + strings.Repeat("0", 64) + "  replaycheck_1.2.3_darwin_arm64.tar.gz\n")
	r := newActionRunner(t)
	out, code := r.run("install.sh", "INPUT_VERSION=v1.2.3", "REPLAYCHECK_RELEASES="+srv.URL)
	if code != 0 || !strings.Contains(out, "replaycheck 1.2.3 from the release") {
		t.Fatalf("install.sh of v1.2.3: exit %d, want 0 and the release's binary run\n%s", code, out)
	}
	if b, err := os.ReadFile(filepath.Join(r.temp, "replaycheck-bin", "replaycheck")); err != nil || string(b) != exe {
		t.Errorf("installed binary %q (%v), want the archive's", b, err)
	}

	checksums.Store(strings.Repeat("f", 64) + "  " + archive + "\n")
	r = newActionRunner(t)
	if out, code := r.run("install.sh", "INPUT_VERSION=1.2.3", "REPLAYCHECK_RELEASES="+srv.URL); code != 3 || !strings.Contains(out, "checksums.txt of v1.2.3 says") {
		t.Errorf("install.sh with a wrong checksum: exit %d, want 3 saying so\n%s", code, out)
	}
	if _, err := os.Stat(r.path); err == nil {
		t.Error("a refused archive was put on GITHUB_PATH")
	}
}

// TestActionLint lints the workflows with actionlint (make actionlint puts it
// in bin/): .github/workflows, whose action.yml workflow uses the action of
// the repository root (./), so actionlint checks action.yml's inputs and
// outputs too, and the CI examples; and the action's scripts with
// shellcheck, when installed.
func TestActionLint(t *testing.T) {
	const root = "../.."
	bin, err := filepath.Abs(filepath.Join(root, "bin", "actionlint"))
	if err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(bin); err != nil {
		if bin, err = exec.LookPath("actionlint"); err != nil {
			t.Skip("actionlint is not installed (make actionlint builds it into bin/): skipping")
		}
	}
	lint := exec.Command(bin, "-shellcheck=", ".github/workflows/action.yml", ".github/workflows/release.yml", "examples/ci/replaycheck.yml", "examples/ci/matrix.yml")
	lint.Dir = root
	if out, err := lint.CombinedOutput(); err != nil {
		t.Errorf("actionlint: %v\n%s", err, out)
	}
	shellcheck, err := exec.LookPath("shellcheck")
	if err != nil {
		t.Log("shellcheck is not installed: the action's scripts are not checked by it")
		return
	}
	check := exec.Command(shellcheck, ".github/action/install.sh", ".github/action/run.sh")
	check.Dir = root
	if out, err := check.CombinedOutput(); err != nil {
		t.Errorf("shellcheck: %v\n%s", err, out)
	}
}
