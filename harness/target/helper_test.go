package target

import (
	"fmt"
	"net/http"
	"net/http/httptest"
	"os"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/replaycheck/replaycheck/fakes/ledger"
	"github.com/replaycheck/replaycheck/fakes/upstream"
	"github.com/replaycheck/replaycheck/internal/targettest"
)

// TestMain lets the test binary stand in for the processes targets start
// (see targettest.Main), and for a harness that starts one (starterEnv).
func TestMain(m *testing.M) {
	if os.Getenv(starterEnv) != "" {
		os.Exit(starter())
	}
	targettest.Main(m)
}

// starterEnv makes the test binary a harness that starts the never-ready
// helper (which starts a child in its group), prints the group's id and
// waits to be killed.
const starterEnv = "REPLAYCHECK_TEST_STARTER"

func starter() int {
	env := append(os.Environ(), targettest.HelperEnv+"=never-ready")
	env = slices.DeleteFunc(env, func(kv string) bool { return strings.HasPrefix(kv, starterEnv+"=") })
	out := newRing(10, nil)
	p, err := startProcess([]string{os.Args[0]}, env, "", out)
	if err != nil {
		fmt.Println("start:", err)
		return 1
	}
	// The helper prints once it has started its child, and never again: once
	// this process is gone, nothing kills the group but the watchdog.
	for !slices.ContainsFunc(out.Lines(), func(l string) bool { return strings.HasPrefix(l, "warming up") }) {
		time.Sleep(5 * time.Millisecond)
	}
	fmt.Println("pgid", p.pgid)
	select {}
}

// The shared test fixtures, by their names in this package's tests.
const testKey = targettest.Key

var (
	testEnv    = targettest.Getenv
	ctxFor     = targettest.Ctx
	assertGone = targettest.AssertGone
)

// helperProxyTarget is a proxy target started as the test binary's proxy
// helper with a rendered JSON config in mode.
func helperProxyTarget(t *testing.T, mode string) (Target, string) {
	src, extra := targettest.ProxyFile(t, mode)
	return targettest.WriteTarget(t, src, extra, func(path string) (Target, error) {
		return LoadTargetFile(path, TargetFileOptions{Getenv: testEnv, Replaycheck: "/bin/false"})
	})
}

// testFakes serves a ledger and an upstream fake on loopback until the test
// ends, and returns their URLs.
func testFakes(t *testing.T) Fakes {
	t.Helper()
	l, err := ledger.New(ledger.Config{})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { l.Close() })
	u, err := upstream.New(upstream.Config{})
	if err != nil {
		t.Fatal(err)
	}
	mux := http.NewServeMux()
	mux.Handle("/mcp", l)
	ls := httptest.NewServer(mux)
	t.Cleanup(ls.Close)
	us := httptest.NewServer(u)
	t.Cleanup(us.Close)
	return Fakes{Upstream: us.URL + "/v1", MCP: ls.URL + "/mcp"}
}
