// Package process runs the programs the harness starts for a target (a
// proxy, a client): Start puts a command in a process group of its own,
// watched by a watchdog that kills the group and removes its leftovers
// should the harness die; Stop sends SIGTERM and SIGKILL after a grace; an
// Output keeps the scrubbed end of what a process writes; Env is the
// environment every process starts from. Proxies, clients and forwarded MCP
// servers all start here, and nowhere else.
package process

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"time"

	"github.com/replaycheck/replaycheck/internal/secret"
)

// Bounds of the processes the harness starts.
const (
	// outputLines is how many of a target's last output lines are kept.
	outputLines = 40
	// outputLineBytes bounds one kept line.
	outputLineBytes = 512
	// OutputBytes bounds what is kept of a proxy's output.
	OutputBytes = outputLines * outputLineBytes
	// DefaultStopGrace is how long a stopped process group gets between
	// SIGTERM and SIGKILL.
	DefaultStopGrace = 5 * time.Second
	// pipeGrace bounds the wait for output pipes after the leader exited
	// (a grandchild may hold them open).
	pipeGrace = time.Second
	// goneGrace bounds the wait for a killed group's last members to go.
	goneGrace = 2 * time.Second
	// graceStretch bounds how far a stop's grace stretches for a group the
	// machine starved (see awaitExit): this many times the grace in all.
	graceStretch = 5
)

// Process is a command started in a process group of its own, so that it is
// stopped with everything it started — also when the harness itself is
// killed (on Unix; elsewhere see process_other.go). Proxies, clients and
// forwarded MCP servers are all run as one.
type Process struct {
	cmd  *exec.Cmd
	pgid int
	done chan struct{} // closed when the leader was reaped
	err  error         // the leader's wait error, set before done closes
	stop sync.Once
	// killedAfterGrace is set when Stop killed the group because it had not
	// exited within its grace after SIGTERM.
	killedAfterGrace atomic.Bool
	// unguard stops the watchdog that kills the group should the harness
	// die without stopping it (guardGroup).
	unguard func()
}

// Command is what Start runs.
type Command struct {
	// Argv is the command line; Argv[0] is looked up in PATH unless it
	// contains a slash, else taken relative to Dir.
	Argv []string
	// Env is the whole environment.
	Env []string
	// Dir is the working directory; "" is the harness's.
	Dir string
	// Stdin is the standard input; nil reads nothing (the null device).
	Stdin io.Reader
	// Stdout and Stderr receive the output; they may be the same writer.
	Stdout, Stderr io.Writer
	// Leftovers are files and directories the command's run leaves (a
	// rendered config, a scratch directory): the watchdog removes them
	// should the harness die before it removed them itself.
	Leftovers []string
}

// Start starts c in a new process group, watched by a watchdog. A
// command that is not found or not executable is a *CannotRunError. The
// caller stops the process (Stop).
func Start(c Command) (*Process, error) {
	argv := c.Argv
	if len(argv) == 0 || argv[0] == "" {
		return nil, errors.New("empty command")
	}
	if err := CheckDir(c.Dir, "start.dir"); err != nil {
		return nil, err
	}
	path, err := Resolve(argv[0], c.Dir)
	if err != nil {
		return nil, &CannotRunError{Command: argv[0], Err: err}
	}
	cmd := exec.Command(path, argv[1:]...)
	cmd.Args[0] = argv[0]
	cmd.Env = c.Env
	cmd.Dir = c.Dir
	cmd.Stdin, cmd.Stdout, cmd.Stderr = c.Stdin, c.Stdout, c.Stderr
	newGroup(cmd)
	cmd.WaitDelay = pipeGrace
	if err := cmd.Start(); err != nil {
		err = fmt.Errorf("starting %q: %w", argv[0], err)
		if notRunnable(err) {
			return nil, &CannotRunError{Command: argv[0], Err: err}
		}
		return nil, err
	}
	p := &Process{cmd: cmd, pgid: cmd.Process.Pid, done: make(chan struct{}), unguard: guardGroup(cmd.Process.Pid, c.Leftovers)}
	go func() {
		p.err = cmd.Wait()
		close(p.done)
	}()
	return p, nil
}

