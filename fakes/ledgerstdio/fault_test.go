package ledgerstdio

import (
	"context"
	"encoding/json"
	"errors"
	"io"
	"net/http/httptest"
	"os"
	"os/exec"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/replaycheck/replaycheck/fakes/fault"
	"github.com/replaycheck/replaycheck/fakes/ledger"
	"github.com/replaycheck/replaycheck/internal/runtoken"
	"github.com/replaycheck/replaycheck/internal/wire"
)

// spawned is one ledger-stdio process the test spawned (the test binary,
// which TestMain turns into replaycheck ledger-stdio) and the go-sdk
// client's session with it over its stdio.
type spawned struct {
	cmd *exec.Cmd
	cs  *mcp.ClientSession
}

// spawn starts ledger-stdio for url as a client does (mcp.CommandTransport)
// and connects to it at protocol ("" is the SDK's default, its newest); the
// error is the client's Connect's.
func spawn(t *testing.T, ctx context.Context, url string, protocol wire.MCPProtocol) (*spawned, error) {
	t.Helper()
	bin, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	cmd := exec.CommandContext(ctx, bin, Name, url)
	cmd.Stderr = os.Stderr
	client := mcp.NewClient(&mcp.Implementation{Name: "test", Version: "1"}, nil)
	cs, err := client.Connect(ctx, &mcp.CommandTransport{Command: cmd, TerminateDuration: 5 * time.Second}, &mcp.ClientSessionOptions{ProtocolVersion: string(protocol)})
	if err != nil {
		if cmd.Process != nil {
			_ = cmd.Wait() // reaped once the client gave up on it
		}
		return &spawned{cmd: cmd}, err
	}
	p := &spawned{cmd: cmd, cs: cs}
	t.Cleanup(func() { _ = cs.Close() })
	return p, nil
}

// mustSpawn is spawn for a process that must connect: an error fails the
// test.
func mustSpawn(t *testing.T, ctx context.Context, url string, protocol wire.MCPProtocol) *spawned {
	t.Helper()
	p, err := spawn(t, ctx, url, protocol)
	if err != nil {
		t.Fatal(err)
	}
	return p
}

// exitCode closes the client's session (stdin first, as the SDK does) and
// returns how the process ended.
func (p *spawned) exitCode(t *testing.T) int {
	t.Helper()
	if p.cs != nil {
		_ = p.cs.Close() // the exit status, as an error when not 0
	}
	if p.cmd.ProcessState == nil {
		t.Fatal("the ledger-stdio process was not waited for")
	}
	return p.cmd.ProcessState.ExitCode()
}

// fileLines returns the ledger file's lines.
func fileLines(t *testing.T, path string) []string {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	return strings.Fields(string(b))
}

// stdioEvent is an event as the tests compare it: kind, tool, the fault
// that fired, answered or made the process exit, and how an exit ended.
type stdioEvent struct {
	Kind        wire.MCPKind
	Tool, Fault string
	End         wire.MCPExitEnd
}

// stdioEvents returns token's events of the kinds that say what became of a
// call and of the processes, with the MCPExit events' pids checked against
// the spawns'.
func stdioEvents(t *testing.T, l *ledger.Server, token string) []stdioEvent {
	t.Helper()
	var out []stdioEvent
	pids := map[string]bool{}
	for _, e := range l.Events(token) {
		switch e.Kind {
		case wire.MCPSpawn:
			pids[e.PID] = true
			out = append(out, stdioEvent{Kind: e.Kind})
		case wire.MCPExit:
			if !pids[e.PID] {
				t.Errorf("exit event %+v names pid %q, which no spawn announced", e, e.PID)
			}
			out = append(out, stdioEvent{e.Kind, e.Tool, e.Fault, e.End})
		case wire.MCPCall, wire.MCPWrite, wire.MCPResult, wire.MCPFault:
			out = append(out, stdioEvent{Kind: e.Kind, Tool: e.Tool, Fault: e.Fault})
		}
	}
	return out
}

