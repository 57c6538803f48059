package ledgerstdio

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"sync"
	"sync/atomic"

	"github.com/modelcontextprotocol/go-sdk/jsonrpc"

	"github.com/replaycheck/replaycheck/fakes/ledger"
	"github.com/replaycheck/replaycheck/internal/wire"
)

// FaultExitCode is the exit code of a ledger-stdio process that a stdio
// fault made exit (stdio_exit): EX_SOFTWARE, as a crashed server's.
const FaultExitCode = 70

// ErrExited is what Serve returns (wrapped) when a stdio fault made the
// process exit and Options.Exit returned (a test's): it wrote nothing more.
var ErrExited = errors.New("ledger-stdio: exited by a stdio fault")

// errHung is the write error of an answer a stdio_hang fault held until
// stdin closed, the server stopped or the ledger ended the session.
var errHung = fmt.Errorf("ledger-stdio: the answer was held by %s until stdin closed, the server stopped or the ledger ended the session: %w", wire.MCPFaultStdioHang, io.ErrClosedPipe)

// stdout is the process's stdout as the stdio server writes it, one
// JSON-RPC message per Write (as the SDK's stdio connection writes them). It
// is where the process obeys the ledger's stdio faults: a response whose
// result carries ledger.StdioFaultMeta is written without it, and the fault
// is carried out around it — exit before writing it, write it and exit,
// hang before it (holding every other write too, as a hung process does,
// until stdin closes), or write a line that is not JSON-RPC before it. Its
// methods are safe for concurrent use.
type stdout struct {
	w         io.Writer
	exit      func(code int)
	stdinDone <-chan struct{} // closed when stdin ends
	stop      <-chan struct{} // closed when Serve is told to stop or the ledger ends the session
	died      func()          // called once the process is dead (after exit returned)

	mu   sync.Mutex // held for each message, and by a hang
	dead atomic.Bool
}

// Write writes one message, carrying out the stdio fault its result names.
func (o *stdout) Write(b []byte) (int, error) {
	o.mu.Lock()
	defer o.mu.Unlock()
	if o.dead.Load() {
		return 0, ErrExited
	}
	msg, fault := directive(b)
	if fault == "" {
		return o.w.Write(b)
	}
	effect := stdioEffect(fault)
	switch effect {
	case wire.StdioExitBeforeAnswer:
		o.die()
		return 0, ErrExited
	case wire.StdioHang:
		select {
		case <-o.stdinDone:
		case <-o.stop:
		}
		return 0, errHung
	case wire.StdioMalformedLine:
		if _, err := io.WriteString(o.w, ledger.StdioMalformedText+"\n"); err != nil {
			return 0, err
		}
	}
	if _, err := o.w.Write(msg); err != nil {
		return 0, err
	}
	if effect == wire.StdioExitAfterAnswer {
		if s, ok := o.w.(interface{ Sync() error }); ok {
			_ = s.Sync() // a pipe or terminal has nothing to sync; a file does
		}
		o.die()
	}
	return len(b), nil
}

// stdioEffect is what the fault called name makes the process do, as the
// MCP fault table says (wire.MCPFaultMeanings); StdioNone for a name the
// table does not know.
func stdioEffect(name string) wire.StdioEffect {
	m, _ := wire.MCPFaultMeaningOf(name)
	return m.Stdio
}

// die exits the process; when exit returns (a test's), the process counts
// as dead: nothing more is written.
func (o *stdout) die() {
	o.exit(FaultExitCode)
	o.dead.Store(true)
	o.died()
}

// directive returns the message b (a line the SDK writes: one JSON-RPC
// message and its newline) without the ledger's stdio fault directive, and
// the fault's name; b itself and "" when it carries none. Only a response
// whose result's _meta has ledger.StdioFaultMeta carries one.
func directive(b []byte) ([]byte, string) {
	if !bytes.Contains(b, []byte(ledger.StdioFaultMeta)) {
		return b, ""
	}
	m, err := jsonrpc.DecodeMessage(bytes.TrimRight(b, "\r\n"))
	if err != nil {
		return b, ""
	}
	resp, ok := m.(*jsonrpc.Response)
	if !ok || resp.Result == nil {
		return b, ""
	}
	var result map[string]json.RawMessage
	var meta map[string]json.RawMessage
	if json.Unmarshal(resp.Result, &result) != nil || json.Unmarshal(result["_meta"], &meta) != nil {
		return b, ""
	}
	var fault string
	if raw, ok := meta[ledger.StdioFaultMeta]; !ok || json.Unmarshal(raw, &fault) != nil {
		return b, ""
	}
	delete(meta, ledger.StdioFaultMeta)
	if len(meta) == 0 {
		delete(result, "_meta")
	} else if result["_meta"], err = json.Marshal(meta); err != nil {
		return b, ""
	}
	if resp.Result, err = json.Marshal(result); err != nil {
		return b, ""
	}
	out, err := jsonrpc.EncodeMessage(resp)
	if err != nil {
		return b, ""
	}
	return append(out, '\n'), fault
}

// stdin is the process's stdin as the stdio server reads it: done is closed
// when it ends (EOF or an error), and each tools/call's tool is handed to
// the call func given to newStdin as its line is read.
type stdin struct {
	r     io.Reader
	calls callLines
	once  sync.Once
	done  chan struct{}
}

func newStdin(r io.Reader, call func(tool string)) *stdin {
	return &stdin{r: r, calls: callLines{call: call}, done: make(chan struct{})}
}

func (i *stdin) Read(p []byte) (int, error) {
	n, err := i.r.Read(p)
	i.calls.write(p[:n])
	if err != nil {
		i.once.Do(func() {
			i.calls.end()
			close(i.done)
		})
	}
	return n, err
}

// Close closes the underlying reader when it is a Closer.
func (i *stdin) Close() error {
	if c, ok := i.r.(io.Closer); ok {
		return c.Close()
	}
	return nil
}

// noted is a value the spawnAnnouncer notes from the ledger's answers (a
// header's), read once connected: the zero value until set. Its methods are
// safe for concurrent use.
type noted[T any] struct{ v atomic.Pointer[T] }

func (n *noted[T]) set(v T) { n.v.Store(&v) }

func (n *noted[T]) get() T {
	if p := n.v.Load(); p != nil {
		return *p
	}
	var zero T
	return zero
}

// exitAtStart carries out the fault called name whose effect is to exit as
// the process starts (stdio_exit at start): the process exits before
// serving, and Serve returns ErrExited when exit returns.
func exitAtStart(exit func(int), name string) error {
	exit(FaultExitCode)
	return fmt.Errorf("ledger-stdio: the ledger answered initialize with %s: %w", name, ErrExited)
}
