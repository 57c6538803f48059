package main

import (
	"bytes"
	"context"
	"encoding/json"
	"encoding/xml"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	"github.com/spf13/cobra"

	"github.com/replaycheck/replaycheck/internal/harness/explore"
	"github.com/replaycheck/replaycheck/internal/harness/rules"
	"github.com/replaycheck/replaycheck/internal/harness/scenario"
)

// TestExploreNaiveWritesFindings explores the seed's no-fault chat scenario on
// the naive gateway: exit 1, the duplicate write found and written as a
// scenario that loads, and every report file (the HTML one with a sequence
// diagram per cell, failing cells first, the replay marked).
func TestExploreNaiveWritesFindings(t *testing.T) {
	dir := t.TempDir()
	found, js, junit, md := filepath.Join(dir, "found"), filepath.Join(dir, "explore.json"), filepath.Join(dir, "explore.xml"), filepath.Join(dir, "explore.md")
	page := filepath.Join(dir, "explore.html")
	code, out, errOut := execute(t, "explore", "../../scenarios/seed/no-fault-chat.yaml", "--target", "builtin:naive",
		"--kinds", "500,mcp-drop", "--out", found, "--json", js, "--junit", junit, "--markdown", md, "--html", page)
	if code != exitRuleBroken {
		t.Fatalf("exit %d, want 1\n%s%s", code, out, errOut)
	}
	for _, want := range []string{
		"2 findings, one per cause, from 4 failing cells; rules broken: no-replay-after-dispatch\n",
		"  1. no-replay-after-dispatch   model request at follow_up: 500 (2 cells)\n",
		"  2. no-replay-after-dispatch   drop_after_execute at tools/call: mcp-drop (2 cells)\n",
		"1. no-replay-after-dispatch: model request fault at follow_up\n   reproduction: seed chat no fault: 500 at follow_up chat #1 (once)",
		"no-replay-after-dispatch: expected at most 1 execution for 1 logical tool call, observed 2 executions",
		"reproduction: seed chat no fault: mcp-drop at tools/call commit_write #1 (once)",
		"written to " + found,
		"   fix: Tag errors raised after a tool call was dispatched and neither retry nor fall back on them; surface the error",
		"More: replaycheck rules no-replay-after-dispatch\n",
		"\nnext: once the target is fixed, run the reproductions on it; each passes where its bug is gone:\n  replaycheck run " + found + " --target builtin:naive\n",
	} {
		if !strings.Contains(out, want) {
			t.Errorf("output lacks %q:\n%s", want, out)
		}
	}
	files, _ := filepath.Glob(filepath.Join(found, "*.yaml"))
	if len(files) == 0 {
		t.Fatalf("no finding written to %s", found)
	}
	if _, err := scenario.Load(files...); err != nil {
		t.Errorf("written findings do not load: %v", err)
	}
	if y, err := os.ReadFile(files[0]); err != nil || !strings.Contains(string(y), "; fix: Tag errors raised after a tool call was dispatched") {
		t.Errorf("the written finding does not say what a fix looks like (err %v):\n%s", err, y)
	}
	b, err := os.ReadFile(js)
	if err != nil {
		t.Fatal(err)
	}
	var rep explore.Report
	if err := json.Unmarshal(b, &rep); err != nil {
		t.Fatalf("JSON report: %v", err)
	}
	if len(rep.Cells) == 0 || len(rep.Findings) == 0 || len(rep.Bases) != 1 || len(rep.Bases[0].Points) == 0 {
		t.Errorf("JSON report: %d cells, %d findings, bases %v", len(rep.Cells), len(rep.Findings), rep.Bases)
	}
	if r, _ := rules.Lookup("no-replay-after-dispatch"); len(rep.Findings) > 0 && rep.Findings[0].Fix != r.Fix {
		t.Errorf("JSON report: the first finding's fix is %q, want its rule's", rep.Findings[0].Fix)
	}
	x, err := os.ReadFile(junit)
	if err != nil {
		t.Fatal(err)
	}
	var suites struct {
		Tests int `xml:"tests,attr"`
	}
	if err := xml.Unmarshal(x, &suites); err != nil || suites.Tests != len(rep.Cells) {
		t.Errorf("JUnit: %d tests, want %d (err %v)", suites.Tests, len(rep.Cells), err)
	}
	m, err := os.ReadFile(md)
	for _, want := range []string{"replaycheck explore", "| Rule broken | Fault family | Step |",
		"What a fix looks like:\n\n- `no-replay-after-dispatch`: Tag errors raised after",
		"```sh\nreplaycheck run " + found + " --target builtin:naive\n```"} {
		if err != nil || !strings.Contains(string(m), want) {
			t.Errorf("Markdown report lacks %q (err %v):\n%s", want, err, m)
		}
	}
	h, err := os.ReadFile(page)
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(string(h), `<pre class="preface">2 findings, one per cause`) {
		t.Errorf("HTML report: no findings above the cells:\n%.3000s", h)
	}
	// One verdict per cell: the HTML's summary rows tally as the JSON's cells.
	summary, _, _ := strings.Cut(string(h)[strings.Index(string(h), `<table class="summary">`):], "</table>")
	for _, v := range []rules.Status{rules.Pass, rules.Fail, rules.Unknown} {
		want := 0
		for _, c := range rep.Cells {
			if c.Verdict == v {
				want++
			}
		}
		if got := strings.Count(summary, fmt.Sprintf(`<span class="verdict %s">%s</span>`, v, v)); got != want {
			t.Errorf("HTML report: %d cells %s, the JSON report %d", got, v, want)
		}
	}
	if n := strings.Count(string(h), `<svg class="seq"`); n != len(rep.Cells) {
		t.Errorf("HTML report: %d diagrams, want one per cell (%d)", n, len(rep.Cells))
	}
	first, _, _ := strings.Cut(string(h)[strings.Index(string(h), `<details class="result"`):], "</details>")
	if !strings.Contains(first, `<span class="verdict fail">fail</span>`) || !strings.Contains(first, "REPLAY #2") {
		t.Errorf("HTML report: the first cell is not a failure with its replay marked:\n%.3000s", first)
	}
}

