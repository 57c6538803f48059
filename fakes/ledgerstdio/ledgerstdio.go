// Package ledgerstdio is the ledger over MCP stdio: the server a client
// spawns as a process (replaycheck ledger-stdio URL), which offers the tools
// of one run's ledger and forwards each call to it once. The ledger records
// each process as a spawn, attributed to the run whose address it connected
// to, and its end (wire.MCPExit). Serve is the whole server; Command is its
// argv for a client's config.
//
// It serves the replaycheck command and its tests; it is not an API and may
// change in any release (replaycheck's Go API is replaychecktest and the
// fakes it arms: fakes/upstream, fakes/ledger, fakes/fault).
//
// The process obeys the ledger's stdio faults (ledger.StdioExit, StdioHang,
// StdioMalformedLine): the ledger arms, counts and records them per run, so
// their counts survive respawns, and tells the process what to do. At start,
// the ledger answers the process's initialize with ledger.StdioFaultHeader:
// the process exits (FaultExitCode) before serving. On a call, the ledger's
// result carries the fault's name under the _meta key ledger.StdioFaultMeta;
// the process strips it as it writes the answer to stdout (the client never
// sees it) and exits before the answer, after it, hangs instead of writing
// it, or writes a line that is not JSON-RPC before it. Exiting is a real
// exit (Options.Exit, os.Exit by default), never a clean end.
package ledgerstdio

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"os"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"time"

	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/replaycheck/replaycheck/fakes/ledger"
	"github.com/replaycheck/replaycheck/internal/wire"
)

// DefaultConnectTimeout bounds each wait for the ledger's answer while
// connecting to it and listing its tools when Options.ConnectTimeout is 0.
const DefaultConnectTimeout = 10 * time.Second

// Name is the replaycheck command that runs Serve: a client spawns
// [replaycheck, Name, URL].
const Name = "ledger-stdio"

// ErrBadUsage marks an Options error: a URL that is not the ledger's, a
// negative timeout.
var ErrBadUsage = errors.New("bad usage")

// Options are the arguments of Serve.
type Options struct {
	// URL is the ledger's Streamable HTTP URL: for a client run, the run's
	// own ({{mcp_url}}).
	URL string
	// ConnectTimeout bounds connecting to the ledger (initialize) and
	// listing its tools: each wait for an answer of the ledger's, so a
	// ledger that answers slowly on a busy machine is waited for as long as
	// it answers; 0 means DefaultConnectTimeout.
	ConnectTimeout time.Duration
	// PID is the process id announced to the ledger (the PID of its spawn
	// and exit events); 0 means this process's.
	PID int

	// In and Out carry the MCP messages (stdin and stdout); In ending ends
	// the command. ErrOut gets nothing but what the command says in words.
	In     io.Reader
	Out    io.Writer
	ErrOut io.Writer
	// Version is this server's version in its MCP implementation info.
	Version string
	// Exit ends the process when a stdio fault says so, with FaultExitCode;
	// nil means os.Exit. A test's may return: Serve then writes nothing more
	// and returns an error wrapping ErrExited.
	Exit func(code int)
}

