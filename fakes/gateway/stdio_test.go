//go:build unix

package gateway

import (
	"context"
	"log/slog"
	"os"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/replaycheck/replaycheck/internal/procgone"
	"github.com/replaycheck/replaycheck/internal/syncbuf"
)

// stdioRig is a rig whose gateway spawns the stdio ledger of dyingCommand
// (exiting at point in its first times processes), and the directory where
// the processes leave their pids.
func stdioRig(t *testing.T, bugs Bugs, point string, times int, tweak func(*Config)) (*rig, string, *syncbuf.Buffer) {
	t.Helper()
	dir := t.TempDir()
	log := &syncbuf.Buffer{}
	r := newRig(t, bugs, func(c *Config) {
		c.MCPCommand = dyingCommand(t, dir, point, times, c.MCP)
		c.Logger = slog.New(slog.NewTextHandler(log, &slog.HandlerOptions{Level: slog.LevelDebug}))
		if tweak != nil {
			tweak(c)
		}
	})
	return r, dir, log
}

// TestStdioOutcomes runs the seed's chat request (twice where said) on a
// gateway in stdio mode whose server process dies at each point, guarded,
// and checks the counts, what the model was told, and that no process is
// left after Close.
func TestStdioOutcomes(t *testing.T) {
	tests := []struct {
		name     string
		point    string
		times    int
		requests int
		tweak    func(*Config)
		// settle waits between the requests until the process that
		// served the last one ended (it may take milliseconds to exit
		// after answering; a call written to it meanwhile is in flight
		// when it dies).
		settle bool
		want   observed
		// logged is in the gateway's log: what it did with the call.
		logged string
	}{
		{name: "no death: one process serves both requests", point: dieAfterExecute, times: 0, requests: 2,
			want: observed{Statuses: []int{200, 200}, Calls: 2, Writes: 2, Initial: 2, FollowUp: 2, Spawns: 1}, logged: "mcp call sending"},
		// The follow-up round lists the tools anew, on a new process.
		{name: "dies after executing: not re-sent", point: dieAfterExecute, times: 1, requests: 1,
			want:   observed{Statuses: []int{200}, Calls: 1, Writes: 1, Initial: 1, FollowUp: 1, Spawns: 2},
			logged: "mcp call outcome unknown"},
		{name: "dies after executing: the next request respawns", point: dieAfterExecute, times: 1, requests: 2,
			want:   observed{Statuses: []int{200, 200}, Calls: 2, Writes: 2, Initial: 2, FollowUp: 2, Spawns: 2},
			logged: "mcp call outcome unknown"},
		{name: "dies before executing, after reading the call: not re-sent", point: dieBeforeExecute, times: 1, requests: 1,
			want:   observed{Statuses: []int{200}, Calls: 0, Writes: 0, Initial: 1, FollowUp: 1, Spawns: 2},
			logged: "mcp call outcome unknown"},
		{name: "dies after answering: the next request respawns", point: dieAfterAnswer, times: 1, requests: 2, settle: true,
			want:   observed{Statuses: []int{200, 200}, Calls: 2, Writes: 2, Initial: 2, FollowUp: 2, Spawns: 2},
			logged: "mcp call sending"},
		{name: "hangs after executing: the tool timeout ends it", point: hangAfterExecute, times: 1, requests: 1,
			tweak:  func(c *Config) { c.ToolTimeout = 200e6 },
			want:   observed{Statuses: []int{200}, Calls: 1, Writes: 1, Initial: 1, FollowUp: 1, Spawns: 2},
			logged: "mcp call timed out; cancelled"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			r, dir, log := stdioRig(t, nil, tt.point, tt.times, tt.tweak)
			var statuses []int
			for i := range tt.requests {
				if i > 0 && tt.settle {
					r.waitSessionEnd()
				}
				status, _ := r.post(pathChat, seedBody(pathChat, seedAsk, false, false))
				statuses = append(statuses, status)
			}
			got := r.observe(statuses, 0)
			if diff := cmp.Diff(tt.want, got); diff != "" {
				t.Errorf("counts (-want +got):\n%s", diff)
			}
			if testing.Verbose() {
				t.Log(log.String())
			}
			if !strings.Contains(log.String(), tt.logged) {
				t.Errorf("the gateway did not log %q:\n%s", tt.logged, log)
			}
			pids := spawnedPIDs(t, dir)
			if len(pids) != got.Spawns {
				t.Errorf("%d processes started, the ledger counted %d spawns", len(pids), got.Spawns)
			}
			procgone.AssertGone(t, pids)
		})
	}
}

// TestStdioCloseEndsTheProcess checks that Close ends the stdio server
// process of a gateway whose session is alive.
func TestStdioCloseEndsTheProcess(t *testing.T) {
	r, dir, _ := stdioRig(t, nil, dieAtStart, 0, nil)
	if status, body := r.post(pathChat, seedBody(pathChat, seedAsk, false, false)); status != 200 {
		t.Fatalf("status %d: %s", status, body)
	}
	pids := spawnedPIDs(t, dir)
	if len(pids) != 1 {
		t.Fatalf("%d processes started, want 1", len(pids))
	}
	if err := syscall.Kill(pids[0], 0); err != nil {
		t.Fatalf("the stdio server is not running before Close: %v", err)
	}
	if err := r.gw.Close(); err != nil {
		t.Fatalf("Close: %v", err)
	}
	procgone.AssertGone(t, pids)
}

// waitSessionEnd waits up to a minute for the gateway's shared MCP session
// to end.
func (r *rig) waitSessionEnd() {
	r.t.Helper()
	r.gw.pool.mu.Lock()
	s := r.gw.pool.cur
	r.gw.pool.mu.Unlock()
	if s == nil {
		return
	}
	select {
	case <-s.dead:
	case <-time.After(time.Minute):
		r.t.Fatal("the MCP session did not end within a minute")
	}
}

// fakeConn is a Connection whose Write returns err.
type fakeConn struct {
	mcp.Connection
	err error
}

func (c fakeConn) Write(context.Context, jsonrpc.Message) error { return c.err }

// TestStdioConnMarksWrittenCalls checks what the stdio connection records
// of a call's request: written, or provably not.
func TestStdioConnMarksWrittenCalls(t *testing.T) {
	id, _ := jsonrpc.MakeID(float64(7))
	small := &jsonrpc.Request{ID: id, Method: "tools/call", Params: []byte(`{"name":"commit_write"}`)}
	big := &jsonrpc.Request{ID: id, Method: "tools/call", Params: []byte(`{"name":"commit_write","arguments":{"entry":"` + strings.Repeat("x", pipeAtomic) + `"}}`)}
	tests := []struct {
		name     string
		err      error
		msg      jsonrpc.Message
		wantSent bool
	}{
		{"written", nil, small, true},
		{"the pipe refused a short line", syscall.EPIPE, small, false},
		{"stdin was closed", os.ErrClosed, small, false},
		{"the context ended first", context.Canceled, small, false},
		{"the pipe refused a long line, maybe in part", syscall.EPIPE, big, true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			ctx, mark := withSendMark(context.Background())
			wrote := false
			ctx = context.WithValue(ctx, wroteKey{}, func() { wrote = true })
			_ = stdioConn{fakeConn{err: tt.err}}.Write(ctx, tt.msg)
			if got := mark.sent.Load(); got != tt.wantSent {
				t.Errorf("sent = %v, want %v", got, tt.wantSent)
			}
			if wrote != (tt.err == nil) {
				t.Errorf("the tool timeout started = %v, want %v", wrote, tt.err == nil)
			}
		})
	}
}
