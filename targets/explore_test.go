package targets_test

import (
	"bytes"
	"context"
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/replaycheck/replaycheck/internal/harness/explore"
	"github.com/replaycheck/replaycheck/internal/targettest"
)

// inNamespace runs `replaycheck ARGS` inside `unshare -rn` (loopback only)
// from the repository root, bounded by timeout, and returns its exit code
// and output.
func inNamespace(t *testing.T, timeout time.Duration, args ...string) (int, string) {
	t.Helper()
	return inNamespaceEnv(t, timeout, nil, args...)
}

// inNamespaceEnv is inNamespace with env (NAME=VALUE) added to the test's
// environment.
func inNamespaceEnv(t *testing.T, timeout time.Duration, env []string, args ...string) (int, string) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), timeout)
	defer cancel()
	argv := targettest.InLoopbackNamespace(append([]string{replaycheckBin}, args...)...)
	cmd := exec.CommandContext(ctx, argv[0], argv[1:]...)
	cmd.Dir = ".."
	cmd.Env = append(os.Environ(), env...)
	var out bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &out
	err := cmd.Run()
	var ee *exec.ExitError
	if err != nil && !errors.As(err, &ee) {
		t.Fatalf("running replaycheck in unshare -rn: %v\n%s", err, out.String())
	}
	return cmd.ProcessState.ExitCode(), out.String()
}

// exploreInNamespace runs `replaycheck explore ARGS` in unshare -rn (see
// inNamespace).
func exploreInNamespace(t *testing.T, args ...string) (int, string) {
	t.Helper()
	return inNamespace(t, 8*time.Minute, append([]string{"explore"}, args...)...)
}

// realClientFile returns the shipped real client of a target file.
func realClientFile(t *testing.T, file string) realClient {
	t.Helper()
	i := slices.IndexFunc(realClients, func(c realClient) bool { return c.file == file })
	if i < 0 {
		t.Fatalf("no real client %s", file)
	}
	return realClients[i]
}

// TestCodexFingerprintDiff fingerprints the shipped Codex CLI target as it
// ships (request_max_retries 4 inside stream_max_retries 1: 10 attempts of
// a failing request) and saves it with --json, then fingerprints a copy
// configured with request_max_retries 1 (2 × 2 attempts) and diffs it
// against the saved one with --diff: the attempts changed, 10 to 4, the gaps
// may have, and nothing else did. Skips when Codex is not installed (make clients).
func TestCodexFingerprintDiff(t *testing.T) {
	if testing.Short() {
		t.Skip("two fingerprints of Codex take about a minute; not in -short")
	}
	if err := targettest.LoopbackNamespace(); err != nil {
		t.Skipf("no loopback-only network namespace: %v", err)
	}
	if why := realClientFile(t, "codex.yaml").installed(); why != "" {
		t.Skip(why)
	}
	t.Parallel()
	src, err := os.ReadFile("codex.yaml")
	if err != nil {
		t.Fatal(err)
	}
	clients, err := filepath.Abs("clients")
	if err != nil {
		t.Fatal(err)
	}
	changed := strings.Replace(string(src), "request_max_retries=4", "request_max_retries=1", 1)
	changed = strings.Replace(changed, "\ndir: clients\n", "\ndir: "+clients+"\n", 1)
	if changed == string(src) || !strings.Contains(changed, clients) {
		t.Fatal("codex.yaml no longer sets request_max_retries=4 and dir: clients; update this test")
	}
	dir := t.TempDir()
	fewer, saved := filepath.Join(dir, "codex-fewer-retries.yaml"), filepath.Join(dir, "codex-policy.json")
	if err := os.WriteFile(fewer, []byte(changed), 0o644); err != nil {
		t.Fatal(err)
	}
	sweep := []string{"--fingerprint", "--kinds", "500", "--points", "^initial", "--timeout", "90s"}
	if code, out := exploreInNamespace(t, append([]string{"--target", "targets/codex.yaml", "--json", saved}, sweep...)...); code != 0 {
		t.Fatalf("fingerprint of codex.yaml: exit %d, want 0\n%s", code, out)
	}
	code, out := exploreInNamespace(t, append([]string{"--target", fewer, "--diff", saved}, sweep...)...)
	if code != 0 {
		t.Fatalf("fingerprint of the copy: exit %d, want 0\n%s", code, out)
	}
	// The longest gap goes too: the backoff no longer reaches its longer
	// waits (2 s × 0.2 s doubling) before giving up.
	want := regexp.MustCompile(`RETRY POLICY CHANGED against \S+: 1 of 1 rows\n(?:.*\n){3}│ client tool call │ initial responses stream │ 500 +│ attempts +│ 10 +│ 4 +│\n(?:│ client tool call │ initial responses stream │ 500 +│ gaps +│[^\n]*\n)?└`)
	if !want.MatchString(out) {
		t.Errorf("the diff does not show the attempts going from 10 to 4 (and the gaps) and nothing else:\n%s", out)
	}
}

// TestExploreSameFindingsAtAnyParallel sweeps the shipped AI SDK agent's
// stream cuts and 500s of its follow-up at the default concurrency (its
// runs start as the CPU has room) and one at a time: every cell has the
// same verdict and writes, and the same findings are found. Skips when the
// AI SDK is not installed (make clients).
func TestExploreSameFindingsAtAnyParallel(t *testing.T) {
	if testing.Short() {
		t.Skip("two sweeps of the AI SDK agent take minutes; not in -short")
	}
	if err := targettest.LoopbackNamespace(); err != nil {
		t.Skipf("no loopback-only network namespace: %v", err)
	}
	if why := realClientFile(t, "ai-sdk.yaml").installed(); why != "" {
		t.Skip(why)
	}
	t.Parallel()
	dir := t.TempDir()
	sweep := func(name string, extra ...string) *explore.Report {
		js := filepath.Join(dir, name+".json")
		args := append([]string{"--target", "targets/ai-sdk.yaml", "--kinds", "drop,500", "--points", "^follow_up", "--json", js}, extra...)
		code, out := exploreInNamespace(t, args...)
		if code != 0 && code != 1 {
			t.Fatalf("explore %s: exit %d, want 0 or 1\n%s", name, code, out)
		}
		f, err := os.Open(js)
		if err != nil {
			t.Fatal(err)
		}
		defer f.Close()
		rep, err := explore.ReadReport(f)
		if err != nil {
			t.Fatal(err)
		}
		return rep
	}
	type outcome struct {
		Verdict string
		Writes  int
	}
	cells := func(rep *explore.Report) map[string]outcome {
		m := map[string]outcome{}
		for _, c := range rep.Cells {
			m[c.Base+": "+c.Schedule.String()] = outcome{string(c.Verdict), c.Writes}
		}
		return m
	}
	findings := func(rep *explore.Report) []string {
		var out []string
		for _, f := range rep.Findings {
			out = append(out, f.Base+": "+f.Schedule.String()+": "+strings.Join(f.Failed, ", "))
		}
		slices.Sort(out)
		return out
	}
	def, serial := sweep("default"), sweep("serial", "--parallel", "1")
	if len(def.Cells) == 0 {
		t.Fatal("the sweep has no cell")
	}
	if diff := cmp.Diff(cells(serial), cells(def)); diff != "" {
		t.Errorf("cells (-one at a time +default):\n%s", diff)
	}
	if diff := cmp.Diff(findings(serial), findings(def)); diff != "" {
		t.Errorf("findings (-one at a time +default):\n%s", diff)
	}
}
