package ledger

import (
	"errors"
	"fmt"
	"os"
	"strings"
	"sync"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/replaycheck/replaycheck/internal/harness/process"
	"github.com/replaycheck/replaycheck/internal/secret"
)

// forwardStopGrace bounds each step of stopping a forwarded server when the
// ledger closes: the wait for it to exit after its stdin closed, then the
// wait between SIGTERM and SIGKILL of its process group.
const forwardStopGrace = 500 * time.Millisecond

// serverProcess is the process of a forwarded server (Forward.Command),
// started where client targets' are (process.Start): in a process group of
// its own, watched by the watchdog that kills the group should replaycheck
// die, and stopped with the whole group.
type serverProcess struct {
	proc   *process.Process
	stderr *process.Output
	where  string

	mu      sync.Mutex
	closing bool  // the ledger is closing: an exit is no death
	died    error // how it exited before the ledger closed; nil while it runs
}

// startServer starts cfg.Command with the scrubbed environment client
// targets get (process.Env) plus the variables cfg.PassEnv names and
// cfg.Env sets, and returns it with the stdio transport that speaks to it.
// A command that cannot run is a *process.CannotRunError carrying
// cfg.Install.
func startServer(cfg Forward) (*serverProcess, mcp.Transport, error) {
	parent := os.Environ()
	set := map[string]string{}
	for _, kv := range cfg.Env {
		k, v, _ := strings.Cut(kv, "=")
		set[k] = v
	}
	env := process.SetEnv(process.Env(parent, cfg.PassEnv), set)
	inR, inW, err := os.Pipe()
	if err != nil {
		return nil, nil, err
	}
	outR, outW, err := os.Pipe()
	if err != nil {
		inR.Close()
		inW.Close()
		return nil, nil, err
	}
	stderr := process.NewOutput(process.OutputBytes, secret.Environ(parent))
	p, err := process.Start(process.Command{Argv: cfg.Command, Env: env, Dir: cfg.Dir, Stdin: inR, Stdout: outW, Stderr: stderr})
	inR.Close() // the server's ends
	outW.Close()
	if err != nil {
		inW.Close()
		outR.Close()
		if cr, ok := errors.AsType[*process.CannotRunError](err); ok {
			cr.Install = cfg.Install
		}
		return nil, nil, fmt.Errorf("forward: starting the MCP server %s: %w", cfg.where(), err)
	}
	sp := &serverProcess{proc: p, stderr: stderr, where: cfg.where()}
	return sp, &mcp.IOTransport{Reader: outR, Writer: inW}, nil
}

// watch calls exited with how the process exited, once, should it exit
// before the ledger closes; the rest of its group is then killed, so that
// nothing it started outlives it.
func (sp *serverProcess) watch(exited func(error)) {
	<-sp.proc.Done()
	sp.mu.Lock()
	if sp.closing {
		sp.mu.Unlock()
		return
	}
	sp.died = fmt.Errorf("the MCP server %s %s%s", sp.where, sp.proc.ExitDescription(), sp.tail())
	died := sp.died
	sp.mu.Unlock()
	_ = sp.proc.Stop(0)
	exited(died)
}

// gone returns how the process exited before the ledger closed; nil while
// it runs.
func (sp *serverProcess) gone() error {
	sp.mu.Lock()
	defer sp.mu.Unlock()
	return sp.died
}

// tail renders the last lines the process wrote on stderr.
func (sp *serverProcess) tail() string {
	return process.Tail("the MCP server", sp.stderr.Lines())
}

// failed says what became of a process whose session could not be set up:
// how it exited (waiting forwardStopGrace for that), and its stderr's last
// lines. The process is stopped.
func (sp *serverProcess) failed() string {
	t := time.NewTimer(forwardStopGrace)
	defer t.Stop()
	select {
	case <-sp.proc.Done():
	case <-t.C:
	}
	sp.mu.Lock()
	sp.closing = true
	sp.mu.Unlock()
	exited := sp.proc.Exited()
	_ = sp.proc.Stop(0)
	if exited {
		return "; it " + sp.proc.ExitDescription() + sp.tail()
	}
	return sp.tail()
}

// stop stops the process and its group, its stdin already closed: it
// gets forwardStopGrace to exit on that, then SIGTERM and forwardStopGrace
// more before SIGKILL.
func (sp *serverProcess) stop() error {
	sp.mu.Lock()
	sp.closing = true
	sp.mu.Unlock()
	t := time.NewTimer(forwardStopGrace)
	defer t.Stop()
	select {
	case <-sp.proc.Done():
	case <-t.C:
	}
	return sp.proc.Stop(forwardStopGrace)
}
