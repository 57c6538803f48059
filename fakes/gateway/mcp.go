package gateway

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"net/url"
	"os/exec"
	"slices"
	"sort"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/replaycheck/replaycheck/internal/wire"
)

// mcpPool holds the gateway's one shared MCP client session, connected on
// first use and replaced when it ends (its Wait returns). A ClientSession is
// safe for concurrent use, so every app request shares it; each tools/call is
// its own POST. A re-send after a dropped connection (MCPResendOnDisconnect)
// uses a fresh session of its own, so other requests' calls are untouched.
//
// Each session keeps the server's standalone SSE stream (a GET) open, where
// notifications/tools/list_changed arrives. The transport never reconnects a
// stream (MaxRetries -1 covers the standalone stream as well as a call's), so
// when the server ends it the session ends, and the next request opens a new
// one and lists its tools anew. Until the session's watcher sees it end, the
// pool may still hand it out: a tools/call it refuses before sending goes
// once on a new session, as one the server refused with 404 (errNotRun).
type mcpPool struct {
	url string
	// command, when set, is the stdio server the pool spawns for each
	// session instead of connecting to url (see stdioTransport).
	command []string
	client  *http.Client // for the MCP transport: sendRecorder, streamHeaderTimeout on GETs
	label   string
	log     *slog.Logger
	stale   bool // StaleToolList: notifications/tools/list_changed is ignored
	// relist lists a session's tools anew after the server said they
	// changed; run in a goroutine of its own (counted in wg).
	relist func(s *mcpSession)

	mu     sync.Mutex
	cur    *mcpSession
	all    map[*mcpSession]bool
	closed bool
	wg     sync.WaitGroup // session watchers
}

// mcpSession is one client session and its cached tool list. The list is
// fetched on first use and dropped when the server says it changed
// (notifications/tools/list_changed); a replaced session starts empty.
type mcpSession struct {
	cs   *mcp.ClientSession
	dead chan struct{}

	toolsMu  sync.Mutex
	tools    []modelTool // nil: not listed yet, or the list changed
	toolsGen uint64      // bumped by every list_changed
}

// cachedTools returns the cached tool list, or nil and the generation a new
// list must be stored under.
func (s *mcpSession) cachedTools() ([]modelTool, uint64) {
	s.toolsMu.Lock()
	defer s.toolsMu.Unlock()
	return s.tools, s.toolsGen
}

// storeTools caches tools unless the list changed since gen was read.
func (s *mcpSession) storeTools(tools []modelTool, gen uint64) {
	s.toolsMu.Lock()
	defer s.toolsMu.Unlock()
	if s.toolsGen == gen {
		s.tools = tools
	}
}

// toolsChanged drops the cached list: the server's tools changed.
func (s *mcpSession) toolsChanged() {
	s.toolsMu.Lock()
	defer s.toolsMu.Unlock()
	s.tools = nil
	s.toolsGen++
}

func (s *mcpSession) alive() bool {
	select {
	case <-s.dead:
		return false
	default:
		return true
	}
}

var errPoolClosed = errors.New("the gateway is closed")

// newMCPPool returns the pool of the MCP server cfg names. Opening a
// session's standalone stream is bounded by cfg.SessionTimeout.
func newMCPPool(cfg Config) *mcpPool {
	client := *cfg.HTTPClient
	next := client.Transport
	if next == nil {
		next = http.DefaultTransport
	}
	client.Transport = sendRecorder{next: streamHeaderTimeout{next: next, timeout: cfg.SessionTimeout}}
	return &mcpPool{url: cfg.MCP, command: cfg.MCPCommand, client: &client, label: cfg.ServerLabel, log: cfg.Logger, stale: cfg.Bugs.Has(StaleToolList)}
}

// streamHeaderTimeout is an http.RoundTripper that gives up on a GET (a
// session's standalone SSE stream) whose response headers do not come within
// timeout. The SDK opens that stream inside Connect on a context of the
// session's own, which no deadline of Connect's caller reaches; the stream
// itself, once answered, lasts as long as the session.
type streamHeaderTimeout struct {
	next    http.RoundTripper
	timeout time.Duration
}

