package gateway

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"os/signal"
	"syscall"
	"time"
)

// ProcessCommand is the name of the hidden replaycheck command that runs
// the built-in gateway as a process of its own, for scenarios that kill it
// and resume it: `replaycheck gateway-process SPEC.json`.
const ProcessCommand = "gateway-process"

// ProcessSpec is what a gateway process runs (the JSON file its command
// names).
type ProcessSpec struct {
	// Addr is the loopback address to listen on; port 0 picks one.
	Addr string `json:"addr"`
	// Upstream, MCP, MCPCommand, NumRetries, Fallbacks, ToolTimeout,
	// StreamIdleTimeout and Checkpoint are the gateway's Config fields.
	Upstream          string            `json:"upstream"`
	MCP               string            `json:"mcp"`
	MCPCommand        []string          `json:"mcp_command,omitempty"`
	Bugs              []Bug             `json:"bugs,omitempty"`
	NumRetries        int               `json:"num_retries,omitempty"`
	Fallbacks         map[string]string `json:"fallbacks,omitempty"`
	ToolTimeout       time.Duration     `json:"tool_timeout,omitempty"`
	StreamIdleTimeout time.Duration     `json:"stream_idle_timeout,omitempty"`
	Checkpoint        string            `json:"checkpoint"`
	// Resume continues the checkpoint's pending turns (Gateway.Resume)
	// once the process listens.
	Resume bool `json:"resume,omitempty"`
}

// ProcessEvent is one line a gateway process writes on its standard output
// (JSON): that it listens, and, resumed, that it finished resuming.
type ProcessEvent struct {
	// Listening is the base URL it serves at.
	Listening string `json:"listening,omitempty"`
	// Resumed is set once the pending turns were resumed: each one's end.
	Resumed []ResumedTurnEvent `json:"resumed,omitempty"`
	// ResumeDone is set with Resumed (also when no turn was pending).
	ResumeDone bool `json:"resume_done,omitempty"`
}

// ResumedTurnEvent is a resumed turn's end as a ProcessEvent carries it.
type ResumedTurnEvent struct {
	Turn   string `json:"turn"`
	Answer string `json:"answer,omitempty"`
	Error  string `json:"error,omitempty"`
}

// ProcessMain runs a gateway process when args are [ProcessCommand, SPEC]
// and returns its exit code and true; for other args it returns false. It
// serves until SIGTERM or SIGINT, then lets requests in flight finish (the
// one who sent the signal decides how long). A test binary that stands in
// for replaycheck calls it first thing.
func ProcessMain(args []string) (int, bool) {
	if len(args) != 2 || args[0] != ProcessCommand {
		return 0, false
	}
	ctx, stop := signal.NotifyContext(context.Background(), syscall.SIGTERM, os.Interrupt)
	defer stop()
	if err := ServeProcess(ctx, args[1], os.Stdout); err != nil {
		fmt.Fprintln(os.Stderr, "gateway-process:", err)
		return 1, true
	}
	return 0, true
}

// ServeProcess runs the gateway the spec file at path describes until ctx
// ends, writing its ProcessEvents to out, then lets the requests in flight
// finish (whoever ended ctx decides how long: a SIGTERM, then a SIGKILL).
func ServeProcess(ctx context.Context, path string, out io.Writer) error {
	b, err := os.ReadFile(path)
	if err != nil {
		return fmt.Errorf("reading the spec: %w", err)
	}
	var spec ProcessSpec
	if err := json.Unmarshal(b, &spec); err != nil {
		return fmt.Errorf("reading the spec %s: %w", path, err)
	}
	bugs := Bugs{}
	for _, b := range spec.Bugs {
		bugs[b] = true
	}
	g, err := New(Config{
		Upstream: spec.Upstream, MCP: spec.MCP, MCPCommand: spec.MCPCommand, Bugs: bugs, NumRetries: spec.NumRetries,
		Fallbacks: spec.Fallbacks, ToolTimeout: spec.ToolTimeout, StreamIdleTimeout: spec.StreamIdleTimeout, Checkpoint: spec.Checkpoint,
	})
	if err != nil {
		return err
	}
	defer g.Close()
	ln, err := net.Listen("tcp", spec.Addr)
	if err != nil {
		return fmt.Errorf("listening: %w", err)
	}
	srv := &http.Server{Handler: g, ReadHeaderTimeout: 10 * time.Second}
	served := make(chan error, 1)
	go func() { served <- srv.Serve(ln) }()
	enc := json.NewEncoder(out)
	if err := enc.Encode(ProcessEvent{Listening: "http://" + ln.Addr().String()}); err != nil {
		return err
	}
	if spec.Resume {
		turns, err := g.Resume(ctx)
		ev := ProcessEvent{ResumeDone: true}
		for _, t := range turns {
			r := ResumedTurnEvent{Turn: t.ID, Answer: t.Answer}
			if t.Err != nil {
				r.Error = t.Err.Error()
			}
			ev.Resumed = append(ev.Resumed, r)
		}
		if err != nil {
			fmt.Fprintln(os.Stderr, "gateway-process: resuming:", err)
		}
		if err := enc.Encode(ev); err != nil {
			return err
		}
	}
	select {
	case err := <-served:
		return err
	case <-ctx.Done():
	}
	// In-flight requests finish; a SIGKILL after the sender's grace ends it.
	if err := srv.Shutdown(context.Background()); err != nil && !errors.Is(err, http.ErrServerClosed) {
		return err
	}
	return nil
}
