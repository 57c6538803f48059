package ledger

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"

	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/replaycheck/replaycheck/internal/wire"
)

// The ledger's tools.
const (
	ToolCommitWrite      = "commit_write"
	ToolCommitWriteKeyed = "commit_write_keyed"
	ToolReadLedger       = "read_ledger"
)

// toolNames returns the ledger's tool names, sorted.
func toolNames() []string {
	return []string{ToolCommitWrite, ToolCommitWriteKeyed, ToolReadLedger}
}

func isTool(name string) bool { return slices.Contains(toolNames(), name) }

// commitWriteInput is the input of commit_write.
type commitWriteInput struct {
	Entry string `json:"entry" jsonschema:"the line to append to the ledger"`
}

// commitWriteKeyedInput is the input of commit_write_keyed.
type commitWriteKeyedInput struct {
	Entry          string `json:"entry" jsonschema:"the line to append to the ledger"`
	IdempotencyKey string `json:"idempotency_key" jsonschema:"the write happens only the first time this key is seen; later calls return the first result"`
}

// readLedgerInput is the (empty) input of read_ledger.
type readLedgerInput struct{}

// commitOutput is the structured result of a write.
type commitOutput struct {
	Recorded string `json:"recorded"`
	Line     int    `json:"line"` // 1-based line number in the ledger
}

// readLedgerOutput is the structured result of read_ledger.
type readLedgerOutput struct {
	Entries []string `json:"entries"`
}

// keyedWrite is the first outcome of a commit_write_keyed key.
type keyedWrite struct {
	done chan struct{} // closed when out and err are set
	out  commitOutput
	err  error
}

// defaultAnnotations returns the honest hints of a tool.
func defaultAnnotations(tool string) mcp.ToolAnnotations {
	f := false
	a := mcp.ToolAnnotations{DestructiveHint: &f, OpenWorldHint: &f}
	switch tool {
	case ToolCommitWriteKeyed:
		a.IdempotentHint = true
	case ToolReadLedger:
		a.ReadOnlyHint, a.IdempotentHint = true, true
	}
	return a
}

// addTool registers (or replaces) the tool name, which works as the ledger
// tool base (its description, input and handler), with base's annotations.
// A forwarding ledger offers name as the server's tool base instead (over
// does not apply).
func (s *Server) addTool(name, base string, over Annotations) {
	if s.fwd != nil {
		if !s.addForwarded(name, base) {
			s.log.Warn("forward: the server no longer lists the tool; not offered", "tool", base, "as", name)
		}
		return
	}
	a := defaultAnnotations(base)
	if over.ReadOnly != nil {
		a.ReadOnlyHint = *over.ReadOnly
	}
	if over.Idempotent != nil {
		a.IdempotentHint = *over.Idempotent
	}
	if over.Destructive != nil {
		d := *over.Destructive
		a.DestructiveHint = &d
	}
	switch base {
	case ToolCommitWrite:
		mcp.AddTool(s.mcp, &mcp.Tool{
			Name:        name,
			Description: "Append one entry to the ledger as one line.",
			Annotations: &a,
		}, directed(s, s.commitWrite))
	case ToolCommitWriteKeyed:
		mcp.AddTool(s.mcp, &mcp.Tool{
			Name:        name,
			Description: "Append one entry to the ledger, only the first time idempotency_key is seen; later calls with that key return the first result.",
			Annotations: &a,
		}, directed(s, s.commitWriteKeyed))
	case ToolReadLedger:
		mcp.AddTool(s.mcp, &mcp.Tool{
			Name:        name,
			Description: "Return the entries in the ledger, in write order: every one this server keeps (a long-running ledger forgets the entries of runs it no longer keeps).",
			Annotations: &a,
		}, directed(s, s.readLedger))
	}
}

func (s *Server) commitWrite(ctx context.Context, req *mcp.CallToolRequest, in commitWriteInput) (*mcp.CallToolResult, any, error) {
	c := callFrom(ctx, req)
	if res := s.preempted(ctx, c); res != nil {
		return res, nil, nil
	}
	out, err := s.commit(ctx, c, in.Entry, "")
	if err != nil {
		return errorResult(err), nil, nil
	}
	s.afterCommit(ctx, c)
	return textResult("recorded " + in.Entry), out, nil
}