// TestStdioFaultsSpawned spawns real ledger-stdio processes, one per fault
// kind and protocol generation (a 2026-07-28 client and a 2025-11-25 one),
// and pins what the go-sdk client sees, what the ledger wrote and recorded
// (the call at the client's version), and how the process ended.
func TestStdioFaultsSpawned(t *testing.T) {
	const cw = ledger.ToolCommitWrite
	for _, tt := range []struct {
		name  string
		fault ledger.Fault
		// callTimeout bounds the call (a hang's).
		callTimeout time.Duration
		// wantCallErr says what CallTool's error must be; nil: it succeeds.
		wantCallErr func(error) bool
		wantWrites  int
		wantExit    int // the process's exit code
		wantEvents  []stdioEvent
	}{
		{
			name:        "exit before execute",
			fault:       ledger.Fault{Tool: cw, StdioExit: &ledger.StdioExit{At: ledger.StdioExitBeforeExecute}, Times: fault.Once},
			wantCallErr: isEOF,
			wantWrites:  0,
			wantExit:    FaultExitCode,
			wantEvents: []stdioEvent{
				{Kind: wire.MCPSpawn}, {wire.MCPCall, cw, "", ""},
				{wire.MCPFault, cw, wire.MCPFaultStdioExitBeforeExecute, ""},
				{wire.MCPExit, cw, wire.MCPFaultStdioExitBeforeExecute, wire.MCPExitFault},
			},
		},
		{
			name:        "exit after execute",
			fault:       ledger.Fault{Tool: cw, StdioExit: &ledger.StdioExit{}, Times: fault.Once},
			wantCallErr: isEOF,
			wantWrites:  1,
			wantExit:    FaultExitCode,
			wantEvents: []stdioEvent{
				{Kind: wire.MCPSpawn}, {wire.MCPCall, cw, "", ""}, {wire.MCPWrite, cw, "", ""},
				{wire.MCPFault, cw, wire.MCPFaultStdioExitAfterExecute, ""},
				{wire.MCPExit, cw, wire.MCPFaultStdioExitAfterExecute, wire.MCPExitFault},
			},
		},
		{
			name:       "exit after answer",
			fault:      ledger.Fault{Tool: cw, StdioExit: &ledger.StdioExit{At: ledger.StdioExitAfterAnswer}, Times: fault.Once},
			wantWrites: 1,
			wantExit:   FaultExitCode,
			wantEvents: []stdioEvent{
				{Kind: wire.MCPSpawn}, {wire.MCPCall, cw, "", ""}, {wire.MCPWrite, cw, "", ""},
				{wire.MCPFault, cw, wire.MCPFaultStdioExitAfterAnswer, ""},
				{wire.MCPResult, cw, "", ""},
				{wire.MCPExit, cw, wire.MCPFaultStdioExitAfterAnswer, wire.MCPExitFault},
			},
		},
		{
			name:        "hang",
			fault:       ledger.Fault{Tool: cw, StdioHang: &ledger.StdioHang{}, Times: fault.Once},
			callTimeout: time.Second,
			wantCallErr: func(err error) bool { return errors.Is(err, context.DeadlineExceeded) },
			wantWrites:  1,
			wantExit:    0, // its stdin closed: a clean end
			wantEvents: []stdioEvent{
				{Kind: wire.MCPSpawn}, {wire.MCPCall, cw, "", ""}, {wire.MCPWrite, cw, "", ""},
				{wire.MCPFault, cw, wire.MCPFaultStdioHang, ""},
				{wire.MCPExit, cw, "", wire.MCPExitStdinClosed}, // with the held call unanswered
			},
		},
		{
			name:        "malformed line",
			fault:       ledger.Fault{Tool: cw, StdioMalformedLine: &ledger.StdioMalformedLine{}, Times: fault.Once},
			wantCallErr: isSyntaxError,
			wantWrites:  1,
			wantExit:    0,
			wantEvents: []stdioEvent{
				{Kind: wire.MCPSpawn}, {wire.MCPCall, cw, "", ""}, {wire.MCPWrite, cw, "", ""},
				{wire.MCPFault, cw, wire.MCPFaultStdioMalformedLine, ""},
				{wire.MCPResult, cw, "", ""},
				{wire.MCPExit, "", "", wire.MCPExitStdinClosed},
			},
		},
	} {
		for _, protocol := range []wire.MCPProtocol{wire.MCPProtocol20260728, wire.MCPProtocol20251125} {
			t.Run(tt.name+"/"+string(protocol), func(t *testing.T) {
				token := "rc0stdioF" + strings.ReplaceAll(tt.name, " ", "") + string(protocol)
				l, url, path := stdioLedgerWith(t, token, ledger.Config{}, tt.fault)
				ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
				defer cancel()
				p := mustSpawn(t, ctx, url, protocol)
				callCtx := ctx
				if tt.callTimeout > 0 {
					var cancelCall context.CancelFunc
					callCtx, cancelCall = context.WithTimeout(ctx, tt.callTimeout)
					defer cancelCall()
				}
				res, err := p.cs.CallTool(callCtx, &mcp.CallToolParams{Name: cw, Arguments: map[string]any{"entry": "entry-" + token}})
				switch {
				case tt.wantCallErr == nil && err != nil:
					t.Errorf("CallTool = %v, want a result", err)
				case tt.wantCallErr == nil && (res.IsError || res.Meta[ledger.StdioFaultMeta] != nil):
					t.Errorf("CallTool = %+v (meta %v), want a result without the ledger's directive", res.Content, res.Meta)
				case tt.wantCallErr != nil && (err == nil || !tt.wantCallErr(err)):
					t.Errorf("CallTool = %v, %v; want the error of the table", res, err)
				}
				if tt.wantExit == FaultExitCode {
					// The process exits on its own; the client's session ends.
					if err := p.cs.Wait(); err == nil {
						t.Logf("client session ended: %v", err)
					}
				}
				if got := p.exitCode(t); got != tt.wantExit {
					t.Errorf("ledger-stdio exit code = %d, want %d", got, tt.wantExit)
				}
				c := waitLedger(t, l, token, func(c wire.MCPCounts) bool { return c.Exits == 1 })
				if c.Writes != tt.wantWrites || c.CallsTotal() != 1 || c.Spawns != 1 || c.Exits != 1 {
					t.Errorf("ledger counts = %+v, want 1 call, %d writes, 1 spawn, 1 exit", c, tt.wantWrites)
				}
				if got := fileLines(t, path); len(got) != tt.wantWrites {
					t.Errorf("ledger file = %q, want %d lines", got, tt.wantWrites)
				}
				if diff := cmp.Diff(tt.wantEvents, stdioEvents(t, l, token)); diff != "" {
					t.Errorf("ledger events (-want +got):\n%s", diff)
				}
				if r := l.FaultReports(token); len(r) != 1 || r[0].Matched != 1 || r[0].Fired != 1 {
					t.Errorf("fault reports = %+v, want 1 matched, 1 fired", r)
				}
				for _, e := range l.Events(token) {
					if e.Kind == wire.MCPCall && e.Protocol != protocol {
						t.Errorf("the call was recorded at %q, want the client's %s", e.Protocol, protocol)
					}
				}
			})
		}
	}
}

