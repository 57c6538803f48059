package run

import (
	"os"
	"testing"

	"github.com/replaycheck/replaycheck/internal/harness/history"
	"github.com/replaycheck/replaycheck/internal/harness/scenario"
	"github.com/replaycheck/replaycheck/internal/harness/target"
	"github.com/replaycheck/replaycheck/internal/harness/targetfile"
	"github.com/replaycheck/replaycheck/internal/itemserver"
	"github.com/replaycheck/replaycheck/internal/procgone"
	"github.com/replaycheck/replaycheck/internal/targettest"
)

// TestMain lets the test binary stand in for the processes targets start
// (see targettest.Main), and for a user's MCP server over stdio (see
// itemserver.Main).
func TestMain(m *testing.M) {
	if code, ok := itemserver.Main(os.Args[1:]); ok {
		os.Exit(code)
	}
	targettest.Main(m)
}

// The shared test fixtures, by their names in this package's tests.
const (
	helperEnv = targettest.HelperEnv
	testKey   = targettest.Key
)

var (
	testEnv    = targettest.Getenv
	ctxFor     = targettest.Ctx
	pidsIn     = targettest.PidsIn
	assertGone = procgone.AssertGone
)

func self(t *testing.T) string { return targettest.Self(t) }

// writeTarget writes a target file (and extra files) into a new directory
// and loads it.
func writeTarget(t *testing.T, src string, extra map[string]string) (target.Target, string) {
	return targettest.WriteTarget(t, src, extra, func(path string) (target.Target, error) {
		return targetfile.Load(path, targetfile.Options{Getenv: testEnv, Replaycheck: "/bin/false"})
	})
}

// helperProxyTarget is a proxy target started as the test binary's proxy
// helper with a rendered JSON config in mode.
func helperProxyTarget(t *testing.T, mode string) (target.Target, string) {
	src, extra := targettest.ProxyFile(t, mode)
	return writeTarget(t, src, extra)
}

// runSource runs the scenarios of the YAML src on the named target, parallel
// at once, and returns their histories, failing t on a bad scenario, a bad
// target name, a harness error or a run that ended in error.
func runSource(t *testing.T, src, targetName string, parallel int) []*history.History {
	t.Helper()
	return runSourceWith(t, src, targetName, Options{Parallel: parallel})
}

// runSourceWith is runSource with opts (their Targets the named target);
// a run opts left out has a nil history.
func runSourceWith(t *testing.T, src, targetName string, opts Options) []*history.History {
	t.Helper()
	ss, errs := scenario.Parse("scenario.yaml", []byte(src))
	if len(errs) > 0 {
		t.Fatal(errs)
	}
	tg, err := target.ParseTarget(targetName)
	if err != nil {
		t.Fatal(err)
	}
	opts.Targets = []target.Target{tg}
	hs, err := Run(ctxFor(t), ss, opts)
	if err != nil {
		t.Fatal(err)
	}
	for _, h := range hs {
		if h != nil && h.Error != "" {
			t.Fatalf("run error: %s", h.Error)
		}
	}
	return hs
}
