package targets_test

import (
	"bufio"
	"context"
	"fmt"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/replaycheck/replaycheck/internal/targettest"
)

// everythingServer is server-everything's entry point, relative to
// targets/.
const everythingServer = "clients/node_modules/@modelcontextprotocol/server-everything/dist/index.js"

// needNodeServer skips the test when node or the npm package at path
// (relative to targets/) is not installed.
func needNodeServer(t *testing.T, path string) {
	t.Helper()
	if testing.Short() {
		t.Skip("spawns node MCP servers; not in -short")
	}
	if _, err := exec.LookPath("node"); err != nil {
		t.Skip("node is not on PATH")
	}
	if _, err := os.Stat(path); err != nil {
		t.Skipf("%s is not installed (make clients, or npm ci --prefix targets/clients): %v", path, err)
	}
}

// seedWrites are the writes (the forwarded executions of the mapped tool)
// each seed scenario makes on the gateway, naive and guarded.
var seedWrites = map[string]map[string]int{
	"naive": {
		"seed chat fault_on": 3, "seed messages fault_on": 3, "seed responses fault_on": 3,
		"seed chat stream drop with fallback": 2,
		"seed chat no fault":                  1, "seed messages no fault": 1, "seed responses no fault": 1,
		"seed chat guardrail fault_once": 0, "seed messages guardrail fault_once": 0, "seed responses guardrail fault_once": 0,
	},
	"guarded": {
		"seed chat fault_on": 1, "seed messages fault_on": 1, "seed responses fault_on": 1,
		"seed chat stream drop with fallback": 1,
		"seed chat no fault":                  1, "seed messages no fault": 1, "seed responses no fault": 1,
		"seed chat guardrail fault_once": 0, "seed messages guardrail fault_once": 0, "seed responses guardrail fault_once": 0,
	},
}

// wantSeedRuns is what TestForwardSeedSuite expects of each seed scenario in
// mode: "verdict writes=N SEEN" where seen(n) renders what the server's own
// record shows for n writes.
func wantSeedRuns(mode string, seen func(writes int) string) map[string]string {
	want := map[string]string{}
	for name, n := range seedWrites[mode] {
		verdict := "pass"
		if n > 1 {
			verdict = "fail"
		}
		want[name] = fmt.Sprintf("%s writes=%d %s", verdict, n, seen(n))
	}
	return want
}

// TestForwardSeedSuite runs the seed suite (scenarios/seed) through the
// binary at --parallel 8 on target files whose mcp forwards every run to a
// real third-party MCP server in place of the ledger, on the gateway process
// in naive and guarded mode; the target's mcp.calls turns the seed's
// commit_write into the server's tool. Over stdio, gateway-memory.yaml
// spawns @modelcontextprotocol/server-memory per run, each with its own
// file: in every run the distinct entities the forwarder saw written are
// the file's lines (one, the run's entry, or none), while naive's replays
// show as more executions than lines (server-memory ignores a name it has).
// Over Streamable HTTP, gateway-everything.yaml forwards to one
// @modelcontextprotocol/server-everything the test starts: every execution
// of echo the forwarder counts is an "Echo: <entry>" answer of the server
// that the model was handed in a follow-up. Naive's duplicates are found
// from the forwarded executions alone, with no ledger. Skips when the
// servers are not installed (make clients).
func TestForwardSeedSuite(t *testing.T) {
	for _, mode := range []string{"naive", "guarded"} {
		wantCode := map[string]int{"naive": 1, "guarded": 0}[mode]
		t.Run("memory "+mode, func(t *testing.T) {
			needNodeServer(t, memoryServer)
			dir := t.TempDir()
			saved := runForwarded(t, dir, []string{"MEMORY_DIR=" + dir, "REPLAYCHECK_GATEWAY_MODE=" + mode}, true, wantCode,
				"run", "scenarios/seed", "--target", "targets/gateway-memory.yaml", "--parallel", "8")
			files := memoryFiles(t, dir)
			got := map[string]string{}
			for _, r := range saved.runs() {
				distinct := map[string]bool{}
				for _, e := range r.History.MCP {
					if e.Kind == "write" && e.Tool == "create_entities" {
						distinct[e.Entry] = true
					}
				}
				lines := files[r.History.Entry]
				for _, l := range lines {
					if l.Type != "entity" || l.Name != r.History.Entry {
						t.Errorf("%s: memory line %+v, want the entity %s", r.History.Scenario, l, r.History.Entry)
					}
				}
				if len(distinct) != len(lines) {
					t.Errorf("%s: the forwarder saw %d distinct entities written, the server's file has %d lines", r.History.Scenario, len(distinct), len(lines))
				}
				got[r.History.Scenario] = fmt.Sprintf("%s writes=%d lines=%d", r.Verdict, r.Counts.Writes, len(lines))
			}
			want := wantSeedRuns(mode, func(n int) string { return fmt.Sprintf("lines=%d", min(n, 1)) })
			if diff := cmp.Diff(want, got); diff != "" {
				t.Errorf("seed runs forwarded to server-memory (-want +got):\n%s", diff)
			}
		})
		t.Run("everything "+mode, func(t *testing.T) {
			needNodeServer(t, everythingServer)
			url := startEverything(t)
			dir := t.TempDir()
			saved := runForwarded(t, dir, []string{"EVERYTHING_URL=" + url, "REPLAYCHECK_GATEWAY_MODE=" + mode}, false, wantCode,
				"run", "scenarios/seed", "--target", "targets/gateway-everything.yaml", "--parallel", "8")
			got := map[string]string{}
			for _, r := range saved.runs() {
				echoes := 0
				for _, u := range r.History.Upstream {
					for _, res := range u.Results {
						if res.Text == "Echo: "+r.History.Entry {
							echoes++
						}
					}
				}
				got[r.History.Scenario] = fmt.Sprintf("%s writes=%d echoes=%d", r.Verdict, r.Counts.Writes, echoes)
			}
			want := wantSeedRuns(mode, func(n int) string { return fmt.Sprintf("echoes=%d", n) })
			if diff := cmp.Diff(want, got); diff != "" {
				t.Errorf("seed runs forwarded to server-everything (-want +got):\n%s", diff)
			}
		})
	}
}

