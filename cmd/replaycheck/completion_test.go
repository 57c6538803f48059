package main

import (
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/replaycheck/replaycheck/fakes/gateway"
	"github.com/replaycheck/replaycheck/internal/harness/explore"
	"github.com/replaycheck/replaycheck/internal/harness/scenario"
)

// completions runs cobra's hidden __complete command, as the shell scripts
// do, and returns the candidates (without descriptions) and the directive.
func completions(t *testing.T, args ...string) ([]string, string) {
	t.Helper()
	code, out, errOut := execute(t, append([]string{"__complete"}, args...)...)
	if code != exitOK {
		t.Fatalf("__complete %q: exit %d\n%s", args, code, errOut)
	}
	lines := strings.Split(strings.TrimSuffix(out, "\n"), "\n")
	var got []string
	for _, l := range lines[:len(lines)-1] {
		name, _, _ := strings.Cut(l, "\t")
		got = append(got, name)
	}
	return got, lines[len(lines)-1]
}

func TestCompleteTargetBuiltins(t *testing.T) {
	want := []string{"builtin:guarded", "builtin:naive"}
	for _, b := range gateway.AllBugs() {
		want = append(want, "builtin:"+string(b.Bug))
	}
	for _, cmd := range []string{"run", "baseline", "explore"} {
		got, directive := completions(t, cmd, "--target", "builtin:")
		if !slices.Equal(got, want) || directive != ":4" {
			t.Errorf("%s --target builtin: completes %q %s, want %q :4 (no files)", cmd, got, directive, want)
		}
	}
}

// After a comma, builtin:BUG,… is completed with one more switch, not one
// the list already holds.
func TestCompleteTargetSwitchList(t *testing.T) {
	got, directive := completions(t, "run", "--target", "builtin:replay-after-dispatch,")
	if len(got) != len(gateway.AllBugs())-1 || directive != ":6" {
		t.Fatalf("completes %q %s, want every other switch and :6 (no files, no space)", got, directive)
	}
	for _, g := range got {
		if !strings.HasPrefix(g, "builtin:replay-after-dispatch,") || g == "builtin:replay-after-dispatch,replay-after-dispatch" {
			t.Errorf("candidate %q", g)
		}
	}
}

func TestCompleteTargetFiles(t *testing.T) {
	dir := t.TempDir()
	for _, name := range []string{"proxy.yaml", "client.yml", "notes.txt"} {
		if err := os.WriteFile(filepath.Join(dir, name), nil, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	if err := os.Mkdir(filepath.Join(dir, "more"), 0o755); err != nil {
		t.Fatal(err)
	}
	got, directive := completions(t, "run", "--target", dir+string(filepath.Separator))
	var files []string
	for _, g := range got {
		if !strings.HasPrefix(g, "builtin:") {
			files = append(files, g)
		}
	}
	sep := string(filepath.Separator)
	want := []string{filepath.Join(dir, "client.yml"), filepath.Join(dir, "more") + sep, filepath.Join(dir, "proxy.yaml")}
	if !slices.Equal(files, want) || directive != ":6" {
		t.Errorf("completes files %q %s, want %q :6 (a directory goes on without a space)", files, directive, want)
	}
}

// --tag completes the tags of the scenarios the command would load.
func TestCompleteTag(t *testing.T) {
	suite, err := scenario.Load("../../scenarios/seed")
	if err != nil {
		t.Fatal(err)
	}
	var want []string
	for _, s := range suite {
		want = append(want, s.Tags...)
	}
	slices.Sort(want)
	want = slices.Compact(want)
	if len(want) == 0 {
		t.Fatal("the seed scenarios have no tags")
	}
	for _, cmd := range []string{"run", "list", "baseline"} {
		got, directive := completions(t, cmd, "../../scenarios/seed", "--tag", "")
		if !slices.Equal(got, want) || directive != ":4" {
			t.Errorf("%s --tag completes %q %s, want %q :4", cmd, got, directive, want)
		}
	}
}

func TestCompleteKinds(t *testing.T) {
	got, _ := completions(t, "explore", "--kinds", "500,")
	if len(got) != len(explore.Kinds()) || !slices.Contains(got, "500,502") {
		t.Errorf("--kinds 500, completes %q, want 500,KIND for every kind", got)
	}
}

// The flags whose value is no file complete nothing, not the directory.
func TestCompleteNoFiles(t *testing.T) {
	for _, flag := range []string{"--shard", "--parallel", "--timeout", "--filter", "--seed"} {
		got, directive := completions(t, "run", flag, "")
		if len(got) != 0 || directive != ":4" {
			t.Errorf("run %s completes %q %s, want nothing and :4", flag, got, directive)
		}
	}
	got, directive := completions(t, "run", "--baseline", "")
	if !slices.Equal(got, []string{"yaml", "yml"}) || directive != ":8" {
		t.Errorf("run --baseline completes %q %s, want the yaml extensions and :8", got, directive)
	}
}

func TestCompletionScripts(t *testing.T) {
	for shell, want := range map[string]string{
		"bash": "__start_replaycheck", "zsh": "#compdef replaycheck", "fish": "complete -c replaycheck", "powershell": "Register-ArgumentCompleter",
	} {
		code, out, errOut := execute(t, "completion", shell)
		if code != exitOK || !strings.Contains(out, want) {
			t.Errorf("completion %s: exit %d, script lacks %q\n%s", shell, code, want, errOut)
		}
	}
}
