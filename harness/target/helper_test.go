package target

import (
	"context"
	"fmt"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
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

// starterEnv makes the test binary a harness that starts a target process,
// prints "pgid N" and the paths the process's run leaves ("leftover P"),
// and waits to be killed. Its value says which: "proxy" starts the
// never-ready helper (which starts a child in its group) by startProcess
// with a file of its own as a leftover; "client" runs a client target whose
// shell starts a sleep in the background and waits, its run directory the
// leftover, reporting both in the file starterPidFile names.
const (
	starterEnv     = "REPLAYCHECK_TEST_STARTER"
	starterPidFile = "REPLAYCHECK_TEST_PIDFILE"
)

func starter() int {
	var (
		pgid      int
		leftovers []string
		err       error
	)
	switch os.Getenv(starterEnv) {
	case "proxy":
		pgid, leftovers, err = startProxyHelper()
	case "client":
		pgid, leftovers, err = startClientHelper()
	default:
		err = fmt.Errorf("unknown %s %q", starterEnv, os.Getenv(starterEnv))
	}
	if err != nil {
		fmt.Println("start:", err)
		return 1
	}
	fmt.Println("pgid", pgid)
	for _, l := range leftovers {
		fmt.Println("leftover", l)
	}
	fmt.Println("ready")
	select {}
}

// startProxyHelper starts the never-ready helper as a proxy's process is
// started, with a leftover file, and returns once it started its child.
func startProxyHelper() (int, []string, error) {
	env := append(os.Environ(), targettest.HelperEnv+"=never-ready")
	env = slices.DeleteFunc(env, func(kv string) bool { return strings.HasPrefix(kv, starterEnv+"=") })
	f, err := os.CreateTemp("", ".replaycheck-*-config.yaml")
	if err != nil {
		return 0, nil, err
	}
	f.Close()
	out := newOutput(outputBytes, nil)
	p, err := startProcess(command{argv: []string{os.Args[0]}, env: env, stdout: out, stderr: out, leftovers: []string{f.Name()}})
	if err != nil {
		return 0, nil, err
	}
	// The helper prints once it has started its child, and never again: once
	// this process is gone, nothing kills the group but the watchdog.
	for !slices.ContainsFunc(out.Lines(), func(l string) bool { return strings.HasPrefix(l, "warming up") }) {
		time.Sleep(5 * time.Millisecond)
	}
	return p.pgid, []string{f.Name()}, nil
}

// startClientHelper runs a client target's command on the client path and
// returns once the shell wrote its pid and run directory.
func startClientHelper() (int, []string, error) {
	pidFile := os.Getenv(starterPidFile)
	src := `kind: client
command: [sh, -c, 'sleep 1000 & echo "$$ $REPLAYCHECK_RUN_DIR" > "$` + starterPidFile + `.tmp" && mv "$` + starterPidFile + `.tmp" "$` + starterPidFile + `"; wait']
pass_env: [` + starterPidFile + `]
`
	tg, err := ParseTargetFile(filepath.Join(os.TempDir(), "client.yaml"), []byte(src), TargetFileOptions{Replaycheck: "/bin/false"})
	if err != nil {
		return 0, nil, err
	}
	inst, err := tg.Start(context.Background(), Fakes{Upstream: "http://127.0.0.1:1/v1", MCP: "http://127.0.0.1:1/mcp"}, nil)
	if err != nil {
		return 0, nil, err
	}
	go inst.Send(context.Background(), Request{Token: "rc0000000001"})
	for {
		b, err := os.ReadFile(pidFile)
		if err == nil {
			var pgid int
			var runDir string
			if _, err := fmt.Sscan(string(b), &pgid, &runDir); err != nil {
				return 0, nil, fmt.Errorf("pid file %q: %v", b, err)
			}
			return pgid, []string{runDir}, nil
		}
		time.Sleep(5 * time.Millisecond)
	}
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
