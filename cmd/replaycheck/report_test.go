package main

import (
	"bytes"
	"context"
	"encoding/json"
	"encoding/xml"
	"errors"
	"html"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/replaycheck/replaycheck/report"
)

// reportPaths are the four report files of one command run.
type reportPaths struct{ junit, json, md, html string }

func newReportPaths(t *testing.T) reportPaths {
	dir := t.TempDir()
	return reportPaths{filepath.Join(dir, "junit.xml"), filepath.Join(dir, "run.json"), filepath.Join(dir, "summary.md"), filepath.Join(dir, "report.html")}
}

func (p reportPaths) args() []string {
	return []string{"--junit", p.junit, "--json", p.json, "--markdown", p.md, "--html", p.html}
}

// junitErrors parses a JUnit file and returns its total counts and the
// type and message of each <error>.
func junitErrors(t *testing.T, path string) (tests, failures int, errs []string) {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	var doc struct {
		Tests    int `xml:"tests,attr"`
		Failures int `xml:"failures,attr"`
		Suites   []struct {
			Cases []struct {
				Error *struct {
					Type    string `xml:"type,attr"`
					Message string `xml:"message,attr"`
				} `xml:"error"`
			} `xml:"testcase"`
		} `xml:"testsuite"`
	}
	if err := xml.Unmarshal(b, &doc); err != nil {
		t.Fatalf("%s does not parse: %v", path, err)
	}
	for _, s := range doc.Suites {
		for _, c := range s.Cases {
			if c.Error != nil {
				errs = append(errs, c.Error.Type+": "+c.Error.Message)
			}
		}
	}
	return doc.Tests, doc.Failures, errs
}

func readSuite(t *testing.T, path string) report.Suite {
	t.Helper()
	s, err := readReport(path)
	if err != nil {
		t.Fatal(err)
	}
	return s
}