func (t streamHeaderTimeout) RoundTrip(req *http.Request) (*http.Response, error) {
	if req.Method != http.MethodGet {
		return t.next.RoundTrip(req)
	}
	ctx, cancel := context.WithCancel(req.Context())
	timer := time.AfterFunc(t.timeout, cancel)
	resp, err := t.next.RoundTrip(req.WithContext(ctx))
	if !timer.Stop() {
		if err == nil {
			resp.Body.Close()
		}
		cancel()
		return nil, fmt.Errorf("MCP server %s did not answer the GET of its SSE stream within %s", RedactURL(req.URL.String()), t.timeout)
	}
	if err != nil {
		cancel()
		return nil, err
	}
	resp.Body = cancelOnClose{ReadCloser: resp.Body, cancel: cancel}
	return resp, nil
}

// errNotRun marks a tools/call error where the server cannot have run the
// call: no HTTP request carried it (the session had ended and the SDK refused
// the call), or the server answered its request 404 (a session it does not
// know), which the SDK may report as the session's end rather than as
// mcp.ErrSessionMissing when the session fails at the same time.
var errNotRun = errors.New("the call did not run")

// errUnauthorized marks a tools/call error where the server refused the
// call with 401 Unauthorized or 403 Forbidden, also after the transport
// re-authorized once and sent it again: the call did not run, and sending it
// once more would meet the same refusal.
var errUnauthorized = errors.New("the MCP server refused the call as unauthorized")

// sendMark records what became of the HTTP requests made on a context: the
// MCP transport's sendRecorder sets it. Safe for concurrent use.
type sendMark struct {
	sent         atomic.Bool // a request went out: the server may have it
	refused      atomic.Bool // a request was answered 404 Not Found
	unauthorized atomic.Bool // the last answer was 401 or 403
}

// notRun reports whether the server cannot have run what was sent on the
// mark's context.
func (m *sendMark) notRun() bool { return !m.sent.Load() || m.refused.Load() }

type sendMarkKey struct{}

// withSendMark returns ctx carrying a new mark, which every request the MCP
// transport makes on it sets.
func withSendMark(ctx context.Context) (context.Context, *sendMark) {
	m := &sendMark{}
	return context.WithValue(ctx, sendMarkKey{}, m), m
}

// sendRecorder is an http.RoundTripper that records in the sendMark of each
// request's context that the request went out and whether it was answered
// 404.
type sendRecorder struct{ next http.RoundTripper }

func (t sendRecorder) RoundTrip(req *http.Request) (*http.Response, error) {
	m, _ := req.Context().Value(sendMarkKey{}).(*sendMark)
	if m != nil {
		m.sent.Store(true)
	}
	resp, err := t.next.RoundTrip(req)
	if m != nil && err == nil {
		if resp.StatusCode == http.StatusNotFound {
			m.refused.Store(true)
		}
		m.unauthorized.Store(resp.StatusCode == http.StatusUnauthorized || resp.StatusCode == http.StatusForbidden)
	}
	return resp, err
}

// cancelOnClose is a response body that releases its request's context when
// closed.
type cancelOnClose struct {
	io.ReadCloser
	cancel context.CancelFunc
}

func (b cancelOnClose) Close() error {
	err := b.ReadCloser.Close()
	b.cancel()
	return err
}

// session returns the shared session, connecting when there is none.
func (p *mcpPool) session(ctx context.Context) (*mcpSession, error) {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.closed {
		return nil, errPoolClosed
	}
	if p.cur != nil && p.cur.alive() {
		return p.cur, nil
	}
	s, err := p.connectLocked(ctx)
	if err != nil {
		return nil, err
	}
	p.cur = s
	return s, nil
}

// fresh connects a new session that the caller closes with release.
func (p *mcpPool) fresh(ctx context.Context) (*mcpSession, error) {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.closed {
		return nil, errPoolClosed
	}
	return p.connectLocked(ctx)
}

// discard stops handing out s, which the server no longer knows; the next
// session call connects anew.
func (p *mcpPool) discard(s *mcpSession) {
	p.mu.Lock()
	if p.cur == s {
		p.cur = nil
	}
	delete(p.all, s)
	p.mu.Unlock()
	_ = s.cs.Close()
}

// retire stops handing out s and closes it in the background (a stdio
// server that does not exit when its stdin closes is signalled after
// stdioTerminate; close waits for it), so the next session call connects
// anew.
func (p *mcpPool) retire(s *mcpSession) {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.cur == s {
		p.cur = nil
	}
	if p.closed || !p.all[s] {
		return // close closes it, or its watcher saw it end
	}
	p.wg.Add(1)
	go func() {
		defer p.wg.Done()
		_ = s.cs.Close()
	}()
}

// release closes a session obtained from fresh.
func (p *mcpPool) release(s *mcpSession) {
	p.mu.Lock()
	delete(p.all, s)
	p.mu.Unlock()
	_ = s.cs.Close()
}