// CannotRunError is a target whose command could not run at all: it is not
// found or not executable. The target's setup is wrong, not a replay rule
// (the run stops, exit 3). Its message says what did not run and how to
// install it; the caller names the target.
type CannotRunError struct {
	// Command is the command that did not run (argv[0]).
	Command string
	// Install says how to install the command; "" when the target file
	// does not.
	Install string
	// Err says what went wrong.
	Err error
}

func (e *CannotRunError) Error() string {
	how := "; install it, or fix the command in the target file"
	if e.Install != "" {
		how = "; install it with: " + e.Install
	}
	return e.Err.Error() + how
}

func (e *CannotRunError) Unwrap() error { return e.Err }

// notRunnable reports whether err of starting a command says the file
// cannot run: missing (also its script's interpreter), not permitted, or no
// program (exec format error); not a lack of resources.
func notRunnable(err error) bool {
	return errors.Is(err, fs.ErrNotExist) || errors.Is(err, fs.ErrPermission) || errors.Is(err, syscall.ENOEXEC)
}

// CheckDir reports a working directory that does not exist or is not a
// directory; field names where the target file sets it. "" is no error.
func CheckDir(dir, field string) error {
	if dir == "" {
		return nil
	}
	fi, err := os.Stat(dir)
	switch {
	case errors.Is(err, fs.ErrNotExist):
		return fmt.Errorf("working directory %s (%s) does not exist", dir, field)
	case err != nil:
		return fmt.Errorf("working directory %s (%s): %w", dir, field, err)
	case !fi.IsDir():
		return fmt.Errorf("working directory %s (%s) is not a directory", dir, field)
	}
	return nil
}

// Resolve finds argv0: in PATH when it has no slash, else as a path
// relative to dir.
func Resolve(argv0, dir string) (string, error) {
	if !strings.Contains(argv0, "/") {
		p, err := exec.LookPath(argv0)
		if err != nil {
			return "", fmt.Errorf("command %q not found in PATH: %w", argv0, err)
		}
		return p, nil
	}
	p := argv0
	if !filepath.IsAbs(p) && dir != "" {
		p = filepath.Join(dir, p)
	}
	abs, err := filepath.Abs(p)
	if err != nil {
		return "", fmt.Errorf("command %q: %w", argv0, err)
	}
	fi, err := os.Stat(abs)
	switch {
	case err != nil:
		return "", fmt.Errorf("command %q not found (%s): %w", argv0, abs, err)
	case fi.IsDir() || fi.Mode()&0o111 == 0:
		return "", fmt.Errorf("command %q (%s) is not an executable file", argv0, abs)
	}
	return abs, nil
}

// Done is closed when the process (the group's leader) has exited.
func (p *Process) Done() <-chan struct{} { return p.done }

// ExitDescription says how the leader ended; call it after Done.
func (p *Process) ExitDescription() string {
	var ee *exec.ExitError
	switch {
	case p.err == nil:
		return "exited with code 0"
	case errors.As(p.err, &ee):
		if ws, ok := ee.Sys().(syscall.WaitStatus); ok && ws.Signaled() {
			return "was killed by " + signalName(ws.Signal())
		}
		return fmt.Sprintf("exited with code %d", ee.ExitCode())
	}
	return p.err.Error()
}

// PID returns the process's id, its group's id.
func (p *Process) PID() int { return p.pgid }

// ExitCode is the leader's exit code, -1 when it was killed; call it after
// Done.
func (p *Process) ExitCode() int { return p.cmd.ProcessState.ExitCode() }

// Exited reports whether the leader has exited.
func (p *Process) Exited() bool {
	select {
	case <-p.done:
		return true
	default:
		return false
	}
}