// TestReportsWrittenWhenTheRunCannotStart: a bad scenario file (exit 2) and
// a target that does not start (exit 3) still write every report, with the
// error as a JUnit testcase, a Markdown banner and the JSON abort.
func TestReportsWrittenWhenTheRunCannotStart(t *testing.T) {
	dir := t.TempDir()
	bad := filepath.Join(dir, "bad.yaml")
	missing := filepath.Join(dir, "missing.yaml")
	for path, src := range map[string]string{
		bad:     "name: x\nrequest: {endpoint: chat}\nexpect: {writes: 1, bogus: 2}\n",
		missing: "kind: proxy\nurl: http://127.0.0.1:{{port}}\nstart: {command: [/nonexistent/litellm, --port, \"{{port}}\"]}\n",
	} {
		if err := os.WriteFile(path, []byte(src), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	tests := []struct {
		name     string
		args     []string
		wantCode int
		wantKind report.AbortKind
		want     string // in the error of every report
		wantMD   string
	}{
		{"bad scenario file", []string{"run", bad}, exitBadUsage, report.AbortUsage, `unknown field "bogus"`, "## ⚠️ replaycheck: bad input"},
		{"target does not start", []string{"run", "../../scenarios/seed", "--target", missing}, exitCannotRun, report.AbortHarness,
			`command "/nonexistent/litellm" not found`, "## ⚠️ replaycheck: could not run"},
		{"bad baseline file", []string{"run", "../../scenarios/seed", "--baseline", filepath.Join(dir, "nope.yaml")}, exitBadUsage, report.AbortUsage,
			"nope.yaml", "## ⚠️ replaycheck: bad input"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			p := newReportPaths(t)
			code, out, errOut := execute(t, append(tt.args, p.args()...)...)
			if code != tt.wantCode {
				t.Fatalf("exit %d, want %d\n%s%s", code, tt.wantCode, out, errOut)
			}
			page, err := os.ReadFile(p.html)
			if title := "<title>replaycheck: " + strings.TrimPrefix(tt.wantMD, "## ⚠️ replaycheck: ") + "</title>"; err != nil || !strings.Contains(string(page), title) ||
				!strings.Contains(string(page), `<div class="banner">`) || !strings.Contains(html.UnescapeString(string(page)), tt.want) {
				t.Errorf("HTML (%v) lacks %s or the banner with %q", err, title, tt.want)
			}
			_, _, errs := junitErrors(t, p.junit)
			if len(errs) != 1 || !strings.HasPrefix(errs[0], string(tt.wantKind)+": ") || !strings.Contains(errs[0], tt.want) {
				t.Errorf("JUnit errors %q, want one %s error with %q", errs, tt.wantKind, tt.want)
			}
			md, err := os.ReadFile(p.md)
			if err != nil || !strings.HasPrefix(string(md), tt.wantMD) || !strings.Contains(string(md), tt.want) {
				t.Errorf("Markdown (%v) lacks the banner %q or %q:\n%s", err, tt.wantMD, tt.want, md)
			}
			s := readSuite(t, p.json)
			if s.Abort == nil || s.Abort.Kind != tt.wantKind || !strings.Contains(s.Abort.Error, tt.want) {
				t.Errorf("JSON abort %+v, want %s with %q", s.Abort, tt.wantKind, tt.want)
			}
			if s.Run == nil || s.Run.Replaycheck == "" || s.Run.Seed != "replaycheck" {
				t.Errorf("JSON run %+v, want the version and seed", s.Run)
			}
		})
	}
}

// interruptAfter is an Out that cancels ctx, as SIGTERM would, when the
// progress reports the first run done.
type interruptAfter struct {
	mu     sync.Mutex
	b      bytes.Buffer
	cancel context.CancelCauseFunc
}

func (w *interruptAfter) Write(p []byte) (int, error) {
	w.mu.Lock()
	defer w.mu.Unlock()
	if strings.Contains(string(p), "[1/") {
		w.cancel(errors.New("terminated signal received"))
	}
	return w.b.Write(p)
}

// TestInterruptWritesReports: a run interrupted after its first scenario
// writes every report with what ended, the runs cut short (not judged) and
// those never started, says "interrupted" and exits 130.
func TestInterruptWritesReports(t *testing.T) {
	ctx, cancel := context.WithCancelCause(context.Background())
	defer cancel(nil)
	out := &interruptAfter{cancel: cancel}
	p := newReportPaths(t)
	// One run at a time: the first ends, the interrupt comes, the run the
	// pool had handed out meanwhile is cut short, the rest never start.
	err := runRun(ctx, &runOptions{
		Paths: []string{"../../scenarios/seed"}, Targets: []string{"builtin:guarded"}, Parallel: 1, Timeout: time.Minute, Seed: "replaycheck",
		reportFiles: reportFiles{JUnit: p.junit, JSON: p.json, Markdown: p.md, HTML: p.html}, Out: out, ErrOut: out,
	})
	if code := exitCode(err); code != exitInterrupted || !strings.Contains(err.Error(), "interrupted: terminated signal received") {
		t.Fatalf("exit %d (%v), want %d with the signal", code, err, exitInterrupted)
	}
	s := readSuite(t, p.json)
	if s.Abort == nil || s.Abort.Kind != report.AbortInterrupted || s.Abort.Error != "terminated signal received" {
		t.Fatalf("JSON abort %+v, want interrupted by the signal", s.Abort)
	}
	ended, cut, notStarted := len(s.Results), len(s.Abort.CutShort), s.Abort.NotStarted
	if ended < 1 || ended+cut+notStarted != 10 || notStarted == 0 {
		t.Errorf("%d ended, %d cut short, %d not started: want at least 1 ended, some not started, 10 in all", ended, cut, notStarted)
	}
	tests, failures, errs := junitErrors(t, p.junit)
	if tests != ended+cut+1 || failures != 0 || len(errs) != cut+1 || errs[len(errs)-1] != "interrupted: terminated signal received" {
		t.Errorf("JUnit: %d tests, %d failures, errors %q; want %d tests, no failure, %d cut short and the interrupt as errors", tests, failures, errs, ended+cut+1, cut)
	}
	md, err := os.ReadFile(p.md)
	if err != nil || !strings.HasPrefix(string(md), "## ⚠️ replaycheck: interrupted") {
		t.Errorf("Markdown (%v) lacks the interrupted banner:\n%s", err, md)
	}
	page, err := os.ReadFile(p.html)
	if err != nil || !strings.Contains(string(page), "<title>replaycheck: interrupted</title>") || strings.Count(string(page), `<details class="result"`) != ended {
		t.Errorf("HTML (%v) lacks the interrupted title or a section per run that ended (%d)", err, ended)
	}
}

// TestMarkdownStepSummary: --markdown appends to $GITHUB_STEP_SUMMARY, which
// earlier steps wrote to, and replaces any other file.
func TestMarkdownStepSummary(t *testing.T) {
	saved := filepath.Join(t.TempDir(), "saved.json")
	if code, _, errOut := execute(t, "run", "../../scenarios/seed/no-fault-chat.yaml", "--json", saved); code != exitOK {
		t.Fatalf("exit %d\n%s", code, errOut)
	}
	const earlier = "## an earlier step\n"
	tests := []struct {
		name    string
		summary bool // the path is $GITHUB_STEP_SUMMARY
		want    int  // replaycheck headings after two runs
	}{
		{"step summary appended", true, 2},
		{"other file replaced", false, 1},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			md := filepath.Join(t.TempDir(), "summary.md")
			if err := os.WriteFile(md, []byte(earlier), 0o644); err != nil {
				t.Fatal(err)
			}
			env := ""
			if tt.summary {
				env = md
			}
			t.Setenv("GITHUB_STEP_SUMMARY", env)
			for range 2 {
				if code, out, errOut := execute(t, "run", "--recheck", saved, "--markdown", md); code != exitOK {
					t.Fatalf("exit %d\n%s%s", code, out, errOut)
				}
			}
			b, err := os.ReadFile(md)
			if err != nil {
				t.Fatal(err)
			}
			if got := strings.Count(string(b), "## ✅ replaycheck"); got != tt.want {
				t.Errorf("%d summaries in the file, want %d:\n%s", got, tt.want, b)
			}
			if kept := strings.HasPrefix(string(b), earlier); kept != tt.summary {
				t.Errorf("earlier step's summary kept: %v, want %v:\n%s", kept, tt.summary, b)
			}
		})
	}
}