// TestExploreNextStepIsOnePasteAway: without --out, explore ends with the
// command that writes the findings; that command, pasted, writes them and
// ends with the command that runs them on the target, which fails on it
// and passes on one without the bug.
func TestExploreNextStepIsOnePasteAway(t *testing.T) {
	base, err := filepath.Abs("../../scenarios/seed/no-fault-chat.yaml")
	if err != nil {
		t.Fatal(err)
	}
	t.Chdir(t.TempDir())
	code, out, errOut := execute(t, "explore", base, "--target", "builtin:naive", "--kinds", "500")
	next := "\nnext: --out DIR writes each finding's reproduction as a scenario file, a regression test that fails here and passes once the bug is fixed:\n" +
		"  replaycheck explore " + base + " --kinds 500 --target builtin:naive --out found\n"
	if code != exitRuleBroken || !strings.HasSuffix(out, next) {
		t.Fatalf("exit %d, want 1 and the output to end with %q:\n%s%s", code, next, out, errOut)
	}
	if _, err := os.Stat("found"); err == nil {
		t.Errorf("explore without --out wrote found/")
	}
	code, out, errOut = execute(t, strings.Fields(lastLine(out))[1:]...)
	run := "  replaycheck run found --target builtin:naive"
	if code != exitRuleBroken || lastLine(out) != run {
		t.Fatalf("the pasted command: exit %d, want 1 and the output to end with %q:\n%s%s", code, run, out, errOut)
	}
	if strings.Contains(out, "next: --out DIR") {
		t.Errorf("explore --out still says to give --out:\n%s", out)
	}
	args := strings.Fields(lastLine(out))[1:]
	if code, out, errOut := execute(t, args...); code != exitRuleBroken {
		t.Errorf("the reproductions on builtin:naive: exit %d, want 1\n%s%s", code, out, errOut)
	}
	args[len(args)-1] = "builtin:guarded"
	if code, out, errOut := execute(t, args...); code != exitOK {
		t.Errorf("the reproductions on builtin:guarded: exit %d, want 0\n%s%s", code, out, errOut)
	}
}

