package ledger

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"
	"os"
	"slices"
	"strings"

	"github.com/modelcontextprotocol/go-sdk/jsonrpc"

	"github.com/replaycheck/replaycheck/internal/nesting"
	"github.com/replaycheck/replaycheck/internal/runtoken"
	"github.com/replaycheck/replaycheck/internal/wire"
)

// Header names.
const (
	sessionIDHeader       = "Mcp-Session-Id"
	protocolVersionHeader = "Mcp-Protocol-Version"
	// StdioSpawnHeader is the request header a ledger-stdio process
	// (replaycheck ledger-stdio) sets on its HTTP requests, with its process
	// id as the value: the initialize that carries it is recorded as one
	// spawn (wire.MCPSpawn) before it is handled.
	StdioSpawnHeader = "Replaycheck-Stdio-Spawn"
	// StdioProtocolHeader is the request header a ledger-stdio process
	// sets on the tools/call it forwards: the MCP protocol version its own
	// client used for the call (a wire.MCPProtocol), which the ledger
	// records as the call's (not the version of the process's session with
	// the ledger).
	StdioProtocolHeader = "Replaycheck-Stdio-Protocol"
	// StdioPinHeader is the response header of the ledger's answers to a
	// ledger-stdio process when Config.Protocol pins a version: that
	// version, the only one the process then serves its client.
	StdioPinHeader = "Replaycheck-Stdio-Pin"
	// StdioFaultHeader is the response header of an initialize from a
	// ledger-stdio process that a stdio_exit fault at start refused: its
	// value, wire.MCPFaultStdioExitAtStart, tells the process to exit
	// before serving.
	StdioFaultHeader = "Replaycheck-Stdio-Fault"
	// StdioEndHeader is the request header of the DELETE a ledger-stdio
	// process closes its session with as it ends: why, wire.MCPExitStdinClosed
	// or wire.MCPExitStopped (the End of its MCPExit event; anything else
	// counts as stopped).
	StdioEndHeader = "Replaycheck-Stdio-End"
	// StdioFaultMeta is the _meta key of a tool result that tells the
	// ledger-stdio process carrying the call to carry out a stdio fault; its
	// value is the fault's MCP fault name (wire.MCPFaultStdio…). The process
	// strips it: it never reaches the process's client. Only results to
	// calls from a ledger-stdio process carry it.
	StdioFaultMeta = "replaycheck/stdio_fault"
	// newProtocolVersion is the first protocol version (SEP-2575) for which
	// the SDK itself answers unknown methods with -32601 and HTTP 404.
	newProtocolVersion = "2026-07-28"
)

// sdkMethods are the methods the SDK's server handles (go-sdk v1.8.0,
// serverMethodInfos). Calls of other methods get a JSON-RPC "method not
// found" from the wrapper, since for protocol versions before 2026-07-28 the
// SDK refuses them with a plain-text HTTP 400 that makes clients fail instead
// of falling back.
func sdkMethods() []string {
	return []string{
		"completion/complete", "server/discover", "initialize", "ping",
		"prompts/list", "prompts/get", "tools/list", "tools/call",
		"resources/list", "resources/templates/list", "resources/read",
		"logging/setLevel", "resources/subscribe", "resources/unsubscribe",
		"subscriptions/listen", "notifications/cancelled", "notifications/initialized",
		"notifications/roots/list_changed", "notifications/progress",
	}
}

func knownMethod(method string) bool { return slices.Contains(sdkMethods(), method) }