// TestMarkdownStepSummaryCap: appending to a step summary that is nearly
// full keeps the file under GitHub's 1 MiB limit.
func TestMarkdownStepSummaryCap(t *testing.T) {
	md := filepath.Join(t.TempDir(), "summary.md")
	earlier := strings.Repeat("x", report.MarkdownLimit-2000) + "\n"
	if err := os.WriteFile(md, []byte(earlier), 0o644); err != nil {
		t.Fatal(err)
	}
	p := newReportPaths(t)
	if code, out, errOut := execute(t, "run", "../../scenarios/seed", "--target", "builtin:naive", "--json", p.json); code != exitRuleBroken {
		t.Fatalf("exit %d\n%s%s", code, out, errOut)
	}
	t.Setenv("GITHUB_STEP_SUMMARY", md)
	if code, out, errOut := execute(t, "run", "--recheck", p.json, "--markdown", md); code != exitRuleBroken {
		t.Fatalf("exit %d\n%s%s", code, out, errOut)
	}
	b, err := os.ReadFile(md)
	if err != nil {
		t.Fatal(err)
	}
	if len(b) > 1<<20 || !strings.Contains(string(b), "in the JSON/JUnit artifact") {
		t.Errorf("step summary is %d bytes (limit %d), or counts nothing left out:\n%s", len(b), 1<<20, b[len(earlier):])
	}
}