// Serve connects to the ledger at opts.URL, then serves its tools over
// opts.In and opts.Out until In ends or ctx is done. An error wrapping
// ErrBadUsage is a bad option; ctx ending returns its cause.
func Serve(ctx context.Context, opts *Options) error {
	u, err := url.Parse(opts.URL)
	if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
		return fmt.Errorf("ledger-stdio: %q is not the ledger's http(s) URL, e.g. http://127.0.0.1:8766/mcp: %w", opts.URL, ErrBadUsage)
	}
	if opts.ConnectTimeout < 0 {
		return fmt.Errorf("ledger-stdio: connect timeout %s is negative: %w", opts.ConnectTimeout, ErrBadUsage)
	}
	limit := opts.ConnectTimeout
	if limit == 0 {
		limit = DefaultConnectTimeout
	}
	pid := opts.PID
	if pid == 0 {
		pid = os.Getpid()
	}
	exit := opts.Exit
	if exit == nil {
		exit = os.Exit
	}

	announcer := &spawnAnnouncer{pid: strconv.Itoa(pid), next: http.DefaultTransport}
	relay := &toolRelay{limit: limit, unforwarded: &announcer.unforwarded}
	ledgerSession, tools, err := connectLedger(ctx, opts.URL, announcer, limit, relay, opts.Version)
	if start := announcer.start.get(); stdioEffect(start) == wire.StdioExitAtStart {
		if ledgerSession != nil {
			_ = ledgerSession.Close()
		}
		return exitAtStart(exit, start)
	}
	if err != nil {
		return err
	}
	// The session is closed once, with why the process ends; a process a
	// fault killed never closes it (the ledger recorded its end).
	end := wire.MCPExitStopped
	exited := false
	defer func() {
		if !exited {
			announcer.end.Store(&end)
			_ = ledgerSession.Close()
		}
	}()

	info := &mcp.Implementation{Name: "replaycheck-ledger-stdio", Version: opts.Version}
	if r := ledgerSession.InitializeResult(); r != nil && r.ServerInfo != nil {
		info = r.ServerInfo
	}
	n := &negotiation{pin: announcer.pin.get()}
	versions, err := serverVersions(n.pin)
	if err != nil {
		return err
	}
	server := mcp.NewServer(info, &mcp.ServerOptions{SupportedProtocolVersions: versions})
	server.AddReceivingMiddleware(n.middleware)
	runCtx, died := context.WithCancelCause(ctx)
	defer died(nil)
	relay.start(runCtx, server, n, ledgerSession, tools)
	defer relay.wait()
	// A hung answer is also let go when the ledger ends the session (its
	// run is over): nothing would ever read it, and the client's close
	// of a server it gave up on need not wait for the process.
	stop := make(chan struct{})
	go func() {
		select {
		case <-runCtx.Done():
		case <-ledgerGone(ledgerSession):
		}
		close(stop)
	}()
	in := newStdin(opts.In, relay.read)
	out := &stdout{w: opts.Out, exit: exit, stdinDone: in.done, stop: stop, died: func() {
		announcer.dead.Store(true)
		died(ErrExited)
	}}
	err = relay.server.Run(runCtx, &mcp.IOTransport{Reader: in, Writer: nopWriteCloser{out}})
	switch {
	case out.dead.Load():
		// Only when Exit returned (a test's): a dead process says no
		// goodbye, so the announcer refuses the DELETE; closing frees the
		// session's streams.
		exited = true
		_ = ledgerSession.Close()
		return fmt.Errorf("ledger-stdio: a stdio fault made the process exit: %w", ErrExited)
	case ctx.Err() != nil:
		return context.Cause(ctx)
	case err != nil && !stdioEnded(err):
		return fmt.Errorf("ledger-stdio: serving over stdio: %w", err)
	}
	end, exited = wire.MCPExitStdinClosed, true
	announcer.end.Store(&end)
	if err := ledgerSession.Close(); err != nil {
		return fmt.Errorf("ledger-stdio: closing the ledger session: %w", err)
	}
	return nil
}

// ledgerGone returns a channel closed when the ledger session ends.
func ledgerGone(s *mcp.ClientSession) <-chan struct{} {
	gone := make(chan struct{})
	go func() {
		_ = s.Wait()
		close(gone)
	}()
	return gone
}

// stdioEnded reports whether err is the client ending the stdio
// connection: stdin at its end, or stdout closed by the reader (a
// notification the server wrote as the client went away).
func stdioEnded(err error) bool {
	return errors.Is(err, io.EOF) || errors.Is(err, io.ErrClosedPipe) || errors.Is(err, syscall.EPIPE) || errors.Is(err, os.ErrClosed)
}

// connectLedger opens an MCP session with the ledger at endpoint through
// announcer (which announces the process as a spawn), and lists its tools,
// giving up when the ledger answers nothing for limit (each answer restarts
// the wait). The caller closes the session.
func connectLedger(ctx context.Context, endpoint string, announcer *spawnAnnouncer, limit time.Duration, relay *toolRelay, version string) (*mcp.ClientSession, []*mcp.Tool, error) {
	cctx, cancel := context.WithCancelCause(ctx)
	defer cancel(nil)
	quiet := time.AfterFunc(limit, func() {
		cancel(fmt.Errorf("the ledger answered nothing for %s: %w", limit, context.DeadlineExceeded))
	})
	defer quiet.Stop()
	restart := func() { quiet.Reset(limit) }
	announcer.answered.Store(&restart)
	defer announcer.answered.Store(nil)
	transport := &mcp.StreamableClientTransport{
		Endpoint:   endpoint,
		HTTPClient: &http.Client{Transport: announcer},
		// A broken stream is not resumed: the call it carried is answered
		// as failed, never sent again.
		MaxRetries: -1,
	}
	client := mcp.NewClient(&mcp.Implementation{Name: "replaycheck-ledger-stdio", Version: version}, &mcp.ClientOptions{
		ToolListChangedHandler: func(context.Context, *mcp.ToolListChangedRequest) { relay.changed() },
	})
	session, err := client.Connect(cctx, transport, nil)
	if err != nil {
		return nil, nil, fmt.Errorf("ledger-stdio: connecting to the ledger at %s: %w", endpoint, err)
	}
	var tools []*mcp.Tool
	for t, err := range session.Tools(cctx, nil) {
		if err != nil {
			_ = session.Close()
			return nil, nil, fmt.Errorf("ledger-stdio: listing the ledger's tools at %s: %w", endpoint, err)
		}
		tools = append(tools, t)
	}
	return session, tools, nil
}

