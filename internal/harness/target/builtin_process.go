package target

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"time"

	"github.com/replaycheck/replaycheck/fakes/gateway"
	"github.com/replaycheck/replaycheck/internal/harness/app"
	"github.com/replaycheck/replaycheck/internal/harness/history"
	"github.com/replaycheck/replaycheck/internal/harness/process"
)

// gatewayStopGrace is the time a gateway process gets between SIGTERM and
// SIGKILL when its instance closes.
const gatewayStopGrace = time.Second

// gatewayReadyWork and gatewayReadyWall bound a gateway process's start
// (see process.WorkBound): listening takes it a few tens of milliseconds
// of CPU time, so one that worked gatewayReadyWork without listening is
// stuck; a machine too busy to give it that much in gatewayReadyWall
// cannot run the scenario.
const (
	gatewayReadyWork = 10 * time.Second
	gatewayReadyWall = 5 * time.Minute
)

// gatewayOutputBytes bounds what is kept of a gateway process's output.
const gatewayOutputBytes = 16 << 10

var _ Reachable = (*gatewayProcess)(nil)

// gatewayProcess is the built-in gateway run as a process of its own
// (replaycheck gateway-process), with a checkpoint file in a run directory
// of its own: an instance a scenario can kill (Fakes.Killable), resumed as
// the same gateway on the same address reading the same checkpoint.
type gatewayProcess struct {
	name   string
	exe    string
	dir    string // the run directory: the spec and the checkpoint
	spec   gateway.ProcessSpec
	setup  history.Setup
	output *process.Output

	mu   sync.Mutex
	proc *process.Process
	app  *app.Client
}

// startProcess starts the gateway cfg describes as a process of its own,
// with a checkpoint, and waits until it listens.
func (b *builtin) startProcess(ctx context.Context, cfg gateway.Config, setup history.Setup) (Instance, error) {
	exe, err := os.Executable()
	if err != nil {
		return nil, fmt.Errorf("starting %s as a process: finding replaycheck's own binary: %w", b.name, err)
	}
	dir, err := os.MkdirTemp("", "replaycheck-gateway-")
	if err != nil {
		return nil, fmt.Errorf("starting %s as a process: %w", b.name, err)
	}
	g := &gatewayProcess{
		name: b.name, exe: exe, dir: dir, setup: setup, output: process.NewOutput(gatewayOutputBytes, nil),
		spec: gateway.ProcessSpec{
			Addr: "127.0.0.1:0", Upstream: cfg.Upstream, MCP: cfg.MCP, MCPCommand: cfg.MCPCommand, Bugs: cfg.Bugs.Names(),
			NumRetries: cfg.NumRetries, Fallbacks: cfg.Fallbacks, ToolTimeout: cfg.ToolTimeout, StreamIdleTimeout: cfg.StreamIdleTimeout,
			Checkpoint: filepath.Join(dir, "checkpoint.jsonl"),
		},
	}
	p, events, err := g.start(ctx, false, nil)
	if err != nil {
		os.RemoveAll(dir)
		return nil, err
	}
	g.proc = p
	go drain(events)
	return g, nil
}

// start starts a life of the gateway process (resume: continuing the
// checkpoint's pending turns) and waits (see gatewayReadyWork) until
// it listens or reached is closed (a resumed life at its kill point); the
// first life's address is every later one's. It returns the process and
// its further events.
func (g *gatewayProcess) start(ctx context.Context, resume bool, reached <-chan struct{}) (*process.Process, <-chan gateway.ProcessEvent, error) {
	spec := g.spec
	spec.Resume = resume
	b, err := json.Marshal(spec)
	if err != nil {
		return nil, nil, err
	}
	path := filepath.Join(g.dir, "gateway.json")
	if err := os.WriteFile(path, b, 0o600); err != nil {
		return nil, nil, fmt.Errorf("starting %s as a process: %w", g.name, err)
	}
	pr, pw := io.Pipe()
	begin := time.Now()
	p, err := process.Start(process.Command{
		Argv: []string{g.exe, gateway.ProcessCommand, path}, Env: os.Environ(),
		Stdout: pw, Stderr: g.output, Leftovers: []string{g.dir},
	})
	if err != nil {
		pw.Close()
		return nil, nil, fmt.Errorf("starting %s as a process: %w", g.name, err)
	}
	events := make(chan gateway.ProcessEvent, 4)
	go func() {
		defer close(events)
		sc := bufio.NewScanner(pr)
		for sc.Scan() {
			var ev gateway.ProcessEvent
			if json.Unmarshal(sc.Bytes(), &ev) == nil {
				events <- ev
			}
		}
		_, _ = io.Copy(io.Discard, pr)
	}()
	go func() {
		<-p.Done()
		pw.Close()
	}()
	ready, cancel := p.WorkBound(ctx, gatewayReadyWork, gatewayReadyWall)
	defer cancel()
	select {
	case ev, ok := <-events:
		if ok && ev.Listening != "" {
			if g.app == nil {
				g.spec.Addr = strings.TrimPrefix(ev.Listening, "http://")
				g.app = app.New(ev.Listening, nil, nil)
			}
			return p, events, nil
		}
		_ = p.Stop(0)
		return nil, nil, fmt.Errorf("%s as a process exited before it listened%s", g.name, process.Tail(g.name, g.output.Lines()))
	case <-reached: // nil: never
		return p, events, nil
	case <-ready.Done():
		cpu, _ := p.CPUTime()
		_ = p.Stop(0)
		if ctx.Err() != nil {
			return nil, nil, ctx.Err()
		}
		return nil, nil, fmt.Errorf("%s as a process did not listen in %s (%s of CPU time): %w",
			g.name, time.Since(begin).Round(time.Millisecond), cpu, context.Cause(ready))
	}
}

