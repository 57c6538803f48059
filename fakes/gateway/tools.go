package gateway

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http/httptrace"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/replaycheck/replaycheck/internal/wire"
)

// maxToolRounds bounds the model → tools → model rounds of one attempt.
const maxToolRounds = 8

// ours reports whether every call of turn names one of the offered MCP tools,
// so the gateway runs them; a call to an app's own function is the app's.
func ours(turn *modelTurn, tools []modelTool) bool {
	if len(turn.Calls) == 0 {
		return false
	}
	for _, c := range turn.Calls {
		if findTool(tools, c.Name) == nil {
			return false
		}
	}
	return true
}

func findTool(tools []modelTool, name string) *modelTool {
	for i := range tools {
		if tools[i].Name == name {
			return &tools[i]
		}
	}
	return nil
}

// runTools runs the model's MCP tool calls one after another and returns
// what the model is told about each.
func (g *Gateway) runTools(ctx context.Context, rs *requestState, at *attemptState, calls []toolCall, tools []modelTool) []toolResult {
	results := make([]toolResult, 0, len(calls))
	for _, c := range calls {
		at.calls++
		out, ok := rs.restoredOutput(at.calls, c.Name, g.cfg.ServerLabel)
		if !ok {
			g.callSent(rs, at.calls, c.Name)
			out = g.runTool(ctx, rs, at, c, findTool(tools, c.Name))
			g.callDone(rs, at.calls, c.Name, out)
		}
		results = append(results, toolResult{CallID: c.ID, Output: out})
	}
	return results
}