// toolRelay keeps the tools offered over stdio those the ledger lists: when
// the ledger says its list changed, it lists them again and the stdio server
// offers the new list (the SDK then tells the stdio client). Its methods are
// safe for concurrent use.
type toolRelay struct {
	limit       time.Duration // bounds one listing
	unforwarded *unforwarded  // notes the calls read and those forwarded
	server      *mcp.Server   // set by start
	ledger      *mcp.ClientSession
	n           *negotiation // the server's with its client; set by start

	mu      sync.Mutex
	ctx     context.Context // ends the refreshes; set by start
	offered []string
	started bool
	missed  bool           // the list changed before start
	pending sync.WaitGroup // refreshes under way
}

// start offers tools on server, each forwarded to ledger with the protocol
// version n says the client used, until ctx is done; a change the ledger
// announced before is listed again.
func (r *toolRelay) start(ctx context.Context, server *mcp.Server, n *negotiation, ledger *mcp.ClientSession, tools []*mcp.Tool) {
	r.mu.Lock()
	r.ctx, r.server, r.n, r.ledger, r.started = ctx, server, n, ledger, true
	r.offerLocked(tools)
	missed := r.missed
	r.mu.Unlock()
	if missed {
		r.changed()
	}
}

// changed lists the ledger's tools again, in the background: a
// notification handler must not wait on the session it came from. A change
// before start is listed again by start.
func (r *toolRelay) changed() {
	r.mu.Lock()
	defer r.mu.Unlock()
	if !r.started {
		r.missed = true
		return
	}
	r.pending.Add(1)
	go func() {
		defer r.pending.Done()
		ctx, cancel := context.WithTimeout(r.ctx, r.limit)
		defer cancel()
		var tools []*mcp.Tool
		for t, err := range r.ledger.Tools(ctx, nil) {
			if err != nil {
				return // the old list stays; its calls get the ledger's answer
			}
			tools = append(tools, t)
		}
		r.mu.Lock()
		defer r.mu.Unlock()
		r.offerLocked(tools)
	}()
}

// read notes a tools/call of tool read from the client as unforwarded
// until it is forwarded, when the tool is offered: the server answers a
// call of another as unknown, as the ledger would.
func (r *toolRelay) read(tool string) {
	r.mu.Lock()
	offered := slices.Contains(r.offered, tool)
	r.mu.Unlock()
	if offered {
		r.unforwarded.readCall(tool)
	}
}

// wait waits for the refreshes under way.
func (r *toolRelay) wait() { r.pending.Wait() }

// offerLocked makes tools the offered list. r.mu must be held.
func (r *toolRelay) offerLocked(tools []*mcp.Tool) {
	var names []string
	for _, t := range tools {
		names = append(names, t.Name)
	}
	var gone []string
	for _, n := range r.offered {
		if !slices.Contains(names, n) {
			gone = append(gone, n)
		}
	}
	if len(gone) > 0 {
		r.server.RemoveTools(gone...)
	}
	for _, t := range tools {
		r.server.AddTool(t, forwardCall(r.ledger, r.n, r.unforwarded))
	}
	r.offered = names
}

// forwardCall returns the handler of every offered tool: it sends the call
// to the ledger once and answers with the ledger's result as it is (isError
// included), or with the ledger's JSON-RPC error, or with an error saying
// the call could not be forwarded (then the client cannot know whether it
// ran). The call to the ledger carries the protocol version the client
// used (n), for the announcer to send. A call sent to the ledger is noted
// as forwarded in u.
func forwardCall(ledgerSession *mcp.ClientSession, n *negotiation, u *unforwarded) mcp.ToolHandler {
	return func(ctx context.Context, req *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
		ctx, given := u.track(ctx, req.Params.Name)
		res, err := ledgerSession.CallTool(withProtocol(ctx, n.of(req)), &mcp.CallToolParams{
			Meta:      hopMeta(req.Params.Meta),
			Name:      req.Params.Name,
			Arguments: req.Params.Arguments,
		})
		given(err)
		var rpcErr *jsonrpc.Error
		switch {
		case errors.As(err, &rpcErr):
			return nil, rpcErr
		case err != nil:
			return nil, fmt.Errorf("forwarding %s to the ledger: %w", req.Params.Name, err)
		}
		return res, nil
	}
}