// isEOF: the go-sdk client's CallTool when the process died before
// answering: `calling "tools/call": EOF` (its stdout ended).
func isEOF(err error) bool { return errors.Is(err, io.EOF) }

// isSyntaxError: the go-sdk client's CallTool when the process wrote a line
// that is not JSON before the answer: `calling "tools/call": invalid
// character 'l' looking for beginning of value`. The client's connection is
// broken from there on: the answer after the line is never read.
func isSyntaxError(err error) bool {
	var syntax *json.SyntaxError
	return errors.As(err, &syntax)
}

// TestStdioCrashLoop: stdio_exit at start with times 2 makes the first two
// spawns exit before serving (the client's Connect fails), and the third
// serves; the ledger counts the occurrences across the processes.
func TestStdioCrashLoop(t *testing.T) {
	const token = "rc0stdioCrash"
	l, url, path := stdioLedgerWith(t, token, ledger.Config{}, ledger.Fault{StdioExit: &ledger.StdioExit{At: ledger.StdioExitAtStart}, Times: fault.Times{Count: 2}})
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	for i := range 2 {
		p, err := spawn(t, ctx, url, "")
		if err == nil {
			t.Fatalf("spawn %d: Connect succeeded, want the process to exit at start", i+1)
		}
		// go-sdk v1.8.0 flattens the cause into the text: `connection
		// closed: calling "initialize": client is closing: EOF`.
		if msg := err.Error(); !strings.Contains(msg, `calling "initialize"`) || !strings.HasSuffix(msg, "EOF") {
			t.Errorf("spawn %d: Connect = %v, want initialize failing on the stdout's EOF", i+1, err)
		}
		if code := p.cmd.ProcessState.ExitCode(); code != FaultExitCode {
			t.Errorf("spawn %d: exit code %d, want %d", i+1, code, FaultExitCode)
		}
	}
	c := waitLedger(t, l, token, func(c wire.MCPCounts) bool { return c.Spawns == 2 && c.Exits == 2 })
	if c.Spawns != 2 || c.Exits != 2 {
		t.Errorf("after two crashes: counts = %+v, want 2 spawns, 2 exits", c)
	}
	p := mustSpawn(t, ctx, url, "")
	commitWrite(t, ctx, p.cs, "entry-"+token)
	if code := p.exitCode(t); code != 0 {
		t.Errorf("spawn 3: exit code %d, want 0", code)
	}
	c = waitLedger(t, l, token, func(c wire.MCPCounts) bool { return c.Exits == 3 })
	if c.Spawns != 3 || c.Exits != 3 || c.Writes != 1 {
		t.Errorf("counts = %+v, want 3 spawns, 3 exits (2 at start, 1 clean), 1 write", c)
	}
	var exits []string
	for _, e := range l.Events(token) {
		if e.Kind == wire.MCPExit {
			exits = append(exits, string(e.End)+" "+e.Fault)
		}
	}
	want := []string{"fault " + wire.MCPFaultStdioExitAtStart, "fault " + wire.MCPFaultStdioExitAtStart, string(wire.MCPExitStdinClosed) + " "}
	if diff := cmp.Diff(want, exits); diff != "" {
		t.Errorf("exit events' ends (-want +got):\n%s", diff)
	}
	if r := l.FaultReports(token); len(r) != 1 || r[0].Matched != 3 || r[0].Fired != 2 {
		t.Errorf("fault reports = %+v, want 3 matched, 2 fired", r)
	}
	if got := fileLines(t, path); len(got) != 1 {
		t.Errorf("ledger file = %q, want 1 line", got)
	}
}

