package main

import (
	"encoding/json"
	"strings"
	"testing"

	"github.com/replaycheck/replaycheck/harness/rules"
)

func TestListJSON(t *testing.T) {
	code, out, errOut := execute(t, "list", "../../scenarios", "--tag", "bug:mcp-resend-on-disconnect", "--json")
	if code != exitOK {
		t.Fatalf("exit %d\n%s", code, errOut)
	}
	var got []listedScenario
	if err := json.Unmarshal([]byte(out), &got); err != nil {
		t.Fatalf("not JSON: %v\n%s", err, out)
	}
	if len(got) == 0 {
		t.Fatal("no scenario listed")
	}
	for _, s := range got {
		if s.Name == "" || !strings.HasPrefix(s.File, "../../scenarios/mcp/") || s.Line < 1 || !s.OwnTarget || len(s.Rules) == 0 {
			t.Errorf("listed %+v", s)
		}
	}
	code, out, _ = execute(t, "list", "../../scenarios", "--tag", "no-such-tag", "--json")
	if code != exitOK || strings.TrimSpace(out) != "[]" {
		t.Errorf("an empty selection: exit %d, %q, want []", code, out)
	}
}

func TestRulesJSON(t *testing.T) {
	code, out, _ := execute(t, "rules", "--json")
	if code != exitOK {
		t.Fatalf("exit %d", code)
	}
	var got []struct{ Name, Doc, Seed string }
	if err := json.Unmarshal([]byte(out), &got); err != nil {
		t.Fatalf("not JSON: %v", err)
	}
	if len(got) != len(rules.All()) {
		t.Fatalf("%d rules, want %d", len(got), len(rules.All()))
	}
	for i, r := range rules.All() {
		if got[i].Name != r.Name || got[i].Doc != r.Doc || got[i].Seed != r.Seed {
			t.Errorf("rule %d: %+v, want %s", i, got[i], r.Name)
		}
	}
	if code, _, _ := execute(t, "rules", "--json", "--markdown"); code != exitBadUsage {
		t.Errorf("--json with --markdown: exit %d, want 2", code)
	}
}
