package ledger

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"maps"
	"net/http"
	"net/url"
	"os"
	"slices"
	"sync"
	"time"

	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/replaycheck/replaycheck/fakes/ledger/mcpcassette"
	"github.com/replaycheck/replaycheck/fakes/upstream/cassette"
	"github.com/replaycheck/replaycheck/internal/secret"
	"github.com/replaycheck/replaycheck/internal/wire"
)

// Forward is the real MCP server a forwarding ledger stands in front of
// (Config.Forward): exactly one of URL, Command and Cassette is set.
//
// A forwarding ledger offers the server's tools as the server lists them
// (annotations included, following its notifications/tools/list_changed)
// instead of commit_write, commit_write_keyed and read_ledger. Each
// tools/call that reaches a tool handler (no fault refused it before) is
// forwarded once, never retried, and answered with the server's result, so
// every fault acts at the forwarding point as it acts on the ledger's own
// tools. A call of a tool the server did not list is forwarded too, and
// answered by the server (see forwardUnlisted). Everything else the server
// offers passes through unchanged, both ways: its capabilities, resources,
// prompts, completion, logging, progress, cancellation and its own requests
// to the client (see forwardMethods and relays). What the forwarder saw is recorded as the ledger records its own
// calls: an answer that is not isError of a write tool (see Writes) is a
// write (wire.MCPWrite, Entry the tool name and its canonical arguments,
// Key the idempotency_key argument when there is one), appended to the
// journal as a ledger line; an isError answer ran and failed and writes
// nothing (its result's Fault is wire.MCPFaultIsError); a call whose answer
// never came back (the server's connection broke, or the client gave up) is
// recorded as a wire.MCPFault event with Fault wire.MCPFaultForwardUnknown.
type Forward struct {
	// URL is the Streamable HTTP endpoint of the server.
	URL string
	// Command is the server's argv, spawned once per ledger where client
	// targets' commands are (internal/harness/process: a process group of its own,
	// watched so that it dies with replaycheck) and spoken to over stdio;
	// Close ends it with its whole group. Calls after it exited are refused
	// (wire.MCPFaultForwardServerGone).
	Command []string
	// Env is added to the environment of Command's process ("NAME=value"
	// each), which starts from the scrubbed one client targets get
	// (process.Env); nil adds nothing.
	Env []string
	// PassEnv names variables of replaycheck's environment Command's
	// process gets as they are (see process.Env); nil passes none.
	PassEnv []string
	// Install says how to install Command's program, shown when it is not
	// found; "" says nothing.
	Install string
	// Exited, when set, is called once, on a goroutine of its own, should
	// Command's process exit before Close, with how it exited and the last
	// lines of its stderr.
	Exited func(error)
	// Dir is the working directory of Command's process; "" is
	// replaycheck's own.
	Dir string
	// Cassette, instead of a server, answers from a recording of one,
	// offline (see cassette.go): its tools are offered and each call that
	// would be forwarded is answered from it.
	Cassette *mcpcassette.Cassette
	// Record, when set, gets the forwarded exchanges (see cassette.go);
	// the caller closes it after the ledger.
	Record *mcpcassette.Recorder
	// Writes, when non-nil, names exactly the tools whose calls write; nil
	// lets the annotations decide: a tool writes unless it is annotated
	// readOnlyHint: true.
	Writes []string
	// HTTPClient makes the requests to URL; nil means http.DefaultClient.
	HTTPClient *http.Client
	// ConnectTimeout bounds connecting to the server and listing its tools;
	// 0 means DefaultForwardConnectTimeout.
	ConnectTimeout time.Duration
}

// DefaultForwardConnectTimeout bounds connecting to a forwarded server when
// Forward.ConnectTimeout is 0.
const DefaultForwardConnectTimeout = 30 * time.Second