// CPUTime returns the CPU time the leader has used so far; known is false
// when the system cannot say (no /proc, or the leader is gone).
func (p *Process) CPUTime() (d time.Duration, known bool) { return cpuTime(p.pgid) }

// RunDelay returns the longest any live process of p's group has waited
// for a CPU while it could run, since it started: the share of its wall
// time the machine's load, not the process, took. known is false when the
// system cannot say (no /proc, or every process is gone).
func (p *Process) RunDelay() (d time.Duration, known bool) { return groupRunDelay(p.pgid) }

// workPoll is how often WorkBound reads the leader's CPU time.
const workPoll = 100 * time.Millisecond

// WorkBound returns ctx bounded by the work the leader does: it ends once
// the leader has used work of CPU time, or after wall, whichever comes
// first (wall alone where CPU time cannot be read). A wait for the
// process bounded so ends as soon as when idle if the process is stuck
// working, and waits longer on a busy machine, which gives it less of the
// CPUs, instead of blaming the process for the machine's load. The cancel
// func releases it.
func (p *Process) WorkBound(ctx context.Context, work, wall time.Duration) (context.Context, context.CancelFunc) {
	ctx, cancelWall := context.WithTimeout(ctx, wall)
	ctx, cancel := context.WithCancelCause(ctx)
	go func() {
		t := time.NewTicker(workPoll)
		defer t.Stop()
		for {
			select {
			case <-ctx.Done():
				return
			case <-p.done:
				return
			case <-t.C:
			}
			d, known := p.CPUTime()
			if !known {
				return
			}
			if d >= work {
				cancel(fmt.Errorf("it worked %s of CPU time: %w", d, context.DeadlineExceeded))
				return
			}
		}
	}()
	return ctx, func() { cancel(context.Canceled); cancelWall() }
}

// Listens reports whether a process of p's group (or a descendant of its
// leader) holds a socket listening on TCP port; known is false when the
// system cannot say (see groupListens).
func (p *Process) Listens(port int) (owned, known bool) { return groupListens(port, p.pgid) }

// Stop stops the whole process group: a graceful stop (SIGTERM, where there
// is one), then SIGKILL after grace (0 means at once), and waits until the
// leader is reaped and no member of the group is left, or goneGrace passed.
// It is safe to call more than once.
func (p *Process) Stop(grace time.Duration) error {
	var err error
	p.stop.Do(func() { err = p.stopGroup(grace) })
	return err
}

// KilledAfterGrace reports whether Stop, given a grace, killed the group
// (SIGKILL) because the process had not exited within it after SIGTERM.
func (p *Process) KilledAfterGrace() bool { return p.killedAfterGrace.Load() }

func (p *Process) stopGroup(grace time.Duration) error {
	if grace > 0 && terminateGroup(p.pgid) && !p.awaitExit(grace) {
		p.killedAfterGrace.Store(true)
	}
	// The leader may be gone while members it started still run.
	_ = killGroup(p.pgid, p.cmd.Process)
	<-p.done // bounded: a kill cannot be ignored, and WaitDelay bounds the pipes
	err := waitGroupGone(p.pgid, goneGrace)
	p.unguard()
	return err
}

// awaitExit waits for the process to exit after SIGTERM, up to grace, and
// reports whether it did. The grace is time the group could run: the time
// its processes waited for a CPU meanwhile (their run delay) is added to
// it, up to graceStretch times the grace in all, so that a process the
// machine starved is not killed for being slow to stop — a SIGTERM handler
// that saves state (Claude Code's) would otherwise do something else under
// load than idle.
func (p *Process) awaitExit(grace time.Duration) bool {
	start := time.Now()
	before, _ := groupRunDelay(p.pgid)
	end := start.Add(grace)
	for {
		t := time.NewTimer(time.Until(end))
		select {
		case <-p.done:
			t.Stop()
			return true
		case <-t.C:
		}
		now, known := groupRunDelay(p.pgid)
		next := start.Add(min(grace+max(now-before, 0), graceStretch*grace))
		if !known || !next.After(end) {
			return false
		}
		end = next
	}
}