// hopMeta is the _meta of a call to forward: the client's, without the
// protocol's own keys (io.modelcontextprotocol/…: protocol version, client
// info and capabilities), which describe the stdio hop and which the SDK
// sets afresh for the ledger's; nil when nothing is left.
func hopMeta(m mcp.Meta) mcp.Meta {
	var out mcp.Meta
	for k, v := range m {
		if strings.HasPrefix(k, "io.modelcontextprotocol/") {
			continue
		}
		if out == nil {
			out = mcp.Meta{}
		}
		out[k] = v
	}
	return out
}

// spawnAnnouncer sets ledger.StdioSpawnHeader on every request to the
// ledger, so the initialize of this process counts as one spawn,
// ledger.StdioProtocolHeader on a forwarded call (the version its client
// used, see withProtocol), and ledger.StdioEndHeader (end, once set) and
// ledger.StdioUnforwardedHeader (the calls in unforwarded) on the DELETE
// that closes the session; it notes the stdio fault the ledger answers the
// initialize with (ledger.StdioFaultHeader) in start, and the version the
// ledger pins (ledger.StdioPinHeader) in pin.
type spawnAnnouncer struct {
	pid   string
	next  http.RoundTripper
	end   atomic.Pointer[wire.MCPExitEnd]
	start noted[string]           // the stdio fault at start
	pin   noted[wire.MCPProtocol] // the pinned version
	dead  atomic.Bool             // a stdio fault made the process exit: nothing more is sent
	// unforwarded are the calls read from the client and never sent.
	unforwarded unforwarded
	// answered, while set, is called on each answer of the ledger's: it
	// restarts connectLedger's wait.
	answered atomic.Pointer[func()]
}

func (a *spawnAnnouncer) RoundTrip(r *http.Request) (*http.Response, error) {
	if a.dead.Load() {
		return nil, ErrExited
	}
	r = r.Clone(r.Context())
	r.Header.Set(ledger.StdioSpawnHeader, a.pid)
	if p := protocolOf(r.Context()); p != "" {
		r.Header.Set(ledger.StdioProtocolHeader, string(p))
	}
	if end := a.end.Load(); end != nil && r.Method == http.MethodDelete {
		r.Header.Set(ledger.StdioEndHeader, string(*end))
		a.unforwarded.name(r.Header)
	}
	resp, err := a.next.RoundTrip(r)
	if answered := a.answered.Load(); answered != nil && err == nil {
		(*answered)()
	}
	if err == nil {
		if f := resp.Header.Get(ledger.StdioFaultHeader); f != "" {
			a.start.set(f)
		}
		if p := resp.Header.Get(ledger.StdioPinHeader); p != "" {
			a.pin.set(wire.MCPProtocol(p))
		}
	}
	return resp, err
}

// nopWriteCloser is stdout for the stdio transport: closing the MCP
// connection does not close the writer, which belongs to the caller.
type nopWriteCloser struct{ io.Writer }

func (nopWriteCloser) Close() error { return nil }

// Main serves over this process's stdin and stdout when args are [Name,
// URL], as `replaycheck ledger-stdio URL` does, and returns the exit code (0,
// 1 on a failure, 2 on bad usage) and true; for other args (a flag such as
// --help in place of URL included) it returns false. A test binary that
// stands in for replaycheck calls it first thing.
func Main(args []string) (int, bool) {
	if len(args) != 2 || args[0] != Name || strings.HasPrefix(args[1], "-") {
		return 0, false
	}
	err := Serve(context.Background(), &Options{URL: args[1], In: os.Stdin, Out: os.Stdout, ErrOut: os.Stderr, Version: "test"})
	switch {
	case err == nil:
		return 0, true
	case errors.Is(err, ErrBadUsage):
		fmt.Fprintln(os.Stderr, err)
		return 2, true
	}
	fmt.Fprintln(os.Stderr, err)
	return 1, true
}