func (f *Forward) check() error {
	set := 0
	for _, ok := range []bool{f.URL != "", len(f.Command) > 0, f.Cassette != nil} {
		if ok {
			set++
		}
	}
	switch {
	case set == 0:
		return errors.New("forward: set the server's URL, its command or a cassette")
	case set > 1:
		return errors.New("forward: set one of the server's URL, its command and a cassette")
	case f.Cassette != nil && f.Record != nil:
		return errors.New("forward: a cassette's answers are not recorded again")
	case len(f.Command) > 0 && f.Command[0] == "":
		return errors.New("forward: the command's program is empty")
	case (len(f.Env) > 0 || len(f.PassEnv) > 0 || f.Dir != "") && len(f.Command) == 0:
		return errors.New("forward: Env, PassEnv and Dir are those of the server's command; the server at a URL runs in its own")
	}
	return nil
}

// where names the server for messages: its URL, its cassette, or its
// command with the directory it runs in; the credentials in them scrubbed
// (see secrets).
func (f *Forward) where() string {
	switch {
	case f.URL != "":
		return secret.Scrub(f.URL, f.secrets(), secret.Mark)
	case f.Cassette != nil:
		return "of the cassette " + f.Cassette.Path
	}
	argv := secret.Argv(f.Command, f.secrets(), secret.Mark)
	if f.Dir != "" {
		return fmt.Sprintf("%q in %s", argv, f.Dir)
	}
	return fmt.Sprintf("%q", argv)
}

// secrets returns the credentials the server was given, which nothing the
// forwarder records, says or logs shows: the values of Env and of
// replaycheck's own environment whose names say they hold one (a
// ${MY_API_KEY} expanded into the command among them), and the password and
// key-like query values of URL.
func (f *Forward) secrets() []string {
	out := secret.Environ(append(slices.Clip(f.Env), os.Environ()...))
	u, err := url.Parse(f.URL)
	if f.URL == "" || err != nil {
		return out
	}
	out = append(out, cassette.Secrets(nil, u.RawQuery)...)
	if p, ok := u.User.Password(); ok {
		out = append(out, p)
	}
	return out
}

// forwarder is a forwarding ledger's connection to the real server and the
// tools it lists.
type forwarder struct {
	cfg     Forward
	session *mcp.ClientSession
	server  *serverProcess // Forward.Command's; nil otherwise
	limit   time.Duration

	mu    sync.Mutex
	tools map[string]*mcp.Tool // as the server lists them, by name

	refreshes sync.WaitGroup // listings under way after list_changed
	// installed is closed once the ledger offers the server's tools (New
	// calls install), or once connecting failed (abandon, which sets
	// abandoned first): list_changed handlers wait for it.
	installed chan struct{}
	abandoned bool

	relay  *relays             // what the server sends its clients; nil for a replay
	replay *mcpcassette.Player // answers calls instead of session (Forward.Cassette)
	log    *slog.Logger        // where a failed recording is said
}

// install says the ledger has the forwarder in place.
func (f *forwarder) install() { close(f.installed) }

// abandon says connecting failed: no listing follows a list_changed.
func (f *forwarder) abandon() {
	f.abandoned = true
	close(f.installed)
}

// connectForward connects s to the server cfg names and lists its tools.
// Its errors are scrubbed of the server's credentials (see
// Forward.secrets): they name the server, and the transport's errors its
// URL.
func (s *Server) connectForward(cfg Forward) (*forwarder, error) {
	if err := cfg.check(); err != nil {
		return nil, err
	}
	f, err := s.connect(cfg)
	return f, secret.Error(err, cfg.secrets(), secret.Mark)
}