// ServeHTTP is the MCP endpoint; callers mount it at /mcp. It reads (bounded)
// and peeks at each POST body, counts tool calls, applies transport-level
// faults and notices cancellations, and hands the request to the SDK. A GET
// (a session's standalone SSE stream, open as long as the session) also ends
// when the server is closed, so a shutdown need not wait for its client.
func (s *Server) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	owner, _ := runtoken.FromContext(r.Context())
	pid, stdio := stdioPID(r.Header)
	stdioProto := s.stdioProtocol(w, r.Header, stdio)
	clientCtx := r.Context()
	if r.Method == http.MethodGet {
		ctx, cancel := context.WithCancel(r.Context())
		defer cancel()
		go func() {
			select {
			case <-s.closing:
				cancel()
			case <-ctx.Done():
			}
		}()
		r = r.WithContext(ctx)
	}
	if r.Method != http.MethodPost || !isJSON(r.Header.Get("Content-Type")) {
		sdk, stateless := s.gen.route(r, nil)
		session := ""
		if !stateless {
			session = r.Header.Get(sessionIDHeader)
		}
		s.message(owner, r.Method, s.requestProtocol(r.Header, session, nil))
		if stdio && session != "" && r.Method == http.MethodDelete {
			s.stdioClosed(owner, session, pid, r.Header.Get(StdioEndHeader), r.Header.Values(StdioUnforwardedHeader))
		}
		sdk.ServeHTTP(w, r)
		if stdio && session != "" && r.Method == http.MethodGet && clientCtx.Err() != nil {
			s.stdioGone(owner, session, pid)
		}
		return
	}
	body, err := s.readPost(w, r)
	if err != nil {
		var tooBig *http.MaxBytesError
		if errors.As(err, &tooBig) {
			http.Error(w, fmt.Sprintf("ledger %s: request body exceeds %d bytes", r.URL.Path, s.maxBody), http.StatusRequestEntityTooLarge)
			return
		}
		if errors.Is(err, os.ErrDeadlineExceeded) {
			w.Header().Set("Connection", "close")
			http.Error(w, fmt.Sprintf("ledger %s: the request body was not received within %s", r.URL.Path, s.bodyTimeout), http.StatusRequestTimeout)
			return
		}
		http.Error(w, fmt.Sprintf("ledger %s: reading request body: %v", r.URL.Path, err), http.StatusBadRequest)
		return
	}
	err = nesting.CheckJSON("body", body)
	var msgs []jsonrpc.Message
	var batch bool
	if err == nil {
		msgs, batch, err = peek(body)
	}
	if err != nil {
		http.Error(w, fmt.Sprintf("ledger %s: unparsable JSON-RPC body: %v", r.URL.Path, err), http.StatusBadRequest)
		return
	}
	r.Body = io.NopCloser(bytes.NewReader(body))
	r.ContentLength = int64(len(body))

	sdk, stateless := s.gen.route(r, msgs)
	session := ""
	if !stateless {
		session = r.Header.Get(sessionIDHeader)
	}
	proto := s.requestProtocol(r.Header, session, msgs)
	if !batch && len(msgs) == 1 {
		req, ok := msgs[0].(*jsonrpc.Request)
		switch {
		case !ok:
		case req.Method == MethodInitialize && s.gen.refusesInitialize():
			s.message(owner, req.Method, proto)
			s.refuseRemoved(w, req)
			return
		case !knownMethod(req.Method) && r.Header.Get(protocolVersionHeader) < newProtocolVersion:
			s.unknownMethod(w, req)
			return
		}
	}

	if session != "" && !s.knownSession(session) {
		// The SDK answers 404 without running anything: the client's
		// session ended (or the ledger restarted). Its tool calls were
		// refused, not received; they count as session messages.
		for _, m := range msgs {
			if req, ok := m.(*jsonrpc.Request); ok {
				s.message(owner, req.Method+" (unknown session)", proto)
			}
		}
		if stdio {
			s.stdioCallsAfterEnd(owner, session, pid, msgs)
		}
		sdk.ServeHTTP(w, r)
		return
	}
	if session == "" && !stateless && s.maxSessions > 0 && opensSession(msgs) {
		release, ok := s.admitSession(w, msgs)
		if !ok {
			return
		}
		defer release()
	}
	var p *post
	var stepRefusal stepRefuser // a session step was refused
	var stepMethod string
	for _, m := range msgs {
		req, ok := m.(*jsonrpc.Request)
		if !ok {
			continue
		}
		// A ledger-stdio process's first request is its spawn: its initialize,
		// or, where the ledger serves 2026-07-28 only, its server/discover.
		first := req.Method == MethodInitialize || req.Method == "server/discover" && s.gen.refusesInitialize()
		if req.IsCall() && first && session == "" && stdio {
			if s.spawn(owner, pid, proto) {
				refuseSpawn(w, req)
				return
			}
		}
		if req.IsCall() && slices.Contains(SessionMethods(), req.Method) {
			f := s.sessionStep(owner, req.Method, proto)
			if f != nil && stepRefusal == nil {
				stepRefusal, stepMethod = f, req.Method
			}
			if f == nil && req.Method == MethodToolsList {
				s.noteListed(owner, session)
			}
			continue
		}
		if req.Method != "tools/call" || !req.IsCall() {
			s.message(owner, req.Method, proto)
		}
		switch req.Method {
		case "notifications/cancelled":
			s.cancelNotice(session, req.Params)
		case "tools/call":
			if !req.IsCall() {
				continue // the SDK refuses it
			}
			if p == nil {
				p = &post{session: session}
			}
			if !stdio {
				pid = ""
			}
			callProto := proto
			if stdioProto != "" {
				callProto = stdioProto // the version the process's client speaks, not the hop's
			}
			p.calls = append(p.calls, s.receive(owner, session, pid, callProto, req))
		}
	}
	if stepRefusal != nil && p == nil {
		stepRefusal.refuseStep(s, w, stepMethod)
		return
	}
	if p == nil {
		sdk.ServeHTTP(w, r)
		return
	}
	if stepRefusal != nil {
		// A batch that carries a refused session step is refused whole.
		stepRefusal.refuse(s, w, p)
		return
	}
	if f := p.refuser(); f != nil {
		f.refuse(s, w, p)
		return
	}
	s.serveCalls(w, r, p, sdk)
}