func TestNextStep(t *testing.T) {
	confirmed, flaky, written := explore.Finding{}, explore.Finding{Flaky: true}, explore.Finding{File: "found/a.yaml"}
	tests := []struct {
		name     string
		command  string
		out      string
		findings []explore.Finding
		want     string
	}{
		{"no command line", "", "", []explore.Finding{confirmed}, ""},
		{"no --out", "replaycheck explore", "", []explore.Finding{flaky, confirmed}, "replaycheck explore --out found"},
		{"no --out, every finding flaky", "replaycheck explore", "", []explore.Finding{flaky}, ""},
		{"--out wrote a finding", "replaycheck explore", "my found", []explore.Finding{flaky, written}, "replaycheck run 'my found' --target builtin:naive"},
		{"--out wrote none", "replaycheck explore", "found", []explore.Finding{flaky}, ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got := ""
			if n := nextStep(&exploreOptions{Command: tt.command, OutDir: tt.out, Target: "builtin:naive"}, &explore.Report{Findings: tt.findings}); n != nil {
				got = n.Command
			}
			if got != tt.want {
				t.Errorf("next step %q, want %q", got, tt.want)
			}
		})
	}
}

// lastLine is the last line of s, without its newline.
func lastLine(s string) string {
	lines := strings.Split(strings.TrimSuffix(s, "\n"), "\n")
	return lines[len(lines)-1]
}

func TestCommandLine(t *testing.T) {
	tests := []struct {
		name string
		args []string
		want string
	}{
		{"args, then the flags given", []string{"base.yaml", "--target", "builtin:naive", "--depth", "2"}, "replaycheck explore base.yaml --depth 2 --target builtin:naive"},
		{"a slice and a bool", []string{"--kinds", "500", "--kinds", "drop", "--all"}, "replaycheck explore --all --kinds 500,drop"},
		{"words a shell would split", []string{"my base.yaml", "--points", "follow_up|initial", "--seed", "it's"}, `replaycheck explore 'my base.yaml' --points 'follow_up|initial' --seed 'it'\''s'`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var got string
			root := newRootCmd(strings.NewReader(""), io.Discard, io.Discard)
			cmd, _, err := root.Find([]string{"explore"})
			if err != nil {
				t.Fatal(err)
			}
			cmd.RunE = func(cmd *cobra.Command, args []string) error {
				got = commandLine(cmd, args)
				return nil
			}
			root.SetArgs(append([]string{"explore"}, tt.args...))
			if err := root.Execute(); err != nil {
				t.Fatal(err)
			}
			if got != tt.want {
				t.Errorf("commandLine = %s, want %s", got, tt.want)
			}
		})
	}
}

// TestExploreFindingsCannotBeWritten: an --out that cannot be written is said
// and joined to the finding (exit 1), and the table and the other reports
// are still written.
func TestExploreFindingsCannotBeWritten(t *testing.T) {
	dir := t.TempDir()
	notDir, js := filepath.Join(dir, "file"), filepath.Join(dir, "explore.json")
	if err := os.WriteFile(notDir, nil, 0o644); err != nil {
		t.Fatal(err)
	}
	var out, errOut bytes.Buffer
	root := newRootCmd(strings.NewReader(""), &out, &errOut)
	root.SetArgs([]string{"explore", "../../scenarios/seed/no-fault-chat.yaml", "--target", "builtin:naive",
		"--kinds", "500", "--out", filepath.Join(notDir, "found"), "--json", js})
	err := root.ExecuteContext(context.Background())
	if code := exitCode(err); code != exitRuleBroken || err == nil || !strings.Contains(err.Error(), "writing findings") {
		t.Errorf("exit %d, want 1 and the write error; error %v\nstderr:\n%s", code, err, errOut.String())
	}
	if !strings.Contains(out.String(), "reproduction: seed chat no fault: 500 at follow_up") {
		t.Errorf("the table lacks the finding:\n%s", out.String())
	}
	if _, err := os.Stat(js); err != nil {
		t.Errorf("the JSON report was not written: %v", err)
	}
}

func TestExploreGuardedFingerprint(t *testing.T) {
	code, out, errOut := execute(t, "explore", "../../scenarios/seed/no-fault-chat.yaml", "--fingerprint", "--kinds", "400,500")
	if code != exitOK {
		t.Fatalf("exit %d, want 0\n%s%s", code, out, errOut)
	}
	for _, want := range []string{"RETRY POLICY", "ATTEMPTS", "0 findings"} {
		if !strings.Contains(out, want) {
			t.Errorf("output lacks %q:\n%s", want, out)
		}
	}
}