// connect is connectForward with its errors as they come.
func (s *Server) connect(cfg Forward) (*forwarder, error) {
	if cfg.Cassette != nil {
		return replayForwarder(cfg), nil
	}
	limit := cfg.ConnectTimeout
	if limit <= 0 {
		limit = DefaultForwardConnectTimeout
	}
	ctx, cancel := context.WithTimeout(context.Background(), limit)
	defer cancel()
	var transport mcp.Transport
	if cfg.URL != "" {
		transport = &mcp.StreamableClientTransport{
			Endpoint:   cfg.URL,
			HTTPClient: cfg.HTTPClient,
			// A broken stream is not resumed: the call it carried is
			// recorded unknown and answered as failed, never sent again.
			MaxRetries: -1,
		}
	}
	f := &forwarder{cfg: cfg, limit: limit, installed: make(chan struct{}), log: s.log}
	if len(cfg.Command) > 0 {
		// The process outlives ctx: it ends when the ledger closes.
		server, t, err := startServer(cfg)
		if err != nil {
			return nil, err
		}
		f.server, transport = server, t
	}
	f.relay = newRelays(s.mcp, s.log)
	client := mcp.NewClient(&mcp.Implementation{Name: "replaycheck-forwarder", Version: "1"}, f.relay.clientOptions(
		func(context.Context, *mcp.ToolListChangedRequest) {
			f.refreshes.Go(func() {
				// A change announced while New still connects (some
				// servers announce one at once) waits until the forwarder
				// is in place; listing again then is harmless.
				<-f.installed
				if !f.abandoned {
					s.refreshForwarded()
				}
			})
		}))
	client.AddReceivingMiddleware(f.relay.rootsMiddleware)
	session, err := client.Connect(ctx, transport, nil)
	if err != nil {
		f.abandon()
		return nil, fmt.Errorf("forward: connecting to the MCP server %s: %w%s", cfg.where(), err, f.failed())
	}
	f.session = session
	tools, err := f.list(ctx)
	if err != nil {
		_ = session.Close()
		f.abandon()
		return nil, fmt.Errorf("%w%s", err, f.failed())
	}
	f.tools = tools
	if f.server != nil {
		go f.server.watch(func(err error) {
			s.log.Error("forward: the MCP server exited; calls to it are refused", "err", err)
			if cfg.Exited != nil {
				cfg.Exited(err)
			}
		})
	}
	f.recordSession(session.InitializeResult(), tools)
	s.log.Info("forward: connected to the MCP server", "protocol", f.protocol())
	// The outermost middleware: it sees each request before the ledger's own.
	s.mcp.AddReceivingMiddleware(s.forwardMethods)
	s.mcp.AddSendingMiddleware(relaySending)
	return f, nil
}

// failed says what became of the server's process after setting up its
// session failed (see serverProcess.failed); "" for a server at a URL.
func (f *forwarder) failed() string {
	if f.server == nil {
		return ""
	}
	return f.server.failed()
}

// list lists the server's tools; its error is scrubbed of the server's
// credentials.
func (f *forwarder) list(ctx context.Context) (map[string]*mcp.Tool, error) {
	tools := map[string]*mcp.Tool{}
	for t, err := range f.session.Tools(ctx, nil) {
		if err != nil {
			err = fmt.Errorf("forward: listing the tools of the MCP server %s: %w", f.cfg.where(), err)
			return nil, secret.Error(err, f.cfg.secrets(), secret.Mark)
		}
		tools[t.Name] = t
	}
	return tools, nil
}

// tool returns the server's tool name as last listed, or nil.
func (f *forwarder) tool(name string) *mcp.Tool {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.tools[name]
}

// names returns the server's tool names as last listed, sorted.
func (f *forwarder) names() []string {
	f.mu.Lock()
	defer f.mu.Unlock()
	return slices.Sorted(maps.Keys(f.tools))
}

// writes reports whether a call of the server's tool name writes.
func (f *forwarder) writes(name string) bool {
	if f.cfg.Writes != nil {
		return slices.Contains(f.cfg.Writes, name)
	}
	t := f.tool(name)
	return t == nil || t.Annotations == nil || !t.Annotations.ReadOnlyHint
}

// close ends the connection (and a spawned server with its process group)
// and waits for listings under way.
func (f *forwarder) close() error {
	if f.session == nil {
		return nil // a replay has no connection
	}
	err := f.session.Close()
	if f.server != nil {
		err = errors.Join(err, f.server.stop())
	}
	f.refreshes.Wait()
	return err
}