// TestReportMerge: the JSON reports of two shards merge into the report of
// the whole run: totals, verdicts, JUnit counts; a scenario in two reports
// and --recheck of two files are refused.
func TestReportMerge(t *testing.T) {
	dir := t.TempDir()
	var shards []string
	for _, shard := range []string{"1/2", "2/2"} {
		js := filepath.Join(dir, "shard-"+shard[:1]+".json")
		code, out, errOut := execute(t, "run", "../../scenarios/seed", "--target", "builtin:naive", "--shard", shard, "--json", js)
		if code != exitRuleBroken && code != exitOK {
			t.Fatalf("shard %s: exit %d\n%s%s", shard, code, out, errOut)
		}
		shards = append(shards, js)
	}
	p := newReportPaths(t)
	code, out, errOut := execute(t, append([]string{"report", "merge", shards[0], shards[1]}, p.args()...)...)
	if code != exitRuleBroken || !strings.Contains(out, "10 scenarios on builtin:naive: 6 pass, 4 fail, 0 unknown") {
		t.Fatalf("merge: exit %d, want 1 with the whole run's totals\n%s%s", code, out, errOut)
	}
	if tests, failures, errs := junitErrors(t, p.junit); tests != 10 || failures != 4 || len(errs) != 0 {
		t.Errorf("merged JUnit: %d tests, %d failures, errors %q; want 10, 4, none", tests, failures, errs)
	}
	s := readSuite(t, p.json)
	if s.Run == nil || s.Run.Shard != "1/2, 2/2" {
		t.Errorf("merged run %+v, want shards 1/2, 2/2", s.Run)
	}
	if md, err := os.ReadFile(p.md); err != nil || !strings.HasPrefix(string(md), "## ❌ replaycheck") {
		t.Errorf("merged Markdown (%v):\n%s", err, md)
	}
	// The merged HTML draws every shard's histories.
	if page, err := os.ReadFile(p.html); err != nil || strings.Count(string(page), `<svg class="seq"`) != 10 || strings.Count(string(page), `<details class="result" id="r`) != 10 {
		t.Errorf("merged HTML (%v): want 10 sections, each with its diagram", err)
	}
	// The merged report re-checks to the same verdicts.
	if code, out, _ := execute(t, "run", "--recheck", p.json); code != exitRuleBroken || !strings.Contains(out, "6 pass, 4 fail") {
		t.Errorf("recheck of the merged report: exit %d\n%s", code, out)
	}

	// An explore sweep's shards, their JSON on stdout (nothing else there),
	// and a run's empty shard.
	var sweeps []string
	for _, shard := range []string{"1/2", "2/2"} {
		code, out, errOut := execute(t, "explore", "../../scenarios/seed/no-fault-chat.yaml", "--target", "builtin:naive", "--kinds", "500", "--shard", shard, "--json", "-")
		if code != exitRuleBroken && code != exitOK || !json.Valid([]byte(out)) || !strings.Contains(errOut, "explore on builtin:naive") {
			t.Fatalf("explore --shard %s --json -: exit %d, stdout not the JSON alone\nstdout:\n%s\nstderr:\n%s", shard, code, out, errOut)
		}
		js := filepath.Join(dir, "explore-"+shard[:1]+".json")
		if err := os.WriteFile(js, []byte(out), 0o644); err != nil {
			t.Fatal(err)
		}
		sweeps = append(sweeps, js)
	}
	empty := filepath.Join(dir, "empty.json")
	if code, out, errOut := execute(t, "run", "../../scenarios/seed", "--shard", "99/100", "--json", empty); code != exitOK {
		t.Fatalf("empty shard: exit %d\n%s%s", code, out, errOut)
	}

	bad := []struct {
		name string
		args []string
		want string
	}{
		{"explore shards", []string{"report", "merge", sweeps[0], sweeps[1]}, sweeps[0] + ": reading JSON report: an explore report (explore --json), not a run report"},
		{"recheck of an explore report", []string{"run", "--recheck", sweeps[0]}, "an explore report"},
		{"empty shards only", []string{"report", "merge", empty, empty}, "no result in 2 reports: nothing to merge"},
		{"a scenario in two reports", []string{"report", "merge", shards[0], shards[1], shards[0]}, "is in both " + shards[0] + " and " + shards[0]},
		{"no such report", []string{"report", "merge", filepath.Join(dir, "nope.json")}, "nope.json"},
		{"a matrix's --out", []string{"report", "merge", shards[0], shards[1], "--out", dir}, "--out takes a matrix's reproductions"},
		{"no report", []string{"report", "merge"}, "requires at least 1 arg"},
		{"recheck of two files", []string{"run", "--recheck", shards[0], "--recheck", shards[1]}, "--recheck takes one file, got 2"},
		{"baseline recheck of two files", []string{"baseline", "--recheck", shards[0], "--recheck", shards[1]}, "--recheck takes one file, got 2"},
	}
	for _, tt := range bad {
		t.Run(tt.name, func(t *testing.T) {
			code, out, errOut := execute(t, tt.args...)
			if code != exitBadUsage || !strings.Contains(errOut, tt.want) {
				t.Errorf("exit %d, want %d with %q\n%s%s", code, exitBadUsage, tt.want, out, errOut)
			}
		})
	}
}