// Output keeps the end of what a process writes, up to max bytes, and
// scrubs it when read: the secrets it was made with, and anything shaped like
// an API key (secret.Scrub), become "***". It is safe for concurrent use.
type Output struct {
	mu      sync.Mutex
	max     int
	b       []byte
	cut     bool   // bytes were dropped from the front
	lines   uint64 // newlines written
	secrets []string
}

// NewOutput returns an Output that keeps max bytes and masks secrets.
func NewOutput(max int, secrets []string) *Output {
	return &Output{max: max, secrets: secrets}
}

// Write keeps the end of what was written.
func (o *Output) Write(p []byte) (int, error) {
	o.mu.Lock()
	defer o.mu.Unlock()
	o.lines += uint64(bytes.Count(p, []byte{'\n'}))
	if len(p) >= o.max {
		o.b = append(o.b[:0], p[len(p)-o.max:]...)
		o.cut = true
		return len(p), nil
	}
	o.b = append(o.b, p...)
	if over := len(o.b) - o.max; over > 0 {
		o.b = append(o.b[:0], o.b[over:]...)
		o.cut = true
	}
	return len(p), nil
}

// text is what is kept, scrubbed; a line cut at the front is left out (a
// secret in it would be cut too, and not recognised), unless it is all
// there is. Call it with o.mu held.
func (o *Output) text() string {
	b := o.b
	if o.cut {
		if i := bytes.IndexByte(b, '\n'); i >= 0 {
			b = b[i+1:]
		}
	}
	return Mask(strings.ToValidUTF8(string(b), "?"), o.secrets)
}

// String returns what is kept, starting with "…" when the front was cut.
func (o *Output) String() string {
	o.mu.Lock()
	defer o.mu.Unlock()
	s := o.text()
	if o.cut {
		return "…" + s
	}
	return s
}

// Seq is the number of lines written so far.
func (o *Output) Seq() uint64 {
	o.mu.Lock()
	defer o.mu.Unlock()
	return o.lines
}

// Lines returns the last outputLines kept lines, oldest first, with any
// unfinished last line; each is cut at outputLineBytes.
func (o *Output) Lines() []string {
	o.mu.Lock()
	defer o.mu.Unlock()
	return o.lastLines(outputLines)
}

// Since returns the kept lines written after the seq-th, oldest first (at
// most outputLines), with any unfinished last line.
func (o *Output) Since(seq uint64) []string {
	o.mu.Lock()
	defer o.mu.Unlock()
	n := o.lines - seq
	if len(o.b) > 0 && o.b[len(o.b)-1] != '\n' {
		n++
	}
	return o.lastLines(int(min(n, outputLines)))
}

// lastLines returns the last n kept lines; call it with o.mu held.
func (o *Output) lastLines(n int) []string {
	s := strings.TrimSuffix(o.text(), "\n")
	if s == "" || n <= 0 {
		return nil
	}
	lines := strings.Split(s, "\n")
	if len(lines) > n {
		lines = lines[len(lines)-n:]
	}
	for i, l := range lines {
		l = strings.TrimRight(l, "\r")
		if len(l) > outputLineBytes {
			l = strings.ToValidUTF8(l[:outputLineBytes], "") + "…"
		}
		lines[i] = l
	}
	return lines
}

// Mask replaces in s every secret (of secret.MinLen bytes or more) and
// anything shaped like an API key with "***", as an Output shows them: for
// what the harness shows of a target elsewhere (an answer, an error).
func Mask(s string, secrets []string) string { return secret.Scrub(s, secrets, secret.Mark) }

// Tail renders the last lines of name's output for an error message.
func Tail(name string, lines []string) string {
	if len(lines) == 0 {
		return "\n" + name + " printed nothing"
	}
	var b strings.Builder
	fmt.Fprintf(&b, "\nlast %d lines of %s's output:", len(lines), name)
	for _, l := range lines {
		b.WriteString("\n  | " + l)
	}
	return b.String()
}