// gone returns how the forwarded server's process exited before Close; nil
// while it runs, or when there is none.
func (f *forwarder) gone() error {
	if f.server == nil {
		return nil
	}
	return f.server.gone()
}

// ForwardExit returns how the forwarded server's process (Forward.Command)
// exited before Close, with the last lines of its stderr; nil when it did
// not, or when the ledger does not forward to a command.
func (s *Server) ForwardExit() error {
	if s.fwd == nil {
		return nil
	}
	return s.fwd.gone()
}

// protocol returns the protocol version the forwarder's session negotiated
// with the server; "" for a replay.
func (f *forwarder) protocol() wire.MCPProtocol {
	if f.session == nil {
		return ""
	}
	return wire.MCPProtocol(f.session.InitializeResult().ProtocolVersion)
}

// ForwardProtocol returns the protocol version the forwarding ledger's
// session with the server negotiated (its go-sdk client offers the newest
// and takes the server's answer: 2026-07-28 from a server that serves it
// to server/discover, an earlier version from one that initializes); ""
// when the ledger does not forward, or answers from a cassette.
func (s *Server) ForwardProtocol() wire.MCPProtocol {
	if s.fwd == nil {
		return ""
	}
	return s.fwd.protocol()
}

// refreshForwarded lists the server's tools again after it said they
// changed, and offers the new list: tools it no longer lists are removed
// (with the names change_tools gave them), new and changed ones (re)added.
func (s *Server) refreshForwarded() {
	ctx, cancel := context.WithTimeout(context.Background(), s.fwd.limit)
	defer cancel()
	go func() {
		select {
		case <-s.closing:
			cancel()
		case <-ctx.Done():
		}
	}()
	tools, err := s.fwd.list(ctx)
	if err != nil {
		s.log.Warn("forward: the server's tools changed but listing them failed; offering the old list", "err", err)
		return
	}
	s.fwd.mu.Lock()
	s.fwd.tools = tools
	s.fwd.mu.Unlock()
	s.fwd.recordTools(tools)
	s.mu.Lock()
	var removed []string
	for name, base := range s.tools {
		if _, ok := tools[base]; !ok {
			removed = append(removed, name)
			delete(s.tools, name)
		}
	}
	added := map[string]string{}
	for name, base := range s.tools {
		added[name] = base // re-added: the server's tool may have changed
	}
	for name := range tools {
		if _, ok := s.tools[name]; !ok {
			s.tools[name] = name
			added[name] = name
		}
	}
	s.mu.Unlock()
	s.log.Info("forward: the server's tools changed", "removed", removed, "tools", slices.Sorted(maps.Keys(tools)))
	if len(removed) > 0 {
		s.mcp.RemoveTools(removed...)
	}
	for name, base := range added {
		s.addTool(name, base, Annotations{})
	}
}

// addForwarded offers name as the server's tool base, forwarding its calls,
// and reports whether the server lists base.
func (s *Server) addForwarded(name, base string) bool {
	t := s.fwd.tool(base)
	if t == nil {
		return false
	}
	offered := *t
	offered.Name = name
	s.mcp.AddTool(&offered, s.forwardTool(base))
	return true
}

// forwardTool is the handler of a forwarded tool: the faults that fired on
// the call act around one forward of it to the server's tool base.
func (s *Server) forwardTool(base string) mcp.ToolHandler {
	return func(ctx context.Context, req *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
		c := callFrom(ctx, req)
		res, _, err := s.asked(ctx, req, func() (*mcp.CallToolResult, any, error) {
			res := s.preempted(ctx, c)
			var err error
			if res == nil {
				res, err = s.forward(ctx, c, base, req)
				if err == nil {
					s.hold(ctx, c)
				}
			}
			return res, nil, err
		})
		res, _, err = s.direct(ctx, req, res, nil, err)
		return res, err
	}
}

