package target

import (
	"bytes"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"syscall"
	"time"
)

// Bounds of the processes the harness starts.
const (
	// outputLines is how many of a target's last output lines are kept.
	outputLines = 40
	// outputLineBytes bounds one kept line.
	outputLineBytes = 512
	// defaultStopGrace is how long a stopped process group gets between
	// SIGTERM and SIGKILL.
	defaultStopGrace = 5 * time.Second
	// pipeGrace bounds the wait for output pipes after the leader exited
	// (a grandchild may hold them open).
	pipeGrace = time.Second
	// goneGrace bounds the wait for a killed group's last members to go.
	goneGrace = 2 * time.Second
)

// process is a command started in a process group of its own, so that it is
// stopped with everything it started — also when the harness itself is
// killed (on Unix; elsewhere see process_other.go). Its stdout and stderr go
// to out.
type process struct {
	cmd  *exec.Cmd
	pgid int
	done chan struct{} // closed when the leader was reaped
	err  error         // the leader's wait error, set before done closes
	stop sync.Once
	// unguard stops the watchdog that kills the group should the harness
	// die without stopping it (guardGroup).
	unguard func()
}

// startProcess starts argv in dir with env (the whole environment), in a new
// process group, its output written to out. argv[0] is looked up in PATH
// unless it contains a slash.
func startProcess(argv, env []string, dir string, out *ring) (*process, error) {
	if len(argv) == 0 || argv[0] == "" {
		return nil, errors.New("empty command")
	}
	if err := checkDir(dir, "start.dir"); err != nil {
		return nil, err
	}
	path, err := resolveCommand(argv[0], dir)
	if err != nil {
		return nil, err
	}
	cmd := exec.Command(path, argv[1:]...)
	cmd.Args[0] = argv[0]
	cmd.Env = env
	cmd.Dir = dir
	cmd.Stdout, cmd.Stderr = out, out
	newGroup(cmd)
	cmd.WaitDelay = pipeGrace
	if err := cmd.Start(); err != nil {
		return nil, fmt.Errorf("starting %q: %w", argv[0], err)
	}
	p := &process{cmd: cmd, pgid: cmd.Process.Pid, done: make(chan struct{}), unguard: guardGroup(cmd.Process.Pid)}
	go func() {
		p.err = cmd.Wait()
		close(p.done)
	}()
	return p, nil
}

// checkDir reports a working directory that does not exist or is not a
// directory; field names where the target file sets it.
func checkDir(dir, field string) error {
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

// resolveCommand finds argv0: in PATH when it has no slash, else as a path
// relative to dir.
func resolveCommand(argv0, dir string) (string, error) {
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
func (p *process) Done() <-chan struct{} { return p.done }

// ExitDescription says how the leader ended; call it after Done.
func (p *process) ExitDescription() string {
	var ee *exec.ExitError
	switch {
	case p.err == nil:
		return "exited with code 0"
	case errors.As(p.err, &ee):
		if ws, ok := ee.Sys().(syscall.WaitStatus); ok && ws.Signaled() {
			return "was killed by " + ws.Signal().String()
		}
		return fmt.Sprintf("exited with code %d", ee.ExitCode())
	}
	return p.err.Error()
}

// ExitCode is the leader's exit code, -1 when it was killed; call it after
// Done.
func (p *process) ExitCode() int { return p.cmd.ProcessState.ExitCode() }

// Stop stops the whole process group: a graceful stop (SIGTERM, where there
// is one), then SIGKILL after grace (0 means at once), and waits until the
// leader is reaped and no member of the group is left, or goneGrace passed.
// It is safe to call more than once.
func (p *process) Stop(grace time.Duration) error {
	var err error
	p.stop.Do(func() { err = p.stopGroup(grace) })
	return err
}

func (p *process) stopGroup(grace time.Duration) error {
	if grace > 0 && terminateGroup(p.pgid) {
		t := time.NewTimer(grace)
		select {
		case <-p.done:
		case <-t.C:
		}
		t.Stop()
	}
	// The leader may be gone while members it started still run.
	_ = killGroup(p.pgid, p.cmd.Process)
	<-p.done // bounded: a kill cannot be ignored, and WaitDelay bounds the pipes
	err := waitGroupGone(p.pgid, goneGrace)
	p.unguard()
	return err
}

// ring keeps the last lines written to it, with secrets masked. It is safe
// for concurrent use.
type ring struct {
	mu      sync.Mutex
	lines   []string
	next    int
	full    bool
	partial []byte
	secrets []string
	seq     uint64
}

// newRing returns a ring of n lines that masks every secret (values of
// headers and of the environment the file sets) as "***".
func newRing(n int, secrets []string) *ring {
	var keep []string
	for _, s := range secrets {
		if len(s) >= 4 {
			keep = append(keep, s)
		}
	}
	return &ring{lines: make([]string, n), secrets: keep}
}

// Write splits b into lines and keeps the last ones.
func (r *ring) Write(b []byte) (int, error) {
	r.mu.Lock()
	defer r.mu.Unlock()
	n := len(b)
	for len(b) > 0 {
		i := bytes.IndexByte(b, '\n')
		if i < 0 {
			r.partial = append(r.partial, b...)
			if len(r.partial) > outputLineBytes {
				r.add(r.partial)
				r.partial = r.partial[:0]
			}
			break
		}
		r.add(append(r.partial, b[:i]...))
		r.partial = r.partial[:0]
		b = b[i+1:]
	}
	return n, nil
}

func (r *ring) add(line []byte) {
	line = bytes.TrimRight(line, "\r")
	if len(line) > outputLineBytes {
		line = append(line[:outputLineBytes:outputLineBytes], "…"...)
	}
	r.lines[r.next] = r.mask(line)
	r.next = (r.next + 1) % len(r.lines)
	r.full = r.full || r.next == 0
	r.seq++
}

func (r *ring) mask(line []byte) string {
	s := strings.ToValidUTF8(string(line), "?")
	for _, secret := range r.secrets {
		s = strings.ReplaceAll(s, secret, "***")
	}
	return s
}

// Seq is the number of lines written so far.
func (r *ring) Seq() uint64 {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.seq
}

// Since returns the kept lines written after the seq-th, oldest first.
func (r *ring) Since(seq uint64) []string {
	all := r.Lines()
	r.mu.Lock()
	n := r.seq - seq
	if len(r.partial) > 0 {
		n++
	}
	r.mu.Unlock()
	if n < uint64(len(all)) {
		all = all[uint64(len(all))-n:]
	}
	return all
}

// Lines returns the kept lines, oldest first, with any unfinished last line.
func (r *ring) Lines() []string {
	r.mu.Lock()
	defer r.mu.Unlock()
	var out []string
	if r.full {
		out = append(out, r.lines[r.next:]...)
	}
	out = append(out, r.lines[:r.next]...)
	if len(r.partial) > 0 {
		out = append(out, r.mask(r.partial))
	}
	return out
}

// tail renders the last lines for an error message.
func tail(name string, lines []string) string {
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