func TestExploreBadInput(t *testing.T) {
	tests := []struct {
		name string
		args []string
		want string
	}{
		{"depth", []string{"--depth", "3"}, "--depth 3: want 1 or 2"},
		{"kind", []string{"--kinds", "500,teapot"}, `fault kind "teapot": want one of 500`},
		{"points", []string{"--points", "("}, "--points"},
		{"shard", []string{"--shard", "4/3"}, "--shard"},
		{"confirm", []string{"--confirm", "0"}, "--confirm 0: want 1 or more"},
		{"out on stdout", []string{"--out", "-"}, "--out -: want a directory"},
		{"dribble", []string{"--dribble", "0s"}, "--dribble want positive durations"},
		{"base", []string{"no-such-base.yaml"}, "no-such-base.yaml"},
		{"client base on a gateway", []string{"../../scenarios/clients/no-fault.yaml"}, "expects a client"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			code, out, errOut := execute(t, append([]string{"explore"}, tt.args...)...)
			if code != exitBadUsage {
				t.Errorf("exit %d, want 2\n%s%s", code, out, errOut)
			}
			if !strings.Contains(errOut, tt.want) {
				t.Errorf("error lacks %q: %s", tt.want, errOut)
			}
		})
	}
}

// TestExploreBaseFailingClean: a base that fails without any fault ends the
// sweep with exit 1, naming the base and saying no replay rule broke, and a
// proxy that does not start ends it with exit 3, as run says; either way
// the JSON, Markdown and JUnit reports are written and say why.
func TestExploreBaseFailingClean(t *testing.T) {
	dir := t.TempDir()
	base := filepath.Join(dir, "base.yaml")
	dead := filepath.Join(dir, "dead.yaml")
	for name, src := range map[string]string{
		base: "name: wants two writes\nrequest: {endpoint: chat}\nexpect: {writes: 2}\n",
		dead: "kind: proxy\nname: dead\nurl: http://127.0.0.1:{{port}}\nstart: {command: [sh, -c, 'echo bye; exit 4']}\n",
	} {
		if err := os.WriteFile(name, []byte(src), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	tests := []struct {
		name     string
		args     []string
		wantCode int
		want     []string // in the output
		wantMD   []string
	}{
		{"fails clean", []string{base}, exitRuleBroken,
			[]string{`base scenario "wants two writes" fails without any fault`},
			[]string{"## ❌ replaycheck explore", `base "wants two writes" fails without any fault; nothing was swept`, "`writes`: expected 2 writes, observed 1"}},
		{"target does not start", []string{filepath.Join("..", "..", "scenarios", "seed", "no-fault-chat.yaml"), "--target", dead}, exitCannotRun,
			[]string{`the target could not start for base scenario "seed chat no fault"`, "exited with code 4"},
			[]string{"## ⚠️ replaycheck explore", "could not run: the target did not start", "exited with code 4"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			out := t.TempDir()
			js, md, junit := filepath.Join(out, "x.json"), filepath.Join(out, "x.md"), filepath.Join(out, "x.xml")
			code, stdout, errOut := execute(t, append([]string{"explore", "--json", js, "--markdown", md, "--junit", junit}, tt.args...)...)
			if code != tt.wantCode {
				t.Fatalf("exit %d, want %d\n%s%s", code, tt.wantCode, stdout, errOut)
			}
			for _, w := range tt.want {
				if !strings.Contains(stdout+errOut, w) {
					t.Errorf("output lacks %q:\n%s%s", w, stdout, errOut)
				}
			}
			b, err := os.ReadFile(md)
			if err != nil {
				t.Fatalf("no Markdown report: %v", err)
			}
			for _, w := range tt.wantMD {
				if !strings.Contains(string(b), w) {
					t.Errorf("Markdown lacks %q:\n%s", w, b)
				}
			}
			if b, err := os.ReadFile(js); err != nil || !strings.Contains(string(b), `"base_failed"`) {
				t.Errorf("JSON report (%v) lacks base_failed", err)
			}
			if b, err := os.ReadFile(junit); err != nil || !strings.Contains(string(b), "<failure") {
				t.Errorf("JUnit report (%v) lacks the base's failure:\n%s", err, b)
			}
		})
	}
}

// TestExploreFingerprintDiff saves the guarded gateway's fingerprint with
// --json and diffs the naive gateway's against it: the 400 and the 500 with
// x-should-retry: false retried, and the tool run again; diffed against itself the policy is unchanged. A --diff
// without --fingerprint, or of a file with no fingerprint, is bad usage.
func TestExploreFingerprintDiff(t *testing.T) {
	dir := t.TempDir()
	saved := filepath.Join(dir, "policy-v1.json")
	// Statuses the guarded gateway does not retry: no jittered gaps to move
	// on a busy machine.
	args := []string{"explore", "../../scenarios/seed/no-fault-chat.yaml", "--fingerprint", "--kinds", "400,500-no-retry"}
	if code, out, errOut := execute(t, append(args, "--json", saved)...); code != exitOK {
		t.Fatalf("saving the fingerprint: exit %d\n%s%s", code, out, errOut)
	}
	code, out, errOut := execute(t, append(args, "--target", "builtin:naive", "--diff", saved)...)
	if code != exitRuleBroken {
		t.Fatalf("exit %d, want 1 (the naive gateway's findings)\n%s%s", code, out, errOut)
	}
	for _, want := range []string{
		"RETRY POLICY CHANGED against " + saved + ": 4 of 4 rows",
		"│ seed chat no fault │ initial chat   │ 400                   │ attempts  │ 1      │ 3     │",
		"│ seed chat no fault │ follow_up chat │ 400                   │ tool runs │ 1      │ 3     │",
		"│ seed chat no fault │ follow_up chat │ 500-no-retry          │ attempts  │ 1      │ 3     │",
	} {
		if !strings.Contains(out, want) {
			t.Errorf("output lacks %q:\n%s", want, out)
		}
	}
	if code, out, errOut := execute(t, append(args, "--diff", saved)...); code != exitOK || !strings.Contains(out, "RETRY POLICY UNCHANGED against "+saved+" (4 rows)") {
		t.Errorf("guarded against itself: exit %d\n%s%s", code, out, errOut)
	}
	empty := filepath.Join(dir, "sweep.json")
	if code, out, errOut := execute(t, "explore", "../../scenarios/seed/no-fault-chat.yaml", "--kinds", "400", "--json", empty); code != exitOK {
		t.Fatalf("exit %d\n%s%s", code, out, errOut)
	}
	for _, tt := range []struct {
		args []string
		want string
	}{
		{[]string{"--diff", saved}, "--diff compares retry-policy fingerprints: it needs --fingerprint"},
		{[]string{"--fingerprint", "--diff", empty}, "the report holds no fingerprint"},
		{[]string{"--fingerprint", "--diff", filepath.Join(dir, "none.json")}, "--diff: open"},
	} {
		code, out, errOut := execute(t, append([]string{"explore", "../../scenarios/seed/no-fault-chat.yaml"}, tt.args...)...)
		if code != exitBadUsage || !strings.Contains(errOut, tt.want) {
			t.Errorf("%v: exit %d, want 2 and %q\n%s%s", tt.args, code, tt.want, out, errOut)
		}
	}
}

// TestExploreProgressLines: with --progress, where stderr is not a
// terminal, each finished run of a phase is a line with the runs done of the
// total and the time left, and the phase's end a line of its own; without
// it, only the phases' ends.
func TestExploreProgressLines(t *testing.T) {
	args := []string{"explore", "../../scenarios/seed/no-fault-chat.yaml", "--kinds", "400,500", "--target", "builtin:guarded"}
	_, _, quiet := execute(t, args...)
	code, out, errOut := execute(t, append(args, "--progress")...)
	if code != exitOK {
		t.Fatalf("exit %d\n%s%s", code, out, errOut)
	}
	perRun := regexp.MustCompile(`(?m)^explore sweep: [1-7]/8 runs, 0 failing, \d+s, about \d+s left$`)
	if n := len(perRun.FindAllString(errOut, -1)); n != 7 {
		t.Errorf("%d lines of runs done with the time left, want 7 (8 runs, the last one ends the phase):\n%s", n, errOut)
	}
	if !strings.Contains(errOut, "explore sweep: 8 runs, 0 failing, in ") {
		t.Errorf("no line ends the sweep phase:\n%s", errOut)
	}
	if perRun.MatchString(quiet) {
		t.Errorf("lines per run without --progress:\n%s", quiet)
	}
}