// runTool runs one auto-approved MCP tool call and returns the text the
// model gets. It records in at whether the call was dispatched (handed to the
// MCP session) and whether it carried an idempotency key.
func (g *Gateway) runTool(ctx context.Context, rs *requestState, at *attemptState, c toolCall, tool *modelTool) string {
	label := g.cfg.ServerLabel
	log := g.cfg.Logger.With("request", rs.id, "attempt", at.number, "tool", c.Name)
	if rs.req.BlockMCP {
		log.Info("mcp call blocked by guardrail", "guardrail", GuardrailBlockMCP)
		return fmt.Sprintf("MCP tool call %s was blocked by guardrail '%s' before it ran: MCP tool calls are blocked. Nothing was sent to MCP server '%s'.", c.Name, GuardrailBlockMCP, label)
	}
	args := map[string]any{}
	if strings.TrimSpace(c.Arguments) != "" {
		if err := json.Unmarshal([]byte(c.Arguments), &args); err != nil || args == nil {
			return fmt.Sprintf("MCP tool call %s was not sent: its arguments are not a JSON object.", c.Name)
		}
	}
	if ok, msg := g.breaker.allow(); !ok {
		log.Info("mcp call refused by open circuit breaker")
		return msg
	}
	if tool.Keyed {
		key := fmt.Sprintf("%s-%s-r%d-c%d", rs.keyPrefix(), g.instance, rs.seq, at.calls)
		if g.cfg.Bugs.Has(FreshKeyPerAttempt) {
			key += fmt.Sprintf("-a%d", at.number)
		}
		args[wire.KeyArgument] = key
	}
	params := &mcp.CallToolParams{Name: tool.Tool, Arguments: args}

	connectCtx, cancel := context.WithTimeout(ctx, g.cfg.SessionTimeout)
	s, err := g.pool.session(connectCtx)
	cancel()
	if err != nil {
		if ctx.Err() != nil {
			g.breaker.abandon()
			log.Info("mcp call abandoned: the app request ended")
			return fmt.Sprintf("MCP tool call %s was abandoned: the app request ended.", c.Name)
		}
		g.breaker.strike()
		log.Warn("mcp server unreachable", "err", err)
		return fmt.Sprintf("MCP server '%s' could not be reached (%v). The call %s was not sent.", label, err, c.Name)
	}

	at.dispatched++
	if !tool.Keyed {
		at.unkeyed++
	}
	log.Debug("mcp call sending", "session", s.cs.ID())
	res, err := g.callTool(ctx, s, params)
	if errors.Is(err, errNotRun) {
		// The server answered the call's own request 404 for the session
		// (it restarted or ended the session), or the session had ended
		// before the call left the gateway (its standalone stream closed
		// while it was still cached): either way the call did not run, so it
		// goes once on a new session, whose tool list is fetched anew. A
		// session that ended after the call was sent proves nothing.
		log.Info("mcp session gone before the call ran; sending it on a new session", "err", err)
		g.pool.discard(s)
		res, err = g.onNewSession(ctx, params)
	}
	for retry := 0; errors.Is(err, errUnauthorized) && g.cfg.Bugs.Has(MCPRetryUnauthorized) && retry < unauthorizedRetries; retry++ {
		log.Warn("mcp call unauthorized; reconnecting and sending it again", "err", err)
		g.pool.discard(s)
		res, err = g.resend(ctx, params)
	}
	if errors.Is(err, errUnauthorized) {
		g.pool.discard(s) // the transport failed the session
		g.breaker.reset() // the server answered
		log.Warn("mcp call refused as unauthorized after re-authenticating once; not sent again", "err", err)
		return fmt.Sprintf("MCP server '%s' refused the call %s as unauthorized, also after the gateway re-authenticated once; the call did not run and was not sent again. (%v)", label, c.Name, err)
	}
	stdio := g.pool.command != nil
	if err != nil && stdio && classifyMCPError(err) == mcpTransport {
		// The stdio server's connection broke with the call written to it:
		// the process exited (CallTool returns `calling "tools/call": EOF`,
		// io.EOF wrapped, when it exits mid-call) or wrote a line that is not
		// JSON-RPC. It may have run the call. The next use spawns a new one.
		g.pool.retire(s)
		if g.cfg.Bugs.Has(MCPReplayAfterStdioDeath) {
			log.Warn("mcp stdio server died with the call in flight; sending it again on a respawned server", "err", err)
			res, err = g.onNewSession(ctx, params)
		}
	}
	if err != nil && stdio && classifyMCPError(err) == mcpTimeout && ctx.Err() == nil {
		// A stdio server that did not answer within the tool timeout is
		// taken for hung: it is ended, and the next use spawns a new one.
		g.pool.retire(s)
	}
	held := false
	if err != nil && !stdio && classifyMCPError(err) == mcpTransport && s.protocol().Stateless() {
		res, err, held = g.reissue(ctx, log, s, params, tool.Keyed, err)
	}
	if err != nil && !stdio && classifyMCPError(err) == mcpTransport && g.cfg.Bugs.Has(MCPResendOnSessionExpiry) && g.sessionEnded(ctx, s) {
		log.Warn("mcp call connection lost and its session ended; taking the call as not run and sending it on a new session", "err", err)
		g.pool.discard(s)
		res, err = g.onNewSession(ctx, params)
	}
	if err != nil && !stdio && classifyMCPError(err) == mcpTransport && g.cfg.Bugs.Has(MCPResendOnDisconnect) {
		log.Warn("mcp call connection lost; reconnecting and sending it again", "err", err)
		g.breaker.strike()
		res, err = g.resend(ctx, params)
	}
	if err != nil {
		switch classifyMCPError(err) {
		case mcpServerError:
			if g.cfg.Bugs.Has(BreakerCountsToolErrors) {
				g.breaker.strike()
			} else {
				g.breaker.reset()
			}
			return fmt.Sprintf("MCP tool call %s failed: %v", c.Name, err)
		case mcpTimeout:
			if ctx.Err() != nil {
				// The app went away: no evidence about the server either way.
				g.breaker.abandon()
				log.Info("mcp call abandoned: the app request ended")
				return fmt.Sprintf("MCP tool call %s was abandoned: the app request ended.", c.Name)
			}
			g.breaker.strike()
			if g.cfg.Bugs.Has(NoCancelOnTimeout) {
				log.Warn("mcp call timed out; left running", "timeout", g.cfg.ToolTimeout)
				return fmt.Sprintf("MCP tool call %s timed out after %s.", c.Name, g.cfg.ToolTimeout)
			}
			log.Warn("mcp call timed out; cancelled", "timeout", g.cfg.ToolTimeout)
			return fmt.Sprintf("MCP tool call %s timed out after %s and was cancelled; its outcome is unknown, so check before calling it again.", c.Name, g.cfg.ToolTimeout)
		default:
			g.breaker.strike()
			log.Warn("mcp call outcome unknown", "err", err)
			if held {
				return fmt.Sprintf("MCP tool call %s: outcome unknown. The response stream from MCP server '%s' broke after the call was sent, so it may have run. MCP %s asks a client to re-issue such a call, but %s takes no idempotency key, so the gateway held it rather than risk running it twice. Check before calling it again. (%v)", c.Name, label, s.protocol(), c.Name, err)
			}
			return fmt.Sprintf("MCP tool call %s: outcome unknown. The connection to MCP server '%s' was lost after the call was sent, so it may have run; it was not retried. Check before calling it again. (%v)", c.Name, label, err)
		}
	}
	if res.IsError {
		if g.cfg.Bugs.Has(BreakerCountsToolErrors) {
			g.breaker.strike()
		} else {
			g.breaker.reset()
		}
		return "MCP tool error: " + resultText(res)
	}
	g.breaker.reset()
	return resultText(res)
}

