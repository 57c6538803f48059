package targets_test

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/replaycheck/replaycheck/internal/targettest"
)

// memoryServer is server-memory's stdio server, relative to targets/.
const memoryServer = "clients/node_modules/@modelcontextprotocol/server-memory/dist/index.js"

// memoryScenario is the seed's fault_on scenario forwarded to server-memory,
// relative to the repository root.
const memoryScenario = "targets/testdata/forward-memory.yaml"

// memoryRun is the part of `replaycheck run --json` TestForwardMemoryServer
// reads.
type memoryRun struct {
	Results []struct {
		memoryResult
		// Repeat holds every run of a repeated scenario.
		Repeat *struct{ Results []memoryResult }
	}
}

// memoryResult is one run's result in a memoryRun.
type memoryResult struct {
	Verdict string
	History struct {
		Scenario, Token, Entry string
		MCP                    []struct{ Kind, Tool, Entry string }
		// Upstream are the model requests, with the tool results they
		// carried.
		Upstream []struct {
			Kind    string
			Results []struct{ Text string }
		}
		// Requests are the app requests; a client target's carry its
		// command's exit.
		Requests []struct{ Client *struct{ Exit int } }
	}
	Counts struct{ Writes int }
}

// runs returns the result of every run in r.
func (r memoryRun) runs() []memoryResult {
	var out []memoryResult
	for _, res := range r.Results {
		if res.Repeat != nil {
			out = append(out, res.Repeat.Results...)
		} else {
			out = append(out, res.memoryResult)
		}
	}
	return out
}

// memoryEntity is a line of server-memory's JSON-lines file.
type memoryEntity struct{ Type, Name string }

// TestForwardMemoryServer runs the seed's fault_on scenario (every follow-up
// fails with 500) with the ledger replaced by a real third-party MCP server,
// @modelcontextprotocol/server-memory over stdio, through the replaycheck
// binary as a user runs it. On naive the forwarder sees create_entities run
// three times and the rule fails, while the server's file holds the entity
// once: server-memory ignores a name it already has, which the forwarder
// cannot see (the verdict is about the calls, not the server's state). On
// guarded the call runs once. Repeated in parallel, each run's server (its
// own process and file) holds exactly the distinct entities the forwarder
// saw run. Skips when server-memory is not installed (make clients).
func TestForwardMemoryServer(t *testing.T) {
	needNodeServer(t, memoryServer)
	tests := []struct {
		name     string
		target   string
		repeat   int
		wantCode int
		// want is each run's "verdict writes=N lines=N distinct=N".
		want string
	}{
		{"naive", "builtin:naive", 1, 1, "fail writes=3 lines=1 distinct=1"},
		{"guarded", "builtin:guarded", 1, 0, "pass writes=1 lines=1 distinct=1"},
		{"naive parallel", "builtin:naive", 4, 1, "fail writes=3 lines=1 distinct=1"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			dir := t.TempDir()
			runs := runForwardMemory(t, dir, tt.target, tt.repeat, tt.wantCode).runs()
			files := memoryFiles(t, dir)
			if len(runs) != tt.repeat || len(files) != tt.repeat {
				t.Fatalf("%d runs and %d memory files, want %d of each", len(runs), len(files), tt.repeat)
			}
			seen := map[string]bool{}
			for _, r := range runs {
				distinct := map[string]bool{}
				for _, e := range r.History.MCP {
					if e.Kind == "write" && e.Tool == "create_entities" {
						distinct[e.Entry] = true
					}
				}
				// The run's server's file is the one that names the
				// run's entry (the scenario's {{entry}}).
				entry := r.History.Entry
				if seen[entry] {
					t.Errorf("two runs with the entry %s", entry)
				}
				seen[entry] = true
				lines := files[entry]
				if lines == nil {
					t.Errorf("run %s: no memory file holds its entity; files: %v", r.History.Token, files)
				}
				got := fmt.Sprintf("%s writes=%d lines=%d distinct=%d", r.Verdict, r.Counts.Writes, len(lines), len(distinct))
				if diff := cmp.Diff(tt.want, got); diff != "" {
					t.Errorf("run %s (-want +got):\n%s", r.History.Token, diff)
				}
				for _, l := range lines {
					if l.Type != "entity" || l.Name != entry {
						t.Errorf("run %s: memory line %+v, want the entity %s", r.History.Token, l, entry)
					}
				}
			}
		})
	}
}

// runForwardMemory runs memoryScenario on target, repeat times with
// --parallel 8, with MEMORY_DIR=dir for the servers' files (see
// runForwarded).
func runForwardMemory(t *testing.T, dir, target string, repeat, wantCode int) memoryRun {
	t.Helper()
	return runForwarded(t, dir, []string{"MEMORY_DIR=" + dir}, true, wantCode,
		"run", memoryScenario, "--target", target, "--parallel", "8", "--repeat", fmt.Sprint(repeat))
}

// runForwarded runs replaycheck with args and --json, from the repository
// root with env added, with netns inside `unshare -rn` (loopback only)
// when this machine allows it, and on plain loopback otherwise (without
// netns: a server the test started listens there). It checks the exit code
// is wantCode and returns the JSON report (written into dir).
func runForwarded(t *testing.T, dir string, env []string, netns bool, wantCode int, args ...string) memoryRun {
	t.Helper()
	js := filepath.Join(dir, "run.json")
	args = append(append([]string{replaycheckBin}, args...), "--json", js)
	if err := targettest.LoopbackNamespace(); err == nil && netns {
		args = targettest.InLoopbackNamespace(args...)
	} else if netns {
		t.Logf("no loopback-only network namespace, running on plain loopback: %v", err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 4*time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, args[0], args[1:]...)
	cmd.Dir = ".."
	cmd.Env = append(os.Environ(), env...)
	var out bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &out
	err := cmd.Run()
	var ee *exec.ExitError
	if err != nil && !errors.As(err, &ee) {
		t.Fatalf("running %q: %v\n%s", args, err, out.String())
	}
	if code := cmd.ProcessState.ExitCode(); code != wantCode {
		t.Errorf("exit %d, want %d\n%s", code, wantCode, out.String())
	}
	b, err := os.ReadFile(js)
	if err != nil {
		t.Fatalf("no JSON report: %v\n%s", err, out.String())
	}
	var saved memoryRun
	if err := json.Unmarshal(b, &saved); err != nil {
		t.Fatal(err)
	}
	return saved
}

// memoryFiles reads the servers' files in dir (memory-PID.jsonl, one per
// run) and returns each file's lines keyed by the name of its first
// entity.
func memoryFiles(t *testing.T, dir string) map[string][]memoryEntity {
	t.Helper()
	paths, err := filepath.Glob(filepath.Join(dir, "memory-*.jsonl"))
	if err != nil {
		t.Fatal(err)
	}
	files := map[string][]memoryEntity{}
	for _, p := range paths {
		b, err := os.ReadFile(p)
		if err != nil {
			t.Fatal(err)
		}
		var lines []memoryEntity
		for _, l := range strings.Split(string(b), "\n") {
			if strings.TrimSpace(l) == "" {
				continue
			}
			var e memoryEntity
			if err := json.Unmarshal([]byte(l), &e); err != nil {
				t.Fatalf("%s: line %q: %v", p, l, err)
			}
			lines = append(lines, e)
		}
		if len(lines) == 0 {
			t.Errorf("%s is empty", p)
			continue
		}
		files[lines[0].Name] = lines
	}
	return files
}