func (p *mcpPool) connectLocked(ctx context.Context) (*mcpSession, error) {
	s := &mcpSession{dead: make(chan struct{})}
	client := mcp.NewClient(&mcp.Implementation{Name: "replaycheck-gateway", Version: "1"}, &mcp.ClientOptions{
		ToolListChangedHandler: func(context.Context, *mcp.ToolListChangedRequest) {
			if p.stale {
				p.log.Warn("mcp tool list changed; keeping the list this session started with", "server", p.label)
				return
			}
			s.toolsChanged()
			p.log.Info("mcp tool list changed; listing anew", "server", p.label)
			p.mu.Lock()
			defer p.mu.Unlock()
			if p.closed || p.relist == nil {
				return
			}
			p.wg.Add(1)
			go func() {
				defer p.wg.Done()
				p.relist(s)
			}()
		},
		// The gateway runs its MCP tools auto-approved, so it confirms what
		// a server asks before running one (MRTR's input-required result,
		// or elicitation/create): the call goes ahead as it would have.
		ElicitationHandler: func(context.Context, *mcp.ElicitRequest) (*mcp.ElicitResult, error) {
			return &mcp.ElicitResult{Action: "accept"}, nil
		},
	})
	var transport mcp.Transport = &mcp.StreamableClientTransport{
		Endpoint:     p.url,
		HTTPClient:   p.client,
		MaxRetries:   -1, // never resume or re-send on the transport's own initiative
		OAuthHandler: reauthorizer{label: p.label, log: p.log},
	}
	if p.command != nil {
		transport = stdioTransport{command: p.command}
	}
	// A session whose initialize fails is closed by Connect, which ends a
	// spawned process too.
	// With no options the client asks for 2026-07-28 (server/discover) and
	// falls back to initialize when the server refuses it.
	cs, err := client.Connect(ctx, transport, nil)
	if err != nil {
		return nil, fmt.Errorf("connecting to MCP server %s: %w", p.describe(), err)
	}
	s.cs = cs
	if p.all == nil {
		p.all = map[*mcpSession]bool{}
	}
	p.all[s] = true
	p.wg.Add(1)
	go func() {
		defer p.wg.Done()
		_ = cs.Wait()
		close(s.dead)
		p.mu.Lock()
		delete(p.all, s)
		p.mu.Unlock()
	}()
	return s, nil
}

// describe names the MCP server for an error: its URL, or the stdio
// command the pool spawns.
func (p *mcpPool) describe() string {
	if p.command != nil {
		return fmt.Sprintf("%q (stdio)", p.command[0])
	}
	return RedactURL(p.url)
}

// close closes every session and waits for their watchers.
func (p *mcpPool) close() error {
	p.mu.Lock()
	p.closed = true
	sessions := make([]*mcpSession, 0, len(p.all))
	for s := range p.all {
		sessions = append(sessions, s)
	}
	p.all, p.cur = nil, nil
	p.mu.Unlock()
	var errs []error
	for _, s := range sessions {
		var exit *exec.ExitError // a stdio server's exit status: it ended
		if err := s.cs.Close(); err != nil && !errors.Is(err, mcp.ErrConnectionClosed) && !errors.As(err, &exit) {
			errs = append(errs, err)
		}
	}
	p.wg.Wait()
	return errors.Join(errs...)
}

// listTools returns the MCP server's tools as functions for the model, named
// "<label>-<tool>", in name order: the list cached on the shared session, or
// a fresh tools/list when there is none. Opening the session and listing are
// bounded by SessionTimeout, not by the tool timeout, which bounds only
// tools/call.
func (g *Gateway) listTools(ctx context.Context) ([]modelTool, error) {
	ctx, cancel := context.WithTimeout(ctx, g.cfg.SessionTimeout)
	defer cancel()
	s, err := g.pool.session(ctx)
	if err != nil {
		return nil, err
	}
	tools, gen := s.cachedTools()
	if tools != nil {
		return tools, nil
	}
	if tools, err = g.fetchTools(ctx, s); err != nil {
		return nil, err
	}
	s.storeTools(tools, gen)
	return tools, nil
}