// callTool sends one tools/call bounded by the tool timeout, which starts
// when the call's request was written (see toolTimer). Guarded, the call's
// context is cancelled at the timeout, which cancels it on the wire. With
// NoCancelOnTimeout the call runs on a context the timeout does not cancel:
// the gateway stops waiting and the call goes on (until Close). An error
// where the server cannot have run the call wraps errNotRun; a timeout never
// does.
func (g *Gateway) callTool(ctx context.Context, s *mcpSession, params *mcp.CallToolParams) (*mcp.CallToolResult, error) {
	if !g.cfg.Bugs.Has(NoCancelOnTimeout) {
		cctx, cancel := context.WithCancel(ctx)
		defer cancel()
		cctx, stop := g.toolTimer(cctx, cancel)
		defer stop()
		cctx, mark := withSendMark(cctx)
		res, err := s.cs.CallTool(cctx, params)
		return res, notRun(err, mark)
	}
	type outcome struct {
		res *mcp.CallToolResult
		err error
	}
	done := make(chan outcome, 1)
	g.detachMu.Lock()
	if g.detachDone {
		g.detachMu.Unlock()
		return nil, errPoolClosed
	}
	g.detached.Add(1)
	g.detachMu.Unlock()
	dctx, cancel := context.WithTimeout(g.detachCtx, detachLimit(g.cfg.ToolTimeout))
	expired := make(chan struct{})
	var once sync.Once
	dctx, stop := g.toolTimer(dctx, func() { once.Do(func() { close(expired) }) })
	defer stop()
	dctx, mark := withSendMark(dctx)
	go func() {
		defer g.detached.Done()
		defer cancel()
		res, err := s.cs.CallTool(dctx, params)
		done <- outcome{res, err}
	}()
	select {
	case o := <-done:
		return o.res, notRun(o.err, mark)
	case <-expired:
		return nil, context.DeadlineExceeded
	case <-ctx.Done():
		return nil, ctx.Err()
	}
}