func (s *Server) commitWriteKeyed(ctx context.Context, req *mcp.CallToolRequest, in commitWriteKeyedInput) (*mcp.CallToolResult, any, error) {
	c := callFrom(ctx, req)
	if in.IdempotencyKey == "" {
		return nil, nil, errEmptyKey
	}
	s.seeKey(c, in.IdempotencyKey)
	if res := s.preempted(ctx, c); res != nil {
		return res, nil, nil
	}
	s.mu.Lock()
	s.seeKeyLocked(c.token, in.IdempotencyKey) // again: its run may have been forgotten since
	k, seen := s.dedup[in.IdempotencyKey]
	if !seen {
		k = &keyedWrite{done: make(chan struct{})}
		s.dedup[in.IdempotencyKey] = k
	}
	s.mu.Unlock()
	if seen {
		select {
		case <-k.done:
		case <-ctx.Done():
			return nil, nil, fmt.Errorf("waiting for the first call with idempotency_key %q: %w", in.IdempotencyKey, ctx.Err())
		case <-s.closing:
			return nil, nil, fmt.Errorf("waiting for the first call with idempotency_key %q: %w", in.IdempotencyKey, errClosed)
		}
		if k.err != nil {
			return nil, nil, fmt.Errorf("the first call with idempotency_key %q failed: %w", in.IdempotencyKey, k.err)
		}
		s.markDedup(c)
		s.hold(ctx, c)
		return textResult("recorded " + k.out.Recorded), k.out, nil
	}
	out, err := s.commit(ctx, c, in.Entry, in.IdempotencyKey)
	k.out, k.err = out, err
	close(k.done)
	if err != nil {
		s.mu.Lock()
		delete(s.dedup, in.IdempotencyKey) // nothing was written: a later call may try again
		s.mu.Unlock()
		return errorResult(err), nil, nil
	}
	s.afterCommit(ctx, c)
	return textResult("recorded " + in.Entry), out, nil
}

func (s *Server) readLedger(ctx context.Context, req *mcp.CallToolRequest, _ readLedgerInput) (*mcp.CallToolResult, any, error) {
	c := callFrom(ctx, req)
	if res := s.preempted(ctx, c); res != nil {
		return res, nil, nil
	}
	entries := s.journal.snapshot()
	s.hold(ctx, c)
	return textResult(strings.Join(entries, "\n")), readLedgerOutput{Entries: entries}, nil
}

// errorResult is the isError result of a call that failed in the ledger.
func errorResult(err error) *mcp.CallToolResult {
	res := textResult(err.Error())
	res.IsError = true
	return res
}

func textResult(text string) *mcp.CallToolResult {
	return &mcp.CallToolResult{Content: []mcp.Content{&mcp.TextContent{Text: text}}}
}

// preempted returns the answer a fault that fired on c gives in place of
// its tool (is_error), held as a tool's answer is, or nil when the tool runs.
func (s *Server) preempted(ctx context.Context, c *call) *mcp.CallToolResult {
	for p := range hooks[preempter](c) {
		res := p.preempt(s, c)
		if res == nil {
			continue // this fault (as set) lets the tool run
		}
		s.hold(ctx, c)
		return res
	}
	return nil
}

// directed wraps a tool handler: when a director fired on the call (a
// stdio fault, on a call from a ledger-stdio process), the first one's
// directive is attached to the result under StdioFaultMeta and its fault
// recorded, once the tool ran (or was preempted). A handler's error becomes
// the isError result the SDK would have made of it, to carry the directive.
func directed[In any](s *Server, h mcp.ToolHandlerFor[In, any]) mcp.ToolHandlerFor[In, any] {
	return func(ctx context.Context, req *mcp.CallToolRequest, in In) (*mcp.CallToolResult, any, error) {
		res, out, err := s.asked(ctx, req, func() (*mcp.CallToolResult, any, error) { return h(ctx, req, in) })
		return s.direct(ctx, req, res, out, err)
	}
}

// asked runs the tool of req's call (run) as the askers that fired on the
// call let it: the first answers the call with its input-required result
// instead, having run the tool before when it runsFirst; the retry that
// carries back what it asked runs the tool.
func (s *Server) asked(ctx context.Context, req *mcp.CallToolRequest, run func() (*mcp.CallToolResult, any, error)) (*mcp.CallToolResult, any, error) {
	c := callFrom(ctx, req)
	for a := range hooks[asker](c) {
		if a.retried(req.Params) {
			break
		}
		if a.runsFirst() {
			if _, _, err := run(); err != nil {
				return nil, nil, err
			}
		}
		return a.ask(s, c), nil, nil
	}
	return run()
}