// TestStdioExitInjected runs Serve in the test's process with Exit
// injected: the fault calls it with FaultExitCode, nothing of the answer is
// written on stdout, and Serve returns ErrExited.
func TestStdioExitInjected(t *testing.T) {
	const token = "rc0stdioInj"
	l, url, _ := stdioLedgerWith(t, token, ledger.Config{}, ledger.Fault{StdioExit: &ledger.StdioExit{}})
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	clientIn, serverOut := io.Pipe()
	serverIn, clientOut := io.Pipe()
	codes := make(chan int, 1)
	done := make(chan error, 1)
	go func() {
		done <- Serve(ctx, &Options{URL: url, PID: 77, In: serverIn, Out: serverOut, ErrOut: io.Discard, Exit: func(code int) { codes <- code }})
		_ = serverOut.Close() // as a dead process's stdout
	}()
	client := mcp.NewClient(&mcp.Implementation{Name: "test", Version: "1"}, nil)
	cs, err := client.Connect(ctx, &mcp.IOTransport{Reader: clientIn, Writer: clientOut}, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer cs.Close()
	if res, err := cs.CallTool(ctx, &mcp.CallToolParams{Name: ledger.ToolCommitWrite, Arguments: map[string]any{"entry": "e"}}); err == nil {
		t.Errorf("CallTool = %+v, want an error: the process died before answering", res)
	}
	select {
	case code := <-codes:
		if code != FaultExitCode {
			t.Errorf("exit code %d, want %d", code, FaultExitCode)
		}
	case <-ctx.Done():
		t.Fatal("Exit was not called")
	}
	if err := <-done; !errors.Is(err, ErrExited) {
		t.Errorf("Serve = %v, want ErrExited", err)
	}
	c := waitLedger(t, l, token, func(c wire.MCPCounts) bool { return c.Exits == 1 })
	if c.Exits != 1 || c.Writes != 1 {
		t.Errorf("counts = %+v, want 1 write, 1 exit", c)
	}
	// The dead process said no goodbye: its end is the fault's, once.
	for _, e := range l.Events(token) {
		if e.Kind == wire.MCPExit && (e.End != wire.MCPExitFault || e.Fault != wire.MCPFaultStdioExitAfterExecute || e.PID != "77") {
			t.Errorf("exit event %+v, want the fault's with pid 77", e)
		}
	}
}

// TestStdioKilled: a ledger-stdio process killed (SIGKILL) says no goodbye;
// the ledger notices its session's stream closing without a DELETE and
// records its end as gone, once.
func TestStdioKilled(t *testing.T) {
	const token = "rc0stdioKill"
	l, url, _ := stdioLedger(t, token)
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	p := mustSpawn(t, ctx, url, "")
	commitWrite(t, ctx, p.cs, "entry-"+token)
	if err := p.cmd.Process.Kill(); err != nil {
		t.Fatal(err)
	}
	c := waitLedger(t, l, token, func(c wire.MCPCounts) bool { return c.Exits == 1 })
	_ = p.cs.Close()
	if c.Spawns != 1 || c.Exits != 1 {
		t.Errorf("counts = %+v, want 1 spawn, 1 exit", c)
	}
	var exits []stdioEvent
	for _, e := range stdioEvents(t, l, token) {
		if e.Kind == wire.MCPExit {
			exits = append(exits, e)
		}
	}
	if diff := cmp.Diff([]stdioEvent{{Kind: wire.MCPExit, End: wire.MCPExitGone}}, exits); diff != "" {
		t.Errorf("exit events (-want +got):\n%s", diff)
	}
}

// TestStdioHangEndsWithTheLedger: a process hung by stdio_hang holds its
// answer until its stdin closes — or until the ledger ends its session (its
// run is over): it then exits on its own, so a client that gave up on the
// call and never closes the process's stdin (the built-in gateway's
// NoCancelOnTimeout) does not keep it, nor wait for it as it closes.
func TestStdioHangEndsWithTheLedger(t *testing.T) {
	const token = "rc0stdioHangLedger"
	l, err := ledger.New(ledger.Config{})
	if err != nil {
		t.Fatal(err)
	}
	srv := httptest.NewServer(runtoken.Handler(token, l))
	defer srv.Close()
	if err := l.Arm(token, []ledger.Fault{{Tool: ledger.ToolCommitWrite, StdioHang: &ledger.StdioHang{}, Times: fault.Once}}); err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	p := mustSpawn(t, ctx, srv.URL, "")
	callCtx, cancelCall := context.WithTimeout(ctx, 200*time.Millisecond)
	defer cancelCall()
	if _, err := p.cs.CallTool(callCtx, &mcp.CallToolParams{Name: ledger.ToolCommitWrite, Arguments: map[string]any{"entry": "e"}}); !errors.Is(err, context.DeadlineExceeded) {
		t.Fatalf("CallTool = %v, want the deadline: the process hangs", err)
	}
	waitLedger(t, l, token, func(c wire.MCPCounts) bool { return c.Writes == 1 })
	// The run is over: the ledger closes, stdin stays open.
	srv.CloseClientConnections()
	if err := l.Close(); err != nil {
		t.Fatal(err)
	}
	ended := make(chan struct{})
	go func() {
		_ = p.cs.Wait() // the process's stdout ends as it exits
		close(ended)
	}()
	select {
	case <-ended:
	case <-time.After(10 * time.Second):
		t.Fatal("the hung ledger-stdio process did not end when its ledger closed")
	}
}
