package target_test

import (
	"net/http"
	"net/http/httptest"
	"testing"

	"github.com/replaycheck/replaycheck/fakes/ledger"
	"github.com/replaycheck/replaycheck/fakes/upstream"
	"github.com/replaycheck/replaycheck/internal/harness/target"
	"github.com/replaycheck/replaycheck/internal/harness/targetfile"
	"github.com/replaycheck/replaycheck/internal/procgone"
	"github.com/replaycheck/replaycheck/internal/targettest"
)

// TestMain lets the test binary stand in for the processes targets start
// (see targettest.Main).
func TestMain(m *testing.M) { targettest.Main(m) }

// The shared test fixtures, by their names in this package's tests.
const testKey = targettest.Key

var (
	testEnv    = targettest.Getenv
	ctxFor     = targettest.Ctx
	assertGone = procgone.AssertGone
)

// helperProxyTarget is a proxy target started as the test binary's proxy
// helper with a rendered JSON config in mode.
func helperProxyTarget(t *testing.T, mode string) (target.Target, string) {
	src, extra := targettest.ProxyFile(t, mode)
	return targettest.WriteTarget(t, src, extra, func(path string) (target.Target, error) {
		return targetfile.Load(path, targetfile.Options{Getenv: testEnv, Replaycheck: "/bin/false"})
	})
}

// testFakes serves a ledger and an upstream fake on loopback until the test
// ends, and returns their URLs.
func testFakes(t *testing.T) target.Fakes {
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
	return target.Fakes{Upstream: us.URL + "/v1", MCP: ls.URL + "/mcp"}
}
