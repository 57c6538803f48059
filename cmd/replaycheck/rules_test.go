package main

import (
	"encoding/json"
	"os"
	"strings"
	"testing"

	"github.com/replaycheck/replaycheck/internal/harness/rules"
	"github.com/replaycheck/replaycheck/internal/harness/scenario"
)

// TestRulesCatalogue: rules lists the catalogue one line a rule, name and
// summary, and points to rules NAME; it does not print the rules' prose.
func TestRulesCatalogue(t *testing.T) {
	code, out, errOut := execute(t, "rules")
	if code != exitOK {
		t.Fatalf("exit %d\n%s", code, errOut)
	}
	for _, r := range rules.All() {
		if !strings.Contains(out, "\n  "+r.Name+" ") || !strings.Contains(out, " "+r.Summary+"\n") {
			t.Errorf("rules lacks the line of %s:\n%s", r.Name, out)
		}
		if strings.Contains(out, r.Doc) {
			t.Errorf("rules prints the doc of %s; only rules NAME should", r.Name)
		}
	}
	if n, most := strings.Count(out, "\n"), len(rules.All())+4; n > most {
		t.Errorf("rules prints %d lines, want at most %d:\n%s", n, most, out)
	}
	if !strings.Contains(out, "'replaycheck rules NAME' prints one rule") {
		t.Errorf("rules does not point to rules NAME:\n%s", out)
	}
}

// TestRulesName: rules NAME prints one rule: what it requires, when it
// cannot judge, its seed case, its fix and an example that loads as a
// scenario.
func TestRulesName(t *testing.T) {
	r, _ := rules.Lookup("no-replay-after-dispatch")
	code, out, errOut := execute(t, "rules", r.Name)
	if code != exitOK {
		t.Fatalf("exit %d\n%s", code, errOut)
	}
	for _, want := range []string{
		r.Name + ": " + r.Summary + "\n",
		"\nrequires:\n  A tool call that reached the MCP server is executed at most once",
		"\ncannot judge (the verdict is unknown, never a pass):\n  Cannot judge when no tool call reached the server.\n",
		"\nseed:\n  000 (LiteLLM):",
		"\nfix:\n  Tag errors raised after a tool call was dispatched and neither retry nor\n  fall back on them; surface the error",
	} {
		if !strings.Contains(out, want) {
			t.Errorf("rules %s lacks %q:\n%s", r.Name, want, out)
		}
	}
	if strings.Contains(out, "retry-before-dispatch") {
		t.Errorf("rules %s prints another rule:\n%s", r.Name, out)
	}
	_, example, ok := strings.Cut(out, "\nexample")
	_, example, _ = strings.Cut(example, "\n")
	if ss, errs := scenario.Parse("printed example", []byte(example)); !ok || len(errs) > 0 || len(ss) != 1 || ss[0].Expect.Rules[0] != r.Name {
		t.Errorf("the printed example does not load as a scenario of %s (%v):\n%s", r.Name, errs, example)
	}
}

// TestRulesUnknownName: an unknown NAME is a usage error that lists the
// rules, with the names it may have meant.
func TestRulesUnknownName(t *testing.T) {
	tests := []struct {
		name, arg, mean string
	}{
		{"close to two", "no-replay", "did you mean no-replay-after-dispatch or no-replay-ambiguous-mcp?"},
		{"a typo", "no-splcie", "did you mean no-splice?"},
		{"like none", "retry-everything", ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			code, out, errOut := execute(t, "rules", tt.arg)
			if code != exitBadUsage || out != "" {
				t.Errorf("exit %d, want 2, and stdout %q", code, out)
			}
			for _, want := range []string{`unknown rule "` + tt.arg + `"`, "the rules: " + strings.Join(rules.Names(), ", ")} {
				if !strings.Contains(errOut, want) {
					t.Errorf("stderr lacks %q:\n%s", want, errOut)
				}
			}
			if got := strings.Contains(errOut, "did you mean"); got != (tt.mean != "") || !strings.Contains(errOut, tt.mean) {
				t.Errorf("stderr, want %q:\n%s", tt.mean, errOut)
			}
		})
	}
	if code, _, _ := execute(t, "rules", "no-splice", "no-replay-after-dispatch"); code != exitBadUsage {
		t.Errorf("two names: exit %d, want 2", code)
	}
}

// TestRulesMarkdownAndJSON: --markdown prints rules.md (or one rule's
// section of it) and --json the catalogue (or one rule) with each fix and
// example.
func TestRulesMarkdownAndJSON(t *testing.T) {
	_, md, _ := execute(t, "rules", "--markdown")
	file, err := os.ReadFile("../../internal/harness/rules/rules.md")
	if err != nil || md != string(file) {
		t.Errorf("rules --markdown differs from internal/harness/rules/rules.md (%v)", err)
	}
	r, _ := rules.Lookup("no-splice")
	if _, md, _ := execute(t, "rules", "no-splice", "--markdown"); md != r.Markdown() || !strings.Contains(string(file), md) {
		t.Errorf("rules no-splice --markdown is not its section of rules.md:\n%s", md)
	}

	code, out, _ := execute(t, "rules", "--json")
	if code != exitOK {
		t.Fatalf("exit %d", code)
	}
	var got []ruleJSON
	if err := json.Unmarshal([]byte(out), &got); err != nil {
		t.Fatalf("not JSON: %v", err)
	}
	if len(got) != len(rules.All()) {
		t.Fatalf("%d rules, want %d", len(got), len(rules.All()))
	}
	for i, r := range rules.All() {
		if want := (ruleJSON{r.Name, r.Summary, r.Doc, r.Seed, r.Fix, r.Example}); got[i] != want {
			t.Errorf("rule %d: %+v, want %+v", i, got[i], want)
		}
	}
	var one ruleJSON
	if _, out, _ := execute(t, "rules", "no-splice", "--json"); json.Unmarshal([]byte(out), &one) != nil || one.Name != "no-splice" || one.Fix != r.Fix {
		t.Errorf("rules no-splice --json:\n%s", out)
	}
	if code, _, _ := execute(t, "rules", "--json", "--markdown"); code != exitBadUsage {
		t.Errorf("--json with --markdown: exit %d, want 2", code)
	}
}