// forwardUnlisted is a forwarding ledger's receiving middleware: it forwards
// a tools/call of a tool the server did not list (and the ledger does not
// offer) as it forwards a call of a listed one, so the server answers it as
// it would without the forwarder, where the SDK would refuse it with its own
// "unknown tool". A tool the server lists that the ledger no longer offers
// (change_tools renamed it) is still the SDK's to refuse. It must run inside
// callMiddleware, which links the call the wrapper received.
func (s *Server) forwardUnlisted(next mcp.MethodHandler) mcp.MethodHandler {
	return func(ctx context.Context, method string, req mcp.Request) (mcp.Result, error) {
		call, ok := req.(*mcp.CallToolRequest)
		if s.fwd == nil || method != "tools/call" || !ok || call.Params == nil {
			return next(ctx, method, req)
		}
		name := call.Params.Name
		s.mu.Lock()
		unlisted := s.unlistedLocked(name)
		s.mu.Unlock()
		if !unlisted {
			return next(ctx, method, req)
		}
		res, err := s.forwardTool(name)(ctx, call)
		if err != nil {
			return nil, err
		}
		if callFrom(ctx, call).protocol.Stateless() {
			if res, err = withResultType(res); err != nil {
				return nil, err
			}
		}
		if res.Content == nil && !res.NeedsInput() {
			answer := *res
			answer.Content = []mcp.Content{} // as the SDK answers: never "null"
			res = &answer
		}
		return res, nil
	}
}

// withResultType returns res as a 2026-07-28 server sends it: with the
// resultType the server gave it, or, from a server of an earlier version
// (which gives none), the one its answer has: "input_required" when it
// asks for input, "complete" otherwise. go-sdk v1.8.0 sets the field only
// on the results of its own handlers and exports no setter, so the copy is
// decoded from res's JSON with the field added.
func withResultType(res *mcp.CallToolResult) (*mcp.CallToolResult, error) {
	b, err := json.Marshal(res)
	if err != nil {
		return nil, fmt.Errorf("forward: encoding the server's answer: %w", err)
	}
	var fields map[string]json.RawMessage
	if err := json.Unmarshal(b, &fields); err != nil {
		return nil, fmt.Errorf("forward: decoding the server's answer: %w", err)
	}
	if _, ok := fields[resultTypeField]; ok {
		return res, nil // the server said it
	}
	fields[resultTypeField] = json.RawMessage(`"complete"`)
	if res.InputRequests != nil {
		fields[resultTypeField] = json.RawMessage(`"input_required"`)
	}
	if b, err = json.Marshal(fields); err != nil {
		return nil, fmt.Errorf("forward: encoding the server's answer: %w", err)
	}
	answer := new(mcp.CallToolResult)
	if err := json.Unmarshal(b, answer); err != nil {
		return nil, fmt.Errorf("forward: decoding the server's answer: %w", err)
	}
	return answer, nil
}

// resultTypeField is the member of a 2026-07-28 result that says whether
// it is complete or asks for input (SEP-2322).
const resultTypeField = "resultType"

// unlistedLocked reports whether a forwarding ledger forwards a call of name
// without offering it (see forwardUnlisted): the server did not list it and
// the ledger does not offer it. s.mu is held.
func (s *Server) unlistedLocked(name string) bool {
	return s.fwd != nil && !s.offeredLocked(name) && s.fwd.tool(name) == nil
}

// forward sends c to the server's tool base once and records what came of
// it (see Forward).
func (s *Server) forward(ctx context.Context, c *call, base string, req *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
	args := req.Params.Arguments
	if s.fwd.replay != nil {
		return s.replayForwarded(c, base, args, req.Extra)
	}
	if gone := s.fwd.gone(); gone != nil {
		s.serverGone(c, gone)
		return nil, &jsonrpc.Error{Code: codeServerGone, Message: fmt.Sprintf("forwarding %s: not sent, nothing ran: %v", base, gone)}
	}
	meta, done := s.fwd.relay.begin(ctx, req.Session, req.Params.Meta)
	defer done()
	// A retry of a call the server answered input-required carries the
	// client's answers and the server's state back to it (MRTR).
	params := &mcp.CallToolParams{Meta: meta, Name: base, InputResponses: req.Params.InputResponses, RequestState: req.Params.RequestState}
	if len(args) > 0 {
		params.Arguments = args
	}
	res, err := s.fwd.session.CallTool(ctx, params)
	s.fwd.recordCall(c.token, base, args, req.Extra, res, err)
	return s.forwarded(c, base, args, res, err)
}

