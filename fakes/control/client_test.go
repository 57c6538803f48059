package control_test

import (
	"context"
	"net/http/httptest"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/replaycheck/replaycheck/fakes/control"
	"github.com/replaycheck/replaycheck/fakes/control/controltest"
	"github.com/replaycheck/replaycheck/fakes/ledger"
	"github.com/replaycheck/replaycheck/fakes/upstream"
)

// TestGeneratedClient generates a TypeScript client from openapi.yaml with
// the generator pinned in client/package.json (openapi-typescript, for
// openapi-fetch), compiles client/client.mts against it with tsc (strict; a
// type error fails), and runs it against the control API (every exchange
// checked by controltest). It skips, saying so, where node or the pinned
// packages are missing.
func TestGeneratedClient(t *testing.T) {
	if _, err := exec.LookPath("node"); err != nil {
		t.Skip("node is not installed: the generated TypeScript client is not checked (npm and node; make openapi-client)")
	}
	modules, err := filepath.Abs("client/node_modules")
	if err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(filepath.Join(modules, "openapi-typescript")); err != nil {
		t.Skip("the client generator is not installed: run make openapi-client (npm ci in fakes/control/client)")
	}
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	dir := t.TempDir()
	node := func(args ...string) string {
		t.Helper()
		cmd := exec.CommandContext(ctx, "node", args...)
		cmd.Dir = dir
		out, err := cmd.CombinedOutput()
		if err != nil {
			t.Fatalf("node %s: %v\n%s", strings.Join(args, " "), err, out)
		}
		return string(out)
	}
	spec, err := filepath.Abs("openapi.yaml")
	if err != nil {
		t.Fatal(err)
	}
	src, err := os.ReadFile("client/client.mts")
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, "client.mts"), src, 0o666); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink(modules, filepath.Join(dir, "node_modules")); err != nil {
		t.Fatal(err)
	}
	node(filepath.Join(modules, "openapi-typescript/bin/cli.js"), spec, "-o", filepath.Join(dir, "control.d.ts"))
	tsc := filepath.Join(modules, "typescript/bin/tsc")
	flags := []string{"--strict", "--module", "nodenext", "--moduleResolution", "nodenext", "--target", "es2022", "--types", "node"}
	// One tsc run type-checks (a type error fails it, as with --noEmit)
	// and emits what the test then runs.
	node(append(append([]string{tsc}, flags...), "--outDir", "out", "client.mts")...)

	u, err := upstream.New(upstream.Config{})
	if err != nil {
		t.Fatal(err)
	}
	l, err := ledger.New(ledger.Config{})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { l.Close() })
	srv := httptest.NewServer(controltest.Validate(t, control.Spec, (&control.API{Upstream: u, Ledger: l, Key: "k3y"}).Handler()))
	t.Cleanup(srv.Close)
	cmd := exec.CommandContext(ctx, "node", filepath.Join(dir, "out/client.mjs"))
	cmd.Env = append(os.Environ(), "REPLAYCHECK_URL="+srv.URL, "REPLAYCHECK_CONTROL_KEY=k3y")
	out, err := cmd.CombinedOutput()
	if err != nil {
		t.Fatalf("the compiled client: %v\n%s", err, out)
	}
	if !regexp.MustCompile(`armed: upstream-\d+ matched 0 fired 0\n`).Match(out) || !regexp.MustCompile(`deleted: upstream-\d+ then GET: 404 fault "upstream-\d+": none armed`).Match(out) {
		t.Errorf("the client's output:\n%s", out)
	}
	if reps := u.FaultReports(""); len(reps) != 0 {
		t.Errorf("faults left after the client deleted its own: %v", reps)
	}
}