// knownSession reports whether the SDK holds a session with id.
func (s *Server) knownSession(id string) bool {
	for ss := range s.mcp.Sessions() {
		if ss.ID() == id {
			return true
		}
	}
	return false
}

// serveCalls hands a POST carrying tool calls to sdk, the SDK's handler
// that serves it, watching for the client going away and for the answer,
// which the faults at the answer on the stream (postWriter) may cut or
// change.
func (s *Server) serveCalls(w http.ResponseWriter, r *http.Request, p *post, sdk http.Handler) {
	s.dispatch(p)
	s.register(r, p)
	pw := newPostWriter(w, s, p)
	stop := context.AfterFunc(r.Context(), func() { s.giveUpPost(p, "stream closed") })

	sdk.ServeHTTP(pw, r)

	clientGone := !stop() || r.Context().Err() != nil
	switch {
	case clientGone:
		s.giveUpPost(p, "stream closed")
	case !pw.swallowed():
		// The SDK ended the POST without an answer while the client was
		// still there (its session closed): not the client giving up.
		s.finishPost(p, callUnanswered, "")
	}
	s.mu.Lock()
	p.finished = true
	if p.unclaimed == 0 || !clientGone {
		// No tool handler will come for this POST's calls: either all came,
		// or the SDK answered without running them.
		s.posts.Delete(postKeyOf(p.header))
	}
	s.mu.Unlock()
	if pw.swallowed() {
		s.dropConnection(w, pw)
	}
}

// message counts one MCP message other than a tools/call (initialize,
// tools/list, a notification, or a GET or DELETE of the session), served at
// protocol version proto: for the run whose own address it arrived at
// (owner), as an event of that run; without an owner it counts only as a
// shared session message.
func (s *Server) message(owner, method string, proto wire.MCPProtocol) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.total.counts.Messages++
	if owner == "" {
		s.runLocked("").counts.Messages++
		return
	}
	s.runLocked(owner).counts.Messages++
	s.eventLocked(wire.MCPEvent{Token: owner, Kind: wire.MCPSession, Method: method, Protocol: proto})
}

