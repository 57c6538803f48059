package main

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
	"syscall"
	"time"

	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
	"github.com/modelcontextprotocol/go-sdk/mcp"
	"github.com/spf13/cobra"

	"github.com/replaycheck/replaycheck/fakes/ledger"
)

// defaultStdioConnectTimeout bounds connecting to the ledger and listing its
// tools when --connect-timeout is not given.
const defaultStdioConnectTimeout = 10 * time.Second

// ledgerStdioOptions are the arguments of `replaycheck ledger-stdio`.
type ledgerStdioOptions struct {
	// URL is the ledger's Streamable HTTP URL: for a client run, the run's
	// own ({{mcp_url}}).
	URL string
	// ConnectTimeout bounds connecting to the ledger (initialize) and
	// listing its tools; 0 means defaultStdioConnectTimeout.
	ConnectTimeout time.Duration
	// PID is the process id announced to the ledger (the spawn's Detail);
	// 0 means this process's.
	PID int

	// In and Out carry the MCP messages (stdin and stdout); In ending ends
	// the command. ErrOut gets nothing but what the command says in words.
	In     io.Reader
	Out    io.Writer
	ErrOut io.Writer
}

func newLedgerStdioCmd() *cobra.Command {
	opts := &ledgerStdioOptions{}
	cmd := &cobra.Command{
		Use:   "ledger-stdio URL",
		Short: "Serve a run's ledger over MCP stdio, for a client that spawns its MCP servers",
		Long: `ledger-stdio is an MCP server over stdio (newline-delimited JSON-RPC on stdin
and stdout) for agents that only spawn their MCP servers as processes. It
belongs to one ledger: it connects to URL, the ledger's Streamable HTTP URL
(in a client target file, the run's own: {{mcp_url}}), offers over stdio the
tools the ledger lists, as the ledger lists them (names, descriptions, input
schemas, annotations), and forwards each tools/call to the ledger, passing its
result back unchanged. The ledger runs and records every call and write, so
they are counted for the run exactly as over HTTP; a call is never sent twice
(a failure forwarding it is answered as an error, not retried).

Each process announces itself on its connection (the Replaycheck-Stdio-Spawn
header, its process id), so the ledger records one spawn event per process a
client starts, counted as spawns. When stdin closes, it closes its ledger
session and exits 0. It waits at most --connect-timeout for the ledger.

In a client target file, {{ledger_stdio_json}} is this command as a JSON
array for the run, {{ledger_stdio_command}} the binary and
{{ledger_stdio_args_json}} its arguments (see the README).`,
		Example: `  # the stdio server a client target's MCP config names, for the run's ledger
  replaycheck ledger-stdio http://127.0.0.1:8766/mcp

  # against a standalone ledger ('replaycheck serve')
  replaycheck ledger-stdio --connect-timeout 30s http://127.0.0.1:8766/mcp`,
		Args: cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			opts.URL = args[0]
			opts.In, opts.Out, opts.ErrOut = cmd.InOrStdin(), cmd.OutOrStdout(), cmd.ErrOrStderr()
			return runLedgerStdio(cmd.Context(), opts)
		},
	}
	cmd.Flags().DurationVar(&opts.ConnectTimeout, "connect-timeout", defaultStdioConnectTimeout, "how long to wait for the ledger to answer initialize and tools/list")
	return cmd
}

