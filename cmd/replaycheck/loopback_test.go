package main

import (
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"testing"
	"time"
)

// BenchmarkLoopbackFloor compares `replaycheck run` with its floor, both as
// child processes measured from outside: the seed's no-fault chat scenario
// run --repeat N times on builtin:guarded at --parallel P, against a plain
// net/http client and server in one process (testdata/loopback) making the
// same number of HTTP round trips on 127.0.0.1, P at once. A scenario's round
// trips are counted from the run's own JSON report: the app's request, each
// model request and each MCP tools/call (4 here); the MCP session's
// initialize and tools/list, once per run of the command, are left out. The
// floor is what the loopback costs with nothing of the harness: the same
// process start, the same kind of requests and answers, kept-alive
// connections, no parsing beyond reading the bodies.
//
// The MCP library's floor (sdk-floor) is the same program making the
// scenarios' tools/calls through the official MCP Go SDK, which the ledger
// and the gateway speak MCP with, and the other round trips plain: what the
// chosen library costs with nothing of ours around it. Both floors run with
// replaycheck's collector pace (gcPercent).
//
// It reports, per P, the median wall and CPU time (user+sys) of each and
// replaycheck's ratios to them (x-floor-wall, x-floor-cpu, x-sdk-floor-wall,
// x-sdk-floor-cpu), and replaycheck's scenarios per second; CPU time is the
// steadier on a shared machine.
//
//	go test -run '^$' -bench LoopbackFloor -benchtime 5x ./cmd/replaycheck
func BenchmarkLoopbackFloor(b *testing.B) {
	const scenarios = 1000
	dir := b.TempDir()
	rc := buildBinary(b, ".", filepath.Join(dir, "replaycheck"))
	floor := buildBinary(b, filepath.Join("testdata", "loopback"), filepath.Join(dir, "loopback"))
	suite := filepath.Join("..", "..", "scenarios", "seed", "no-fault-chat.yaml")
	trips, toolCalls := roundTrips(b, rc, suite, dir)
	gogc := "GOGC=" + strconv.Itoa(gcPercent)
	for _, parallel := range []int{1, 2, 8, 32} {
		b.Run("parallel="+strconv.Itoa(parallel), func(b *testing.B) {
			p := strconv.Itoa(parallel)
			var rcWall, rcCPU, floorWall, floorCPU, sdkWall, sdkCPU []time.Duration
			for b.Loop() {
				wall, cpu := timeChild(b, nil, rc, "run", suite, "--repeat", strconv.Itoa(scenarios), "--parallel", p)
				rcWall, rcCPU = append(rcWall, wall), append(rcCPU, cpu)
				wall, cpu = timeChild(b, []string{gogc}, floor, "-n", strconv.Itoa(scenarios*trips), "-parallel", p)
				floorWall, floorCPU = append(floorWall, wall), append(floorCPU, cpu)
				wall, cpu = timeChild(b, []string{gogc}, floor, "-n", strconv.Itoa(scenarios*(trips-toolCalls)),
					"-tool-calls", strconv.Itoa(scenarios*toolCalls), "-parallel", p)
				sdkWall, sdkCPU = append(sdkWall, wall), append(sdkCPU, cpu)
			}
			b.ReportMetric(scenarios/median(rcWall).Seconds(), "scenarios/s")
			b.ReportMetric(median(rcWall).Seconds(), "replaycheck-wall-s")
			b.ReportMetric(median(floorWall).Seconds(), "floor-wall-s")
			b.ReportMetric(median(sdkWall).Seconds(), "sdk-floor-wall-s")
			b.ReportMetric(float64(median(rcWall))/float64(median(floorWall)), "x-floor-wall")
			b.ReportMetric(float64(median(rcCPU))/float64(median(floorCPU)), "x-floor-cpu")
			b.ReportMetric(float64(median(rcWall))/float64(median(sdkWall)), "x-sdk-floor-wall")
			b.ReportMetric(float64(median(rcCPU))/float64(median(sdkCPU)), "x-sdk-floor-cpu")
		})
	}
}

// roundTrips runs the scenario once with a JSON report and counts its HTTP
// round trips (the app's requests, the model requests and the MCP
// tools/calls) and, of them, the tools/calls.
func roundTrips(b *testing.B, rc, suite, dir string) (trips, toolCalls int) {
	b.Helper()
	js := filepath.Join(dir, "one.json")
	timeChild(b, nil, rc, "run", suite, "--json", js)
	raw, err := os.ReadFile(js)
	if err != nil {
		b.Fatal(err)
	}
	var rep struct {
		Results []struct {
			History struct{ Requests []json.RawMessage }
			Counts  struct {
				Initial  int
				FollowUp int `json:"follow_up"`
				MCPCalls int `json:"mcp_calls"`
			}
		}
	}
	if err := json.Unmarshal(raw, &rep); err != nil || len(rep.Results) != 1 {
		b.Fatalf("the run's JSON report: %v, %d results", err, len(rep.Results))
	}
	r := rep.Results[0]
	n := len(r.History.Requests) + r.Counts.Initial + r.Counts.FollowUp + r.Counts.MCPCalls
	if n < 4 || r.Counts.MCPCalls < 1 {
		b.Fatalf("%d round trips, %d tools/calls in a tool-call scenario, want 4 or more and 1 or more", n, r.Counts.MCPCalls)
	}
	return n, r.Counts.MCPCalls
}

// timeChild runs bin with args and env added to the environment, which must
// succeed, and returns its wall and CPU time.
func timeChild(b *testing.B, env []string, bin string, args ...string) (wall, cpu time.Duration) {
	b.Helper()
	cmd := exec.Command(bin, args...)
	cmd.Env = append(os.Environ(), env...)
	start := time.Now()
	if out, err := cmd.CombinedOutput(); err != nil {
		b.Fatalf("%s %v: %v\n%s", bin, args, err, tail(out))
	}
	wall = time.Since(start)
	return wall, cmd.ProcessState.UserTime() + cmd.ProcessState.SystemTime()
}

// tail is the end of a child's output, for an error message.
func tail(out []byte) string {
	if len(out) > 2000 {
		return fmt.Sprintf("…%s", out[len(out)-2000:])
	}
	return string(out)
}

// TestLoopbackFloorProgram runs BenchmarkLoopbackFloor's floor program once,
// plain and with tool calls through the MCP SDK, so a change that breaks it
// shows in the tests and not only when someone benchmarks.
func TestLoopbackFloorProgram(t *testing.T) {
	floor := buildBinary(t, filepath.Join("testdata", "loopback"), filepath.Join(t.TempDir(), "loopback"))
	for _, args := range [][]string{
		{"-n", "20", "-parallel", "2"},
		{"-n", "20", "-tool-calls", "10", "-parallel", "2"},
	} {
		if out, err := exec.Command(floor, args...).CombinedOutput(); err != nil {
			t.Errorf("loopback %v: %v\n%s", args, err, out)
		}
	}
}