// stdioPID returns the process id a ledger-stdio process announced in h
// (StdioSpawnHeader), and whether h has that header at all ("?" for an
// empty one).
func stdioPID(h http.Header) (string, bool) {
	v, ok := h[StdioSpawnHeader]
	if !ok {
		return "", false
	}
	if pid := strings.Join(v, ","); pid != "" {
		return pid, true
	}
	return "?", true
}

// spawn records that a ledger-stdio process with process id pid opened a
// session at protocol version proto: one MCPSpawn event and one count of Spawns for owner (the run at
// whose own address it arrived, "" elsewhere) and in the total. It matches
// the spawn against the faults that make a process exit as it starts
// (owner's, then the global ones) and reports whether one fired: then the
// process's exit is recorded too, and the caller refuses its initialize.
func (s *Server) spawn(owner, pid string, proto wire.MCPProtocol) bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.total.counts.Spawns++
	r := s.runLocked(owner)
	r.counts.Spawns++
	s.eventLocked(wire.MCPEvent{Token: owner, Kind: wire.MCPSpawn, PID: pid, Protocol: proto})
	exit := false
	s.faults.FireEach(owner, func(a *armable) bool { return isSpawnFault(a.act) }, func(*armable) { exit = true })
	if exit {
		s.eventLocked(wire.MCPEvent{Token: owner, Kind: wire.MCPFault, PID: pid, Fault: wire.MCPFaultStdioExitAtStart, Protocol: proto})
		s.exitLocked(owner, "", pid, nil, wire.MCPExitFault, wire.MCPFaultStdioExitAtStart)
		s.log.Info("ledger fault", "fault", wire.MCPFaultStdioExitAtStart, "token", owner, "pid", pid)
	}
	return exit
}

// refuseSpawn answers the initialize req of a ledger-stdio process that a
// stdio_exit fault at start fired on: 503 with a JSON-RPC error, and
// StdioFaultHeader, which tells the process to exit. No session opens.
func refuseSpawn(w http.ResponseWriter, req *jsonrpc.Request) {
	msg := "ledger: injected fault " + wire.MCPFaultStdioExitAtStart + ": the stdio server process exits as it starts"
	w.Header().Set(StdioFaultHeader, wire.MCPFaultStdioExitAtStart)
	b, err := jsonrpc.EncodeMessage(&jsonrpc.Response{ID: req.ID, Error: &jsonrpc.Error{Code: codeServerBusy, Message: msg}})
	if err != nil {
		http.Error(w, msg, http.StatusServiceUnavailable)
		return
	}
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(http.StatusServiceUnavailable)
	_, _ = w.Write(b)
}

// exitLocked records that the ledger-stdio process pid (of session, "" when
// it has none) ended, how (end, and fault when a fault made it exit), with c
// in flight (nil when none): one
// MCPExit event and one count of Exits for token and in the total. A
// process's end is recorded once: a later one for the same session is
// ignored. s.mu must be held.
func (s *Server) exitLocked(token, session, pid string, c *call, end wire.MCPExitEnd, fault string) {
	if session != "" {
		if s.stdioEnded[session] {
			return
		}
		s.stdioEnded[session] = true
		r := s.runLocked(token)
		r.stdioEnded = append(r.stdioEnded, session)
		delete(s.stdioHeld, session)
	}
	e := wire.MCPEvent{Token: token, Kind: wire.MCPExit, PID: pid, End: end, Fault: fault, Protocol: s.protocols[session]}
	if c != nil {
		e.Tool, e.RequestID = c.tool, c.idText
	}
	s.total.counts.Exits++
	s.runLocked(token).counts.Exits++
	s.eventLocked(e)
	s.log.Info("ledger-stdio process ended", "token", token, "pid", pid, "end", end, "fault", fault, "tool", e.Tool, "request_id", e.RequestID)
}