// drain reads events to their end.
func drain(events <-chan gateway.ProcessEvent) {
	for range events {
	}
}

// Send sends the app request; with req.Kill it kills the gateway process at
// the kill point and resumes it: the app's connection breaks with the kill,
// the resumed gateway continues the pending turn from its checkpoint, and
// the harness does not send the request again.
func (g *gatewayProcess) Send(ctx context.Context, req Request) history.Exchange {
	g.mu.Lock()
	client, p := g.app, g.proc
	g.mu.Unlock()
	if req.Kill == nil {
		return client.Send(ctx, req.Request)
	}
	answered := make(chan struct{})
	var x history.Exchange
	go func() {
		defer close(answered)
		x = client.Send(ctx, req.Request)
	}()
	first := life{proc: p, start: time.Now(), done: answered, outcome: func() (int, bool, string) {
		return -1, x.CleanEnd, x.Body
	}}
	last, err := req.Kill.lives(ctx, first, func(ctx context.Context, n int, reached <-chan struct{}) (life, error) {
		rp, events, err := g.start(ctx, true, reached)
		if err != nil {
			return life{}, err
		}
		done := make(chan struct{})
		var resumed gateway.ProcessEvent
		go func() {
			defer close(done)
			for ev := range events {
				if ev.ResumeDone {
					resumed = ev
					go drain(events)
					return
				}
			}
		}()
		return life{proc: rp, start: time.Now(), done: done, outcome: func() (int, bool, string) {
			return resumedOutcome(resumed)
		}}, nil
	})
	g.mu.Lock()
	g.proc = last.proc
	g.mu.Unlock()
	<-answered // the kill broke it, or ctx ended it
	if err != nil {
		x.TransportError = err.Error()
	}
	return x
}

// resumedOutcome is a resumed life's outcome: no exit code (the gateway
// serves on), success when every resumed turn ended with an answer, and
// their answers.
func resumedOutcome(ev gateway.ProcessEvent) (int, bool, string) {
	ok := len(ev.Resumed) > 0
	var said []string
	for _, t := range ev.Resumed {
		if t.Error != "" {
			ok = false
			said = append(said, "error: "+t.Error)
			continue
		}
		said = append(said, t.Answer)
	}
	return -1, ok, strings.Join(said, "; ")
}

func (g *gatewayProcess) Limits() history.Setup { return g.setup }

// Notes is nil: the gateway takes every knob.
func (g *gatewayProcess) Notes() []string { return nil }

// Output is what the gateway processes printed on stderr.
func (g *gatewayProcess) Output() *process.Output { return g.output }

// CannotRun is nil: the gateway is replaycheck itself.
func (g *gatewayProcess) CannotRun() error { return nil }

// BaseURL is the gateway process's loopback URL; it needs no headers.
func (g *gatewayProcess) BaseURL() (string, http.Header) {
	g.mu.Lock()
	defer g.mu.Unlock()
	return g.app.Endpoint()
}

// Close stops the gateway process's group and removes its run directory.
func (g *gatewayProcess) Close() error {
	g.mu.Lock()
	p := g.proc
	g.mu.Unlock()
	err := p.Stop(gatewayStopGrace)
	g.app.Close()
	if rerr := os.RemoveAll(g.dir); rerr != nil && !errors.Is(rerr, os.ErrNotExist) && err == nil {
		err = rerr
	}
	return err
}
