package ledger

import (
	"encoding/json"
	"errors"
	"maps"
	"slices"

	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/replaycheck/replaycheck/fakes/ledger/mcpcassette"
	"github.com/replaycheck/replaycheck/fakes/upstream/cassette"
	"github.com/replaycheck/replaycheck/internal/wire"
)

// Recording and replaying the MCP side, as the model side records what it
// relays and replays it offline (see package mcpcassette).
//
// A forwarding ledger with Forward.Record writes the server's initialize
// answer and each listing of its tools as it gets them, and each forwarded
// tools/call the server answered — its result, isError ones included, or
// its JSON-RPC error — with the call's arguments; a call whose answer never
// came back is not recorded. The credentials of the client's request (its
// Authorization and key headers), those in the server's URL, string
// arguments named like secrets and values shaped like API keys never reach
// the file (mcpcassette.Arguments, mcpcassette.Scrub).
//
// A forwarding ledger with Forward.Cassette has no server: it offers the
// recorded tools (each as last listed) and answers each call that reaches
// a tool handler — where a call would be forwarded — from the recorded call
// of the same tool with the same arguments (mcpcassette.Player), with the
// run's token where the recording had its own. The answer is then recorded
// as a forwarded one is: a result not isError of a write tool is a write,
// so counts and verdicts are the forwarder's, and every fault acts at the
// same points. A call no recorded call matches is a cassette miss: it ran
// nothing, is answered with a JSON-RPC error naming it and the closest
// recorded call, and is recorded as a wire.MCPFaultCassetteMiss fault event
// and counted in wire.MCPCounts.CassetteMisses.

// codeCassetteMiss is the JSON-RPC error code of a cassette miss: the
// stand-in server could not answer (internal error).
const codeCassetteMiss = jsonrpc.CodeInternalError

// replayForwarder returns the forwarder of a replay of cfg.Cassette: its
// tools, answered by a player of its calls.
func replayForwarder(cfg Forward) *forwarder {
	tools := make(map[string]*mcp.Tool, len(cfg.Cassette.Tools))
	for _, t := range cfg.Cassette.Tools {
		tools[t.Name] = t
	}
	return &forwarder{cfg: cfg, tools: tools, replay: mcpcassette.NewPlayer(cfg.Cassette), installed: make(chan struct{})}
}

// replayForwarded answers c, a call of the recorded tool base with args,
// from the cassette, and records what came of it as forwarded does.
func (s *Server) replayForwarded(c *call, base string, args json.RawMessage, extra *mcp.RequestExtra) (*mcp.CallToolResult, error) {
	key, _, err := mcpcassette.Arguments(args, c.token, requestSecrets(extra))
	if err != nil {
		return nil, &jsonrpc.Error{Code: jsonrpc.CodeInvalidParams, Message: err.Error()}
	}
	rec, src, err := s.fwd.replay.Find(base, key)
	if err != nil {
		s.cassetteMiss(c, err)
		return nil, &jsonrpc.Error{Code: codeCassetteMiss, Message: err.Error()}
	}
	res, rpcErr, err := rec.Answer(c.token)
	if err != nil {
		return nil, &jsonrpc.Error{Code: codeCassetteMiss, Message: err.Error()}
	}
	s.log.Debug("forward: answered from the cassette", "tool", base, "token", c.token, "recorded", src.String())
	if rpcErr != nil {
		return s.forwarded(c, base, args, nil, rpcErr)
	}
	return s.forwarded(c, base, args, res, nil)
}

// cassetteMiss records c as a call the cassette had no answer for.
func (s *Server) cassetteMiss(c *call, err error) {
	s.forwardFault(c, wire.MCPFaultCassetteMiss, func(n *wire.MCPCounts) { n.CassetteMisses++ })
	s.log.Warn("forward: no recorded answer for the call; answered with an error, nothing ran", "tool", c.tool, "token", c.token, "err", err)
}

// requestSecrets returns the credentials the client's request carried in
// its headers; none without a request.
func requestSecrets(extra *mcp.RequestExtra) []string {
	if extra == nil {
		return nil
	}
	return cassette.Secrets(extra.Header, "")
}

// recordSession records the server's initialize answer and its tools, when
// recording.
func (f *forwarder) recordSession(init *mcp.InitializeResult, tools map[string]*mcp.Tool) {
	if f.cfg.Record == nil {
		return
	}
	if init != nil {
		f.record(mcpcassette.NewInitialize(init, f.cfg.secrets()))
	}
	f.recordTools(tools)
}

// recordTools records one listing of the server's tools, when recording.
func (f *forwarder) recordTools(tools map[string]*mcp.Tool) {
	if f.cfg.Record == nil {
		return
	}
	list := make([]*mcp.Tool, 0, len(tools))
	for _, name := range slices.Sorted(maps.Keys(tools)) {
		list = append(list, tools[name])
	}
	f.record(mcpcassette.NewToolsList(list, f.cfg.secrets()))
}

// recordCall records a forwarded call of the server's tool base with args
// and what the server answered, when recording: its result, or its JSON-RPC
// error. A call whose answer never came back (err from the transport) is
// not recorded.
func (f *forwarder) recordCall(token, base string, args json.RawMessage, extra *mcp.RequestExtra, res *mcp.CallToolResult, err error) {
	if f.cfg.Record == nil {
		return
	}
	var rpcErr *jsonrpc.Error
	switch {
	case err == nil && res == nil:
		return
	case err != nil && (!errors.As(err, &rpcErr) || rpcErr.Code == codeRejectedByTransport):
		return
	case err == nil:
		rpcErr = nil
	}
	secrets := append(f.cfg.secrets(), requestSecrets(extra)...)
	f.record(mcpcassette.NewCall(base, args, token, secrets, res, rpcErr))
}

// record adds e to the recording; an entry that could not be built or
// written is logged (the recorder's file counts a lost line).
func (f *forwarder) record(e mcpcassette.Entry, err error) {
	if err == nil {
		_, err = f.cfg.Record.Add(e)
	}
	if err != nil && f.log != nil {
		f.log.Error("forward: recording an MCP exchange failed", "err", err)
	}
}