// stdioClosed records the clean end of the ledger-stdio process pid: it
// closes its session (a DELETE), saying why in StdioEndHeader (why) and
// naming the calls it never forwarded in StdioUnforwardedHeader
// (unforwarded).
func (s *Server) stdioClosed(owner, session, pid, why string, unforwarded []string) {
	end := wire.MCPExitStopped
	if why == string(wire.MCPExitStdinClosed) {
		end = wire.MCPExitStdinClosed
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	s.unforwardedLocked(owner, session, pid, unforwarded)
	s.exitLocked(owner, session, pid, s.inFlightOfLocked(session), end, "")
}

// stdioGone records that the ledger-stdio process pid went away without
// closing its session: its standalone stream's connection closed while the
// session was still open (and the ledger not closing). A call of the
// session still in flight is the call it died with.
func (s *Server) stdioGone(owner, session, pid string) {
	select {
	case <-s.closing:
		return
	default:
	}
	if !s.knownSession(session) {
		return
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	s.exitLocked(owner, session, pid, s.inFlightOfLocked(session), wire.MCPExitGone, "")
}

// inFlightOfLocked returns a call of session its client has no answer to:
// one the ledger has not answered (the lowest request id text when several
// are), else one whose answer the process was told to hold; nil when none.
// s.mu must be held.
func (s *Server) inFlightOfLocked(session string) *call {
	var found *call
	for k, c := range s.inflight {
		if k.session == session && (found == nil || c.idText < found.idText) {
			found = c
		}
	}
	if found == nil {
		found = s.stdioHeld[session]
	}
	return found
}

// sessionStep counts one session step (a request of one of
// SessionMethods, served at proto) for owner, as message does, and matches it against the
// faults armed for that method: owner's, then the global ones. It returns the
// first fault that fired and refuses the step, recording the step as refused
// instead of as a session message, or nil.
func (s *Server) sessionStep(owner, method string, proto wire.MCPProtocol) stepRefuser {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.total.counts.Messages++
	r := s.runLocked(owner)
	r.counts.Messages++
	var refusal stepRefuser
	s.faults.FireEach(owner, func(a *armable) bool { return a.fault.Method == method && !isSpawnFault(a.act) }, func(a *armable) {
		if f, ok := a.act.(stepRefuser); ok && refusal == nil {
			refusal = f
		}
	})
	switch {
	case refusal != nil:
		s.eventLocked(wire.MCPEvent{Token: owner, Kind: wire.MCPSessionRefused, Method: method, Protocol: proto})
	case owner != "":
		s.eventLocked(wire.MCPEvent{Token: owner, Kind: wire.MCPSession, Method: method, Protocol: proto})
	}
	return refusal
}

// unknownMethod answers a call of a method the server does not know with a
// JSON-RPC "method not found" (encoded by the SDK), so a client probing
// before initialize falls back; an unknown notification is accepted and
// ignored.
func (s *Server) unknownMethod(w http.ResponseWriter, req *jsonrpc.Request) {
	s.methodNotFound(w, req, http.StatusOK)
}

// methodNotFound answers req with a JSON-RPC "method not found" and HTTP
// status when req is a call; a notification is accepted and ignored.
func (s *Server) methodNotFound(w http.ResponseWriter, req *jsonrpc.Request, status int) {
	s.log.Info("ledger unknown method", "method", req.Method)
	if !req.IsCall() {
		w.WriteHeader(http.StatusAccepted)
		return
	}
	b, err := jsonrpc.EncodeMessage(&jsonrpc.Response{ID: req.ID, Error: &jsonrpc.Error{
		Code:    jsonrpc.CodeMethodNotFound,
		Message: fmt.Sprintf("method %q not found", req.Method),
	}})
	if err != nil {
		http.Error(w, fmt.Sprintf("ledger: encoding method-not-found answer: %v", err), http.StatusInternalServerError)
		return
	}
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(status)
	_, _ = w.Write(b)
}
