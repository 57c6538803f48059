package ledger

import (
	"bytes"
	"encoding/json"
	"net/http"
	"sync"

	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// postWriter is the ResponseWriter the SDK answers a tool-call POST through:
// the hook of the faults that act at the answer on the stream. It notices
// the first byte of the answer; for a cutter it swallows the answer — whole,
// or all but its status line and headers — so the wrapper can close the
// connection instead; and it hands the SSE event answering a call to that
// call's answerer.
type postWriter struct {
	w       http.ResponseWriter
	s       *Server
	p       *post
	drop    dropPoint
	cutBy   cutter                // the cutter that names the cut; nil when drop is dropNone
	answers map[jsonrpc.ID]answer // the answerers of p's calls, by JSON-RPC id

	mu      sync.Mutex
	status  int
	started bool // the answer began
}

func (pw *postWriter) Header() http.Header { return pw.w.Header() }

func (pw *postWriter) WriteHeader(status int) {
	pw.mu.Lock()
	defer pw.mu.Unlock()
	pw.writeHeaderLocked(status)
}

// writeHeaderLocked records the answer's status and sends it on unless it is
// swallowed; for a cut after the headers it also flushes them, so
// the client sees the answer begin. pw.mu must be held.
func (pw *postWriter) writeHeaderLocked(status int) {
	if pw.status != 0 {
		return
	}
	pw.status = status
	switch pw.drop {
	case dropNone:
		pw.w.WriteHeader(status)
	case dropAfterHeaders:
		pw.w.WriteHeader(status)
		if err := http.NewResponseController(pw.w).Flush(); err != nil {
			pw.s.log.Debug("ledger fault: flushing the headers before the drop", "err", err)
		}
	}
}

func (pw *postWriter) Write(b []byte) (int, error) {
	pw.mu.Lock()
	defer pw.mu.Unlock()
	first := !pw.started
	pw.started = true
	pw.writeHeaderLocked(http.StatusOK)
	if pw.drop != dropNone {
		return len(b), nil
	}
	n, err := pw.writeEvent(b)
	if first && err == nil {
		pw.s.answered(pw.p, pw.status)
	}
	return n, err
}

// writeEvent writes b, an SSE event as the SDK writes one per Write, through
// the answerer of the call it answers, if any.
func (pw *postWriter) writeEvent(b []byte) (int, error) {
	if len(pw.answers) > 0 {
		if id, ok := answerID(b); ok {
			if a, ok := pw.answers[id]; ok {
				return a.by.writeAnswer(pw.s, a.call, pw.w, b)
			}
		}
	}
	return pw.w.Write(b)
}

// FlushError flushes what was written, unless the answer is being swallowed.
func (pw *postWriter) FlushError() error {
	pw.mu.Lock()
	defer pw.mu.Unlock()
	if pw.drop != dropNone {
		return nil
	}
	return http.NewResponseController(pw.w).Flush()
}

// Flush implements http.Flusher.
func (pw *postWriter) Flush() { _ = pw.FlushError() }

// swallowed reports whether an answer was swallowed for a cutter.
func (pw *postWriter) swallowed() bool {
	pw.mu.Lock()
	defer pw.mu.Unlock()
	return pw.drop != dropNone && pw.started
}

// dropPoint is where a cutter cuts the answer to a POST on the stream.
type dropPoint int

const (
	dropNone         dropPoint = iota // the answer is not cut
	dropAfterHeaders                  // after the status line and headers
	dropBeforeAnswer                  // before any byte of the answer
)

// earlierDrop returns whichever of a and b cuts the answer earlier: a POST
// whose calls disagree loses as much of its answer as any of them asks.
func earlierDrop(a, b dropPoint) dropPoint { return max(a, b) }

// answer is the answerer of one call of a POST.
type answer struct {
	by   answerer
	call *call
}

// newPostWriter returns the ResponseWriter for p's answer on w, with the cut
// and the answerers of the faults that fired on p's calls.
func newPostWriter(w http.ResponseWriter, s *Server, p *post) *postWriter {
	pw := &postWriter{w: w, s: s, p: p}
	pw.drop, pw.cutBy = p.cut()
	for _, c := range p.calls {
		for a := range hooks[answerer](c) {
			if pw.answers == nil {
				pw.answers = map[jsonrpc.ID]answer{}
			}
			pw.answers[c.id] = answer{by: a, call: c}
			break
		}
	}
	return pw
}

// answerID returns the id of the JSON-RPC response an SSE event carries
// (its data lines), and false for an event that carries none (a request, a
// notification, a priming event).
func answerID(event []byte) (jsonrpc.ID, bool) {
	var data []byte
	for line := range bytes.Lines(event) {
		if d, ok := bytes.CutPrefix(line, []byte("data:")); ok {
			data = append(data, bytes.TrimPrefix(bytes.TrimRight(d, "\r\n"), []byte(" "))...)
		}
	}
	var m peekMessage
	if len(data) == 0 || json.Unmarshal(data, &m) != nil || m.Method != "" {
		return jsonrpc.ID{}, false
	}
	id, err := m.id()
	return id, err == nil && id.IsValid()
}

// dropConnection carries out a cut: the answer was swallowed, the cutter
// that names the cut does what it does at it (expire_session forgets the
// session), and the connection is closed before any byte of the answer (or,
// with drop_after_execute after: headers, of its JSON-RPC result) reached
// the client.
func (s *Server) dropConnection(w http.ResponseWriter, pw *postWriter) {
	p := pw.p
	fault := pw.cutBy.cutOff(s, p)
	s.finishPost(p, callDropped, fault)
	s.log.Info("ledger fault", "fault", fault, "calls", len(p.calls))
	abortConnection(w, false)
}

// forget closes the SDK's session id, so later requests with it get 404.
func (s *Server) forget(id string) {
	if id == "" {
		return
	}
	var found []*mcp.ServerSession
	for ss := range s.mcp.Sessions() {
		if ss.ID() == id {
			found = append(found, ss)
		}
	}
	for _, ss := range found {
		if err := ss.Close(); err != nil {
			s.log.Debug("ledger: closing a forgotten session", "session", id, "err", err)
		}
	}
}

// abortConnection closes the connection under w before any answer, with a
// TCP RST when reset is set. On HTTP/2 it resets the stream instead, by
// panicking with http.ErrAbortHandler.
func abortConnection(w http.ResponseWriter, reset bool) {
	conn, _, err := http.NewResponseController(w).Hijack()
	if err != nil {
		panic(http.ErrAbortHandler) // HTTP/2: reset the stream
	}
	if tc, ok := conn.(interface{ SetLinger(int) error }); ok && reset {
		_ = tc.SetLinger(0) // close with RST
	}
	_ = conn.Close()
}