// toolTimer returns ctx with a trace that calls expire ToolTimeout after the
// first request made on it was written to its connection (an HTTP request,
// or a stdio server's line, see stdioConn): the tool timeout
// is the server's time, never the time the gateway takes to get the call
// out (a new connection, a busy machine), which would let the timeout pass
// before the server had the call. A call whose request is not written within
// SessionTimeout expires then. stop ends both clocks.
func (g *Gateway) toolTimer(ctx context.Context, expire func()) (context.Context, func()) {
	var mu sync.Mutex
	var call *time.Timer // started when the request was written
	stopped := false
	send := time.AfterFunc(g.cfg.SessionTimeout, expire)
	trace := &httptrace.ClientTrace{WroteRequest: func(httptrace.WroteRequestInfo) {
		mu.Lock()
		defer mu.Unlock()
		if stopped || call != nil || !send.Stop() {
			return // over, already started, or the send bound passed
		}
		call = time.AfterFunc(g.cfg.ToolTimeout, expire)
	}}
	stop := func() {
		mu.Lock()
		defer mu.Unlock()
		stopped = true
		send.Stop()
		if call != nil {
			call.Stop()
		}
	}
	ctx = context.WithValue(ctx, wroteKey{}, func() { trace.WroteRequest(httptrace.WroteRequestInfo{}) })
	return httptrace.WithClientTrace(ctx, trace), stop
}

// notRun wraps err, a failed call's error, with errNotRun when the server
// cannot have run the call (see sendMark), or with errUnauthorized when the
// server's last answer refused it as unauthorized. A timeout or cancellation
// is left as it is.
func notRun(err error, mark *sendMark) error {
	switch {
	case err == nil || isContextErr(err):
		return err
	case mark.sent.Load() && mark.unauthorized.Load():
		return fmt.Errorf("%w: %w", errUnauthorized, err)
	case mark.notRun():
		return fmt.Errorf("%w: %w", errNotRun, err)
	}
	return err
}

// unauthorizedRetries is how many times MCPRetryUnauthorized sends a call
// the server refused as unauthorized again, each on a new session.
const unauthorizedRetries = 3

// sessionEnded reports whether the server no longer knows s: a ping on it
// fails (within the session timeout). It is MCPResendOnSessionExpiry's
// check.
func (g *Gateway) sessionEnded(ctx context.Context, s *mcpSession) bool {
	ctx, cancel := context.WithTimeout(ctx, g.cfg.SessionTimeout)
	defer cancel()
	return s.cs.Ping(ctx, nil) != nil
}

// detachLimit bounds how long a call left running by NoCancelOnTimeout may
// go on.
func detachLimit(toolTimeout time.Duration) time.Duration {
	return max(time.Minute, 10*toolTimeout)
}

// resend reconnects to the MCP server and sends the call again: the
// MCPResendOnDisconnect bug.
func (g *Gateway) resend(ctx context.Context, params *mcp.CallToolParams) (*mcp.CallToolResult, error) {
	connectCtx, cancel := context.WithTimeout(ctx, g.cfg.SessionTimeout)
	s, err := g.pool.fresh(connectCtx)
	cancel()
	if err != nil {
		return nil, err
	}
	defer g.pool.release(s)
	return g.callTool(ctx, s, params)
}

// onNewSession sends a call the server refused for an unknown session on the
// pool's new shared session, after listing its tools, since a new server may
// offer others.
func (g *Gateway) onNewSession(ctx context.Context, params *mcp.CallToolParams) (*mcp.CallToolResult, error) {
	tools, err := g.listTools(ctx)
	if err != nil {
		return nil, err
	}
	if !slices.ContainsFunc(tools, func(t modelTool) bool { return t.Tool == params.Name }) {
		return nil, fmt.Errorf("MCP server '%s' no longer offers tool %s after its session ended", g.cfg.ServerLabel, params.Name)
	}
	setupCtx, cancel := context.WithTimeout(ctx, g.cfg.SessionTimeout)
	s, err := g.pool.session(setupCtx)
	cancel()
	if err != nil {
		return nil, err
	}
	return g.callTool(ctx, s, params)
}
