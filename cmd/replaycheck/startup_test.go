package main

import (
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/replaycheck/replaycheck/internal/gobuild"
)

// Start-up: `replaycheck --help` should start about as fast as any cobra
// program; what every command pays for is package initialisation.

// BenchmarkStartup compares the start time of `replaycheck --help` with
// that of a cobra hello-world (testdata/hello, on replaycheck's cobra
// version), measured from outside the process: each iteration execs both,
// in turns. It reports the median wall and CPU (user+sys) time of each and
// their ratios (x-hello-wall, x-hello-cpu); CPU time is the steadier one on
// a shared machine. Both binaries are built first, offline, from the module
// cache.
//
//	go test -run '^$' -bench Startup -benchtime 200x ./cmd/replaycheck
func BenchmarkStartup(b *testing.B) {
	dir := b.TempDir()
	rc := buildBinary(b, ".", filepath.Join(dir, "replaycheck"))
	hello := buildBinary(b, filepath.Join("testdata", "hello"), filepath.Join(dir, "hello"))
	var rcWall, rcCPU, helloWall, helloCPU []time.Duration
	i := 0
	for b.Loop() {
		// Alternate which runs first, so neither always finds the other's
		// pages warm.
		first, second := rc, hello
		if i%2 == 1 {
			first, second = hello, rc
		}
		i++
		for _, bin := range []string{first, second} {
			wall, cpu := startOnce(b, bin)
			if bin == rc {
				rcWall, rcCPU = append(rcWall, wall), append(rcCPU, cpu)
			} else {
				helloWall, helloCPU = append(helloWall, wall), append(helloCPU, cpu)
			}
		}
	}
	ms := func(d time.Duration) float64 { return float64(d) / float64(time.Millisecond) }
	b.ReportMetric(ms(median(rcWall)), "replaycheck-wall-ms")
	b.ReportMetric(ms(median(helloWall)), "hello-wall-ms")
	b.ReportMetric(ms(median(rcCPU)), "replaycheck-cpu-ms")
	b.ReportMetric(ms(median(helloCPU)), "hello-cpu-ms")
	b.ReportMetric(float64(median(rcWall))/float64(median(helloWall)), "x-hello-wall")
	b.ReportMetric(float64(median(rcCPU))/float64(median(helloCPU)), "x-hello-cpu")
}

// buildBinary builds the main package in dir (its own module or this one)
// into out as a release builds it (gobuild.Release), offline.
func buildBinary(b testing.TB, dir, out string) string {
	b.Helper()
	if err := gobuild.Release(dir, out); err != nil {
		b.Fatal(err)
	}
	return out
}

// releaseBinary returns replaycheck as a release builds it
// (.goreleaser.yaml: CGO_ENABLED=0, -trimpath, -ldflags '-s -w'), built
// once per test process: what the README's commands run, as
// a user runs them (TestREADMECommands), what the container image holds
// (TestContainerImage) and what TestInitIsLight starts. The code it runs is
// tested under -race in process; a race-built binary would take five times
// the CPU for each of the README's hundred commands and pause a second as
// it exits.
func releaseBinary(t testing.TB) string {
	t.Helper()
	bin, err := releaseBuild()
	if err != nil {
		t.Fatal(err)
	}
	return bin
}

// releaseDir is the directory of releaseBinary's build, once built;
// TestMain removes it.
var releaseDir string

var releaseBuild = sync.OnceValues(func() (string, error) {
	dir, err := os.MkdirTemp("", "replaycheck-release-")
	if err != nil {
		return "", err
	}
	releaseDir = dir
	bin := filepath.Join(dir, "replaycheck")
	return bin, gobuild.Release(".", bin)
})

// startOnce runs bin --help and returns its wall and CPU time.
func startOnce(b *testing.B, bin string) (wall, cpu time.Duration) {
	b.Helper()
	cmd := exec.Command(bin, "--help")
	start := time.Now()
	if err := cmd.Run(); err != nil {
		b.Fatalf("%s --help: %v", bin, err)
	}
	wall = time.Since(start)
	return wall, cmd.ProcessState.UserTime() + cmd.ProcessState.SystemTime()
}

func median(ds []time.Duration) time.Duration {
	s := slices.Clone(ds)
	slices.Sort(s)
	return s[len(s)/2]
}

// initBudget is how many bytes one of replaycheck's own packages may
// allocate at init: tables and small expressions, not a compiled template
// or a large regular expression, which every command would pay for at
// start-up (compile those on first use, with sync.OnceValue).
const initBudget = 32 << 10

// TestInitIsLight runs `replaycheck --help` with GODEBUG=inittrace=1 and
// holds each package of this module to initBudget. Allocations are counted
// exactly, unlike time: BenchmarkStartup measures that.
func TestInitIsLight(t *testing.T) {
	if testing.Short() {
		t.Skip("builds the binary")
	}
	cmd := exec.Command(releaseBinary(t), "--help")
	cmd.Env = append(os.Environ(), "GODEBUG=inittrace=1")
	var trace strings.Builder
	cmd.Stderr = &trace
	if err := cmd.Run(); err != nil {
		t.Fatalf("replaycheck --help: %v\n%s", err, trace.String())
	}
	seen := 0
	for _, line := range strings.Split(trace.String(), "\n") {
		// init PKG @T ms, T ms clock, BYTES bytes, N allocs
		f := strings.Fields(line)
		if len(f) < 9 || f[0] != "init" || !strings.HasPrefix(f[1], "github.com/replaycheck/replaycheck/") {
			continue
		}
		seen++
		bytes, err := strconv.Atoi(f[7])
		if err != nil || f[8] != "bytes," {
			t.Fatalf("cannot read the init trace line %q", line)
		}
		if bytes > initBudget {
			t.Errorf("%s allocates %d bytes at init, want at most %d: compile or build it on first use", f[1], bytes, initBudget)
		}
	}
	if seen == 0 {
		t.Fatalf("no package of this module in the init trace:\n%s", trace.String())
	}
}