// relist lists the tools of s anew, bounded by SessionTimeout, unless a
// request listed them since they changed; a failure leaves the list to the
// next request.
func (g *Gateway) relist(s *mcpSession) {
	ctx, cancel := context.WithTimeout(context.Background(), g.cfg.SessionTimeout)
	defer cancel()
	tools, gen := s.cachedTools()
	if tools != nil {
		return
	}
	tools, err := g.fetchTools(ctx, s)
	if err != nil {
		g.cfg.Logger.Debug("mcp tools not listed after list_changed; the next request lists them", "err", err)
		return
	}
	s.storeTools(tools, gen)
}

// fetchTools lists the tools of s with tools/list, following cursors.
func (g *Gateway) fetchTools(ctx context.Context, s *mcpSession) ([]modelTool, error) {
	out := []modelTool{}
	params := &mcp.ListToolsParams{}
	for {
		res, err := s.cs.ListTools(ctx, params)
		if err != nil {
			return nil, fmt.Errorf("listing the tools of MCP server '%s': %w", g.cfg.ServerLabel, err)
		}
		for _, t := range res.Tools {
			out = append(out, g.modelTool(t))
		}
		if res.NextCursor == "" {
			break
		}
		params = &mcp.ListToolsParams{Cursor: res.NextCursor}
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Name < out[j].Name })
	return out, nil
}

// modelTool converts an MCP tool to the function the model is offered: the
// idempotency_key property, which the gateway fills, is taken out.
func (g *Gateway) modelTool(t *mcp.Tool) modelTool {
	mt := modelTool{Name: g.cfg.ServerLabel + "-" + t.Name, Tool: t.Name, Description: t.Description}
	var schema map[string]any
	if b, err := json.Marshal(t.InputSchema); err == nil {
		_ = json.Unmarshal(b, &schema)
	}
	if schema == nil {
		schema = map[string]any{"type": "object"}
	}
	props, _ := schema["properties"].(map[string]any)
	// A tool taking wire.KeyArgument is keyed: the gateway fills it, one
	// key per logical action, so the model does not see it.
	if _, keyed := props[wire.KeyArgument]; keyed {
		mt.Keyed = true
		delete(props, wire.KeyArgument)
		if req, ok := schema["required"].([]any); ok {
			schema["required"] = slices.DeleteFunc(slices.Clone(req), func(r any) bool { return r == wire.KeyArgument })
		}
	}
	mt.Parameters = schema
	mt.schema, _ = json.Marshal(schema) // a map decoded from JSON marshals
	return mt
}

// mcpFailure says how a tools/call that returned an error failed.
type mcpFailure int

const (
	// mcpServerError: the server answered with a JSON-RPC error; the round
	// trip completed.
	mcpServerError mcpFailure = iota
	// mcpTransport: the call may or may not have reached the server and run
	// (connection dropped, reset, refused): the ambiguous case.
	mcpTransport
	// mcpTimeout: the gateway stopped waiting.
	mcpTimeout
)

// classifyMCPError sorts a CallTool error. The SDK reports a dropped POST as
// "rejected by transport" (-32005), which it wraps in a JSON-RPC error too, so
// the codes the SDK uses for its own transport failures are told apart.
func classifyMCPError(err error) mcpFailure {
	if isContextErr(err) {
		return mcpTimeout
	}
	var we *jsonrpc.Error
	if errors.As(err, &we) {
		switch we.Code {
		case -32005, -32003, -32004: // rejected by transport, client closing, server closing
			return mcpTransport
		}
		return mcpServerError
	}
	return mcpTransport
}

// resultText renders a tool result for the model.
func resultText(res *mcp.CallToolResult) string {
	var parts []string
	for _, c := range res.Content {
		if tc, ok := c.(*mcp.TextContent); ok {
			parts = append(parts, tc.Text)
		}
	}
	if len(parts) > 0 {
		return strings.Join(parts, "\n")
	}
	if res.StructuredContent != nil {
		if b, err := json.Marshal(res.StructuredContent); err == nil {
			return string(b)
		}
	}
	b, err := json.Marshal(res.Content)
	if err != nil {
		return ""
	}
	return string(b)
}

// RedactURL returns raw fit to show: the password of its userinfo and the
// value of every query parameter (where API keys travel, as in ?key=…) are
// replaced by "xxxxx". A URL that does not parse is replaced whole.
func RedactURL(raw string) string {
	u, err := url.Parse(raw)
	if err != nil {
		return "(unparsable URL, not shown)"
	}
	if u.RawQuery != "" {
		q := u.Query()
		for k, vs := range q {
			for i := range vs {
				vs[i] = "xxxxx"
			}
			q[k] = vs
		}
		u.RawQuery = q.Encode()
	}
	return u.Redacted()
}
