package gateway

import (
	"bufio"
	"bytes"
	"context"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strconv"
	"testing"

	"github.com/replaycheck/replaycheck/fakes/ledgerstdio"
)

// TestMain lets the test binary stand in for replaycheck ledger-stdio (the
// stdio server the gateway spawns in its stdio mode), and for a stdio
// ledger that dies (dyingStdio).
func TestMain(m *testing.M) {
	if code, ok := ledgerstdio.Main(os.Args[1:]); ok {
		os.Exit(code)
	}
	if len(os.Args) == 5 && os.Args[1] == dyingRole {
		os.Exit(dyingStdio(os.Args[2], os.Args[3], os.Args[4]))
	}
	os.Exit(m.Run())
}

// dyingRole is the test binary's argv[1] for dyingStdio.
const dyingRole = "dying-ledger-stdio"

// The points where dyingStdio's process exits.
const (
	dieAtStart         = "start"          // before serving
	dieBeforeExecute   = "before_execute" // on reading a tools/call, before forwarding it
	dieAfterExecute    = "after_execute"  // when the ledger answered a tools/call, before writing the answer
	dieAfterAnswer     = "after_answer"   // right after writing a tools/call's answer
	hangAfterExecute   = "hang"           // when the ledger answered a tools/call: never writes again
	dieExitCode        = 3
	dyingPIDFilePrefix = "pid-"
)

// dyingCommand is the argv of a stdio ledger at url whose first times
// processes (counted in dir) exit at point; the others serve as
// ledger-stdio does. Every process leaves a file pid-N in dir.
func dyingCommand(t *testing.T, dir, point string, times int, url string) []string {
	t.Helper()
	exe, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	return []string{exe, dyingRole, point, strconv.Itoa(times) + ":" + dir, url}
}

// spawnedPIDs returns the pids of the processes dyingCommand started in dir.
func spawnedPIDs(t *testing.T, dir string) []int {
	t.Helper()
	files, err := filepath.Glob(filepath.Join(dir, dyingPIDFilePrefix+"*"))
	if err != nil {
		t.Fatal(err)
	}
	var out []int
	for _, f := range files {
		n, err := strconv.Atoi(filepath.Base(f)[len(dyingPIDFilePrefix):])
		if err != nil {
			t.Fatal(err)
		}
		out = append(out, n)
	}
	return out
}

// dyingStdio serves the ledger at url over stdio, exiting at point when it
// is one of the first N processes (spec "N:DIR", counted by the files
// fired-1 … fired-N it creates in DIR).
func dyingStdio(point, spec, url string) int {
	var times int
	var dir string
	if _, err := fmt.Sscanf(spec, "%d:", &times); err != nil {
		fmt.Fprintln(os.Stderr, "bad spec", spec)
		return 2
	}
	dir = spec[len(strconv.Itoa(times))+1:]
	_ = os.WriteFile(filepath.Join(dir, dyingPIDFilePrefix+strconv.Itoa(os.Getpid())), nil, 0o644)
	fire := false
	for i := 1; i <= times; i++ {
		if os.Mkdir(filepath.Join(dir, "fired-"+strconv.Itoa(i)), 0o755) == nil {
			fire = true
			break
		}
	}
	var in io.Reader = os.Stdin
	var out io.Writer = os.Stdout
	if fire {
		switch point {
		case dieAtStart:
			return dieExitCode
		case dieBeforeExecute:
			in = &lineHook{r: bufio.NewReader(os.Stdin), on: func(line []byte) {
				if bytes.Contains(line, []byte(`"tools/call"`)) {
					os.Exit(dieExitCode)
				}
			}}
		case dieAfterExecute, dieAfterAnswer, hangAfterExecute:
			out = writeHook{w: os.Stdout, point: point}
		}
	}
	err := ledgerstdio.Serve(context.Background(), &ledgerstdio.Options{URL: url, In: in, Out: out, ErrOut: os.Stderr, Version: "test"})
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	return 0
}

// lineHook reads r line by line, calling on with each line before handing
// it on.
type lineHook struct {
	r    *bufio.Reader
	on   func(line []byte)
	rest []byte
}

func (h *lineHook) Read(p []byte) (int, error) {
	if len(h.rest) == 0 {
		line, err := h.r.ReadBytes('\n')
		if len(line) == 0 {
			return 0, err
		}
		h.on(line)
		h.rest = line
	}
	n := copy(p, h.rest)
	h.rest = h.rest[n:]
	return n, nil
}

// writeHook exits at a tools/call's answer (a result with content): before
// writing it (after_execute) or right after (after_answer).
type writeHook struct {
	w     io.Writer
	point string
}

func (h writeHook) Write(p []byte) (int, error) {
	answer := bytes.Contains(p, []byte(`"result"`)) && bytes.Contains(p, []byte(`"content"`))
	if answer && h.point == dieAfterExecute {
		os.Exit(dieExitCode)
	}
	if answer && h.point == hangAfterExecute {
		select {} // until the gateway closes stdin and signals
	}
	n, err := h.w.Write(p)
	if answer && h.point == dieAfterAnswer {
		os.Exit(dieExitCode)
	}
	return n, err
}