// startEverything starts server-everything over Streamable HTTP on a free
// loopback port, waits until it says it listens, and returns its MCP URL;
// the server is stopped when the test ends.
func startEverything(t *testing.T) string {
	t.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	port := l.Addr().(*net.TCPAddr).Port
	l.Close()
	cmd := exec.Command("node", filepath.FromSlash(everythingServer), "streamableHttp")
	cmd.Env = append(os.Environ(), fmt.Sprintf("PORT=%d", port))
	stderr, err := cmd.StderrPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		_ = cmd.Process.Kill()
		_ = cmd.Wait()
	})
	// listening gets nil once the server says it listens, or what it
	// printed when it ended first.
	listening := make(chan []string, 1)
	go func() {
		sc := bufio.NewScanner(stderr)
		seen := []string{}
		for sc.Scan() {
			seen = append(seen, sc.Text())
			if strings.Contains(sc.Text(), "listening on port") {
				listening <- nil
				for sc.Scan() { // drain, so the server never blocks on stderr
				}
				return
			}
		}
		listening <- seen
	}()
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	select {
	case out := <-listening:
		if out != nil {
			t.Fatalf("server-everything ended before listening:\n%s", strings.Join(out, "\n"))
		}
	case <-ctx.Done():
		t.Fatal("server-everything did not say it listens within a minute")
	}
	return fmt.Sprintf("http://127.0.0.1:%d/mcp", port)
}

// TestClaudeCodeForwardMemory runs the client scenarios (scenarios/clients,
// written for the ledger) on Claude Code, unmodified, with the ledger
// replaced by server-memory through the forwarder
// (targets/claude-code-memory.yaml: Claude Code reaches the forwarder over
// HTTP, the forwarder a server-memory spawned per run over stdio with a
// file of its own; commit_write mapped to create_entities), inside a
// loopback-only network namespace. It pins what Claude Code does: every
// scenario passes but the keyed lost-call ones (unknown: server-memory has
// no key), it runs create_entities at most once per run (never again after
// the follow-up fails, the session expires after the call ran, the
// answer's stream breaks, or a 401), and each run's file holds exactly the
// entity the forwarder saw written. Skips when the clients are not
// installed.
func TestClaudeCodeForwardMemory(t *testing.T) {
	if testing.Short() {
		t.Skip("a real client; not in -short")
	}
	if err := targettest.LoopbackNamespace(); err != nil {
		t.Skipf("no loopback-only network namespace: %v", err)
	}
	for _, c := range realClients {
		if c.file == "claude-code.yaml" {
			if why := c.installed(); why != "" {
				t.Skip(why)
			}
		}
	}
	needNodeServer(t, memoryServer)
	dir := t.TempDir()
	// Exit 1: the keyed lost-call scenarios cannot judge (unknown).
	saved := runForwarded(t, dir, []string{"MEMORY_DIR=" + dir}, true, 1,
		"run", "scenarios/clients", "--target", "targets/claude-code-memory.yaml", "--parallel", "3", "--timeout", "150s")
	files := memoryFiles(t, dir)
	got := map[string]string{}
	for _, r := range saved.runs() {
		exit := "none"
		if len(r.History.Requests) == 1 && r.History.Requests[0].Client != nil {
			exit = fmt.Sprint(r.History.Requests[0].Client.Exit)
		}
		lines := files[r.History.Entry]
		distinct := map[string]bool{}
		for _, e := range r.History.MCP {
			if e.Kind == "write" && e.Tool == "create_entities" {
				distinct[e.Entry] = true
			}
		}
		if len(distinct) != len(lines) {
			t.Errorf("%s: the forwarder saw %d distinct entities written, the server's file has %d lines", r.History.Scenario, len(distinct), len(lines))
		}
		got[r.History.Scenario] = fmt.Sprintf("%s exit=%s writes=%d lines=%d", r.Verdict, exit, r.Counts.Writes, len(lines))
	}
	want := map[string]string{
		"client no fault":                               "pass exit=0 writes=1 lines=1",
		"client follow-up 500 once":                     "pass exit=0 writes=1 lines=1",
		"client follow-up 500 always":                   "pass exit=1 writes=1 lines=1",
		"client mcp session expired after the call ran": "pass exit=0 writes=1 lines=1",
		"client mcp tools/call refused 401":             "pass exit=0 writes=0 lines=0",
		// Held after the answer was lost, on both generations; through the
		// forwarder it sees the stream cut after its headers end.
		broken2026:   "pass exit=0 writes=1 lines=1",
		broken2025:   "pass exit=0 writes=1 lines=1",
		cutHeaders26: "pass exit=0 writes=1 lines=1",
		// server-memory has no idempotency key, so the call lost before it
		// ran carries none: not re-issuing it is the safe choice.
		refused2026: "unknown exit=0 writes=0 lines=0",
		reset2026:   "unknown exit=0 writes=0 lines=0",
	}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("Claude Code through the forwarder to server-memory (-want +got):\n%s", diff)
	}
}
