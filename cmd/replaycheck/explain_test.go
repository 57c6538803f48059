package main

import (
	"regexp"
	"strings"
	"testing"
)

// TestRunVerboseExplainsFailure runs seed 000 (an app's /v1/messages request
// the gateway sends upstream as /v1/responses, every follow-up failing with
// a 500) and a passing scenario on builtin:naive with -v: the failure's
// timeline numbers the attempts, ties each tool call to the model answer
// and call id that asked for it, marks the replays and the faults, explains
// the translation and shows the app's answer; the pass is one line. -vv
// adds the pass's timeline.
func TestRunVerboseExplainsFailure(t *testing.T) {
	args := []string{"run", "../../scenarios/seed/fault-on-messages.yaml", "../../scenarios/seed/no-fault-messages.yaml", "--target", "builtin:naive"}
	code, out, errOut := execute(t, append(args, "-v")...)
	if code != exitRuleBroken {
		t.Fatalf("exit %d, want %d\n%s\n%s", code, exitRuleBroken, out, errOut)
	}
	_, failure, ok := strings.Cut(out, "FAIL seed messages fault_on on builtin:naive")
	if !ok {
		t.Fatalf("no failure details:\n%s", out)
	}
	failure, _, _ = strings.Cut(failure, "upstream (sort | uniq -c):")
	lines := strings.Split(failure, "\n")
	count := func(re string) int {
		n, rx := 0, regexp.MustCompile(re)
		for _, l := range lines {
			if rx.MatchString(l) {
				n++
			}
		}
		return n
	}
	for _, tt := range []struct {
		re   string
		want int
	}{
		{`^\s+\+\S+\s+app → target\s+POST /v1/messages$`, 1},
		{`target → model\s+attempt [123]: POST /v1/responses initial$`, 3},
		{`target → model\s+attempt [123]: POST /v1/responses follow-up with the result of call_\w+: "recorded alpha-\w+"$`, 3},
		{`↳ translated: the app sent Anthropic Messages \(/v1/messages\); the target asked the model in OpenAI Responses \(/v1/responses\)$`, 1},
		{`model → target\s+HTTP 200, asks for \S*commit_write call_\w+ \[answer [135]\]$`, 3},
		{`model → target\s+FAULT follow_up respond 500 always: HTTP 500 \[answer [246]\]$`, 3},
		{`target → ledger\s+tools/call commit_write \[call_\w+ from answer 1, attempt 1\]$`, 1},
		{`target → ledger\s+REPLAY #2 \(first ran at \+\S+\): tools/call commit_write \[call_\w+ from answer 3, attempt 2\]$`, 1},
		{`target → ledger\s+REPLAY #3 \(first ran at \+\S+\): tools/call commit_write \[call_\w+ from answer 5, attempt 3\]$`, 1},
		{`REPLAY`, 2},
		{`target → app\s+HTTP 500$`, 1},
		{`↳ body: \{.*injected follow-up failure.*\(\d+ more characters\)$`, 1},
	} {
		if got := count(tt.re); got != tt.want {
			t.Errorf("%d lines match %s, want %d:\n%s", got, tt.re, tt.want, failure)
		}
	}
	// Each tool call's id is the one an earlier model answer gave.
	callID := regexp.MustCompile(`tools/call commit_write \[(call_\w+) from`)
	for i, l := range lines {
		if m := callID.FindStringSubmatch(l); m != nil && !strings.Contains(strings.Join(lines[:i], "\n"), "commit_write "+m[1]+" [answer") {
			t.Errorf("tool call %s: no earlier answer asked for it:\n%s", m[1], failure)
		}
	}
	if n := strings.Count(out, "timeline:"); n != 1 {
		t.Errorf("-v: %d timelines, want only the failure's", n)
	}
	if !regexp.MustCompile(`(?m)^PASS seed messages no fault on builtin:naive: \d+ checks held; writes 1, upstream 2, MCP calls 1 in \S+$`).MatchString(out) {
		t.Errorf("-v: no one-line summary of the pass:\n%s", out)
	}

	_, out, _ = execute(t, append(args, "-vv")...)
	if n := strings.Count(out, "timeline:"); n != 2 {
		t.Errorf("-vv: %d timelines, want both scenarios'", n)
	}
}