// direct attaches the directive of the first director that fired on the
// call of req to its result (see directed).
func (s *Server) direct(ctx context.Context, req *mcp.CallToolRequest, res *mcp.CallToolResult, out any, err error) (*mcp.CallToolResult, any, error) {
	c := callFrom(ctx, req)
	for d := range hooks[director](c) {
		var rpcErr *jsonrpc.Error
		if errors.As(err, &rpcErr) {
			break // a JSON-RPC error carries no _meta; the process passes it on
		}
		if err != nil {
			res, out = &mcp.CallToolResult{}, nil
			res.SetError(err)
			err = nil
		}
		if res == nil {
			res = &mcp.CallToolResult{}
		}
		name := d.directive()
		meaning, _ := wire.MCPFaultMeaningOf(name)
		if res.Meta == nil {
			res.Meta = mcp.Meta{}
		}
		res.Meta[StdioFaultMeta] = name
		s.mu.Lock()
		c.directive, c.effect = name, meaning.Stdio
		s.eventLocked(wire.MCPEvent{Token: c.token, Protocol: c.protocol, Kind: wire.MCPFault, Tool: c.tool, RequestID: c.idText, PID: c.pid, Fault: name})
		s.mu.Unlock()
		s.log.Info("ledger fault", "fault", name, "tool", c.tool, "token", c.token, "request_id", c.idText, "pid", c.pid)
		break
	}
	return res, out, err
}

// write appends entry to the ledger and counts the write once it is synced.
func (s *Server) write(c *call, entry, key string) (commitOutput, error) {
	line := oneLine(entry)
	n, err := s.journal.append(c.token, line)
	if err != nil {
		s.mu.Lock()
		s.runLocked(c.token).counts.WriteFailures++
		s.total.counts.WriteFailures++
		c.outcome = wire.MCPFaultWriteFailed
		s.eventLocked(wire.MCPEvent{Token: c.token, Protocol: c.protocol, Kind: wire.MCPFault, Tool: c.tool, RequestID: c.idText, Entry: line, Key: key, Fault: wire.MCPFaultWriteFailed})
		s.mu.Unlock()
		s.log.Error("ledger write failed", "tool", c.tool, "token", c.token, "err", err)
		return commitOutput{}, fmt.Errorf("ledger write failed, nothing was recorded: %w", err)
	}
	s.mu.Lock()
	s.runLocked(c.token).counts.Writes++
	s.total.counts.Writes++
	s.eventLocked(wire.MCPEvent{Token: c.token, Protocol: c.protocol, Kind: wire.MCPWrite, Tool: c.tool, RequestID: c.idText, Entry: line, Key: key})
	s.mu.Unlock()
	s.log.Debug("ledger write", "tool", c.tool, "token", c.token, "line", n)
	return commitOutput{Recorded: entry, Line: n}, nil
}

// seeKey counts key as seen by commit_write_keyed, for c's token and in total.
func (s *Server) seeKey(c *call, key string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.seeKeyLocked(c.token, key)
}

// seeKeyLocked counts key as seen by the run of token, and in total when no
// run kept has seen it; a key seen again by the same run counts once. A new
// count wakes WaitFor. s.mu must be held.
func (s *Server) seeKeyLocked(token, key string) {
	r := s.runLocked(token)
	if !r.keys.add(key) {
		return
	}
	r.counts.Keys++
	s.wakeLocked()
	if s.keyRuns[key] == 0 {
		s.total.counts.Keys++
	}
	s.keyRuns[key]++
}

// setOutcome records the fault that answers c in its tool's place.
func (s *Server) setOutcome(c *call, outcome string) {
	s.mu.Lock()
	c.outcome = outcome
	s.mu.Unlock()
}

// markDedup records that c is answered from an earlier call with its key.
func (s *Server) markDedup(c *call) {
	s.mu.Lock()
	c.dedup = true
	s.mu.Unlock()
}

// hold applies what the faults that fired on c do after its tool ran,
// before its answer: the afterExecuters act (change_tools), then the holders
// hold the answer back (delay).
func (s *Server) hold(ctx context.Context, c *call) {
	s.afterExecute(ctx, c)
	s.holdAnswer(ctx, c)
}

// afterExecute lets the afterExecuters that fired on c act (change_tools).
func (s *Server) afterExecute(ctx context.Context, c *call) {
	for a := range hooks[afterExecuter](c) {
		a.afterExecute(ctx, s, c)
	}
}

// holdAnswer lets the holders that fired on c hold its answer back (delay).
func (s *Server) holdAnswer(ctx context.Context, c *call) {
	for h := range hooks[holder](c) {
		h.hold(ctx, s, c)
	}
}