// forwarded records what came of c, forwarded to the server's tool base
// with args: the server's result res or its error err (see Forward).
func (s *Server) forwarded(c *call, base string, args json.RawMessage, res *mcp.CallToolResult, err error) (*mcp.CallToolResult, error) {
	var rpcErr *jsonrpc.Error
	switch {
	case errors.As(err, &rpcErr) && rpcErr.Code != codeRejectedByTransport:
		// The server refused the call (unknown tool, bad arguments): it
		// answered, and a JSON-RPC error runs no tool.
		return nil, rpcErr
	case err != nil:
		s.forwardFault(c, wire.MCPFaultForwardUnknown, func(n *wire.MCPCounts) { n.Unknown++ })
		err = secret.Error(err, s.fwd.cfg.secrets(), secret.Mark)
		s.log.Warn("forward: the server's answer never came back; the call may have run", "tool", base, "token", c.token, "err", err)
		return nil, fmt.Errorf("forwarding %s to the MCP server %s: no answer, the call may have run: %w", base, s.fwd.cfg.where(), err)
	case res.IsError:
		s.setOutcome(c, wire.MCPFaultIsError)
		return res, nil
	case res.InputRequests != nil:
		// Input required (MRTR): the tool has not finished; the retry
		// that carries the answers is the call that does.
		return res, nil
	}
	if s.fwd.writes(base) {
		_, key := wire.CallArgs(args)
		if _, err := s.write(c, base+" "+canonicalArgs(args), key); err != nil {
			s.log.Error("forward: recording a write failed; the server ran it", "tool", base, "err", err)
		}
	}
	return res, nil
}

// serverGone records c as a call refused because the forwarded server's
// process had exited (gone says how).
func (s *Server) serverGone(c *call, gone error) {
	s.forwardFault(c, wire.MCPFaultForwardServerGone, func(n *wire.MCPCounts) { n.ServerGone++ })
	s.log.Warn("forward: the MCP server has exited; the call was refused, nothing ran", "tool", c.tool, "token", c.token, "err", gone)
}

// forwardFault records fault as c's outcome and as a fault event, counted
// by count in c's run's counts and the total.
func (s *Server) forwardFault(c *call, fault string, count func(*wire.MCPCounts)) {
	s.mu.Lock()
	defer s.mu.Unlock()
	c.outcome = fault
	count(&s.runLocked(c.token).counts)
	count(&s.total.counts)
	s.eventLocked(wire.MCPEvent{Token: c.token, Protocol: c.protocol, Kind: wire.MCPFault, Tool: c.tool, RequestID: c.idText, Fault: fault})
}

// codeServerGone is the JSON-RPC error code of a call refused because the
// forwarded server's process had exited.
const codeServerGone = jsonrpc.CodeInternalError

// codeRejectedByTransport is the JSON-RPC code go-sdk v1.8.0 gives a call
// its transport failed to carry or answer (its unexported
// jsonrpc2.ErrRejected: a broken connection, an error status): not the
// server's answer, so the call's outcome is unknown. A 4xx carrying the
// server's JSON-RPC error is wrapped in it too and so counts as unknown:
// the cautious side.
const codeRejectedByTransport = -32005

// canonicalArgs renders JSON arguments as wire.CanonicalJSON does, none as
// "{}".
func canonicalArgs(args json.RawMessage) string {
	if len(args) == 0 {
		return "{}"
	}
	return string(wire.CanonicalJSON(args))
}
