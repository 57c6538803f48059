package process_test

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/replaycheck/replaycheck/internal/harness/process"
	"github.com/replaycheck/replaycheck/internal/harness/target"
	"github.com/replaycheck/replaycheck/internal/harness/targetfile"
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
// never-ready helper (which starts a child in its group) by process.Start
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
	out := process.NewOutput(process.OutputBytes, nil)
	p, err := process.Start(process.Command{Argv: []string{os.Args[0]}, Env: env, Stdout: out, Stderr: out, Leftovers: []string{f.Name()}})
	if err != nil {
		return 0, nil, err
	}
	// The helper prints once it has started its child, and never again: once
	// this process is gone, nothing kills the group but the watchdog.
	for !slices.ContainsFunc(out.Lines(), func(l string) bool { return strings.HasPrefix(l, "warming up") }) {
		time.Sleep(5 * time.Millisecond)
	}
	return p.Pgid(), []string{f.Name()}, nil
}

// startClientHelper runs a client target's command on the client path and
// returns once the shell wrote its pid and run directory.
func startClientHelper() (int, []string, error) {
	pidFile := os.Getenv(starterPidFile)
	src := `kind: client
command: [sh, -c, 'sleep 1000 & echo "$$ $REPLAYCHECK_RUN_DIR" > "$` + starterPidFile + `.tmp" && mv "$` + starterPidFile + `.tmp" "$` + starterPidFile + `"; wait']
pass_env: [` + starterPidFile + `]
`
	tg, err := targetfile.Parse(filepath.Join(os.TempDir(), "client.yaml"), []byte(src), targetfile.Options{Replaycheck: "/bin/false"})
	if err != nil {
		return 0, nil, err
	}
	inst, err := tg.Start(context.Background(), target.Fakes{Upstream: "http://127.0.0.1:1/v1", MCP: "http://127.0.0.1:1/mcp"}, nil)
	if err != nil {
		return 0, nil, err
	}
	go inst.Send(context.Background(), target.Request{Token: "rc0000000001"})
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