// runLedgerStdio connects to the ledger at opts.URL, then serves its tools
// over opts.In and opts.Out until In ends or ctx is done.
func runLedgerStdio(ctx context.Context, opts *ledgerStdioOptions) error {
	u, err := url.Parse(opts.URL)
	if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
		return asUsage(fmt.Errorf("ledger-stdio: %q is not the ledger's http(s) URL, e.g. http://127.0.0.1:8766/mcp", opts.URL))
	}
	if opts.ConnectTimeout < 0 {
		return asUsage(fmt.Errorf("ledger-stdio: --connect-timeout %s is negative", opts.ConnectTimeout))
	}
	limit := opts.ConnectTimeout
	if limit == 0 {
		limit = defaultStdioConnectTimeout
	}
	pid := opts.PID
	if pid == 0 {
		pid = os.Getpid()
	}

	relay := &toolRelay{limit: limit}
	ledgerSession, tools, err := connectLedger(ctx, opts.URL, pid, limit, relay)
	if err != nil {
		return err
	}
	defer ledgerSession.Close()

	info := &mcp.Implementation{Name: "replaycheck-ledger-stdio", Version: version}
	if r := ledgerSession.InitializeResult(); r != nil && r.ServerInfo != nil {
		info = r.ServerInfo
	}
	relay.start(ctx, mcp.NewServer(info, nil), ledgerSession, tools)
	defer relay.wait()
	in, ok := opts.In.(io.ReadCloser)
	if !ok {
		in = io.NopCloser(opts.In)
	}
	err = relay.server.Run(ctx, &mcp.IOTransport{Reader: in, Writer: nopWriteCloser{opts.Out}})
	if ctx.Err() != nil {
		return interrupted{context.Cause(ctx)}
	}
	if err != nil && !stdioEnded(err) {
		return fmt.Errorf("ledger-stdio: serving over stdio: %w", err)
	}
	if err := ledgerSession.Close(); err != nil {
		return fmt.Errorf("ledger-stdio: closing the ledger session: %w", err)
	}
	return nil
}

// stdioEnded reports whether err is the client ending the stdio
// connection: stdin at its end, or stdout closed by the reader (a
// notification the server wrote as the client went away).
func stdioEnded(err error) bool {
	return errors.Is(err, io.EOF) || errors.Is(err, io.ErrClosedPipe) || errors.Is(err, syscall.EPIPE) || errors.Is(err, os.ErrClosed)
}

// connectLedger opens an MCP session with the ledger at endpoint, announcing
// pid as a spawn, and lists its tools, within limit. The caller closes the
// session.
func connectLedger(ctx context.Context, endpoint string, pid int, limit time.Duration, relay *toolRelay) (*mcp.ClientSession, []*mcp.Tool, error) {
	cctx, cancel := context.WithTimeout(ctx, limit)
	defer cancel()
	transport := &mcp.StreamableClientTransport{
		Endpoint:   endpoint,
		HTTPClient: &http.Client{Transport: spawnAnnouncer{pid: strconv.Itoa(pid), next: http.DefaultTransport}},
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
	limit  time.Duration // bounds one listing
	server *mcp.Server   // set by start
	ledger *mcp.ClientSession

	mu      sync.Mutex
	ctx     context.Context // ends the refreshes; set by start
	offered []string
	started bool
	missed  bool           // the list changed before start
	pending sync.WaitGroup // refreshes under way
}

// start offers tools on server, each forwarded to ledger, until ctx is
// done; a change the ledger announced before is listed again.
func (r *toolRelay) start(ctx context.Context, server *mcp.Server, ledger *mcp.ClientSession, tools []*mcp.Tool) {
	r.mu.Lock()
	r.ctx, r.server, r.ledger, r.started = ctx, server, ledger, true
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
		r.server.AddTool(t, forwardCall(r.ledger))
	}
	r.offered = names
}

// forwardCall returns the handler of every offered tool: it sends the call
// to the ledger once and answers with the ledger's result as it is (isError
// included), or with the ledger's JSON-RPC error, or with an error saying
// the call could not be forwarded (then the client cannot know whether it
// ran).
func forwardCall(ledgerSession *mcp.ClientSession) mcp.ToolHandler {
	return func(ctx context.Context, req *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
		res, err := ledgerSession.CallTool(ctx, &mcp.CallToolParams{
			Meta:      hopMeta(req.Params.Meta),
			Name:      req.Params.Name,
			Arguments: req.Params.Arguments,
		})
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
// ledger, so the initialize of this process counts as one spawn.
type spawnAnnouncer struct {
	pid  string
	next http.RoundTripper
}

func (a spawnAnnouncer) RoundTrip(r *http.Request) (*http.Response, error) {
	r = r.Clone(r.Context())
	r.Header.Set(ledger.StdioSpawnHeader, a.pid)
	return a.next.RoundTrip(r)
}

// nopWriteCloser is stdout for the stdio transport: closing the MCP
// connection does not close the writer, which belongs to the caller.
type nopWriteCloser struct{ io.Writer }

func (nopWriteCloser) Close() error { return nil }
