package rules

import (
	"encoding/json"
	"flag"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/replaycheck/replaycheck/internal/harness/history"
	"github.com/replaycheck/replaycheck/internal/wire"
)

var update = flag.Bool("update", false, "rewrite golden files")

func ms(n int) history.Duration { return history.Duration(time.Duration(n) * time.Millisecond) }

func intp(n int) *int { return &n }

// rerouteLoop adds a tool loop from at whose upstream answers were asked for
// gpt-asked and served by gpt-served, and answers the app naming claimed
// ("" = naming no model).
func rerouteLoop(h *history.History, at int, claimed string) {
	h.Requests[0].Status = 200
	if claimed != "" {
		h.Requests[0].Models = []string{claimed}
	}
	for i, kind := range []wire.RequestKind{wire.KindInitial, wire.KindFollowUp} {
		u := up(at+i, kind, "forwarded", 200)
		u.Model, u.ServedModel = "gpt-asked", "gpt-served"
		h.Upstream = append(h.Upstream, u)
	}
}

// seedHistory is the seed's chat request: one tool call per request, one
// client exchange from 0 to 100ms.
func seedHistory(mut func(h *history.History)) *history.History {
	h := &history.History{
		Scenario: "t", Target: "builtin:test", Token: "rc0000000000",
		Setup:    history.Setup{ToolCalls: 1, Tools: []string{"commit_write"}, NumRetries: 2},
		Requests: []history.Exchange{{Endpoint: "chat", Path: "/v1/chat/completions", Start: ms(0), End: ms(100), Status: 500, CleanEnd: true}},
	}
	mut(h)
	return h
}

func up(at int, kind wire.RequestKind, outcome wire.Outcome, status int) wire.UpstreamRequest {
	return wire.UpstreamRequest{At: ms(at), Path: "/v1/chat/completions", Kind: kind, Outcome: outcome, Status: status}
}

// mcp is an MCP event of kind at ms at, of tool (request id 1); says is what
// the kind's own field holds: the fault of a fault, of a result ("dedup" for
// a deduplicated one) or of an exit a fault made, a session step's method, a
// spawn's pid, a tools change, a cancel's cause, "unknown_tool" for a call
// of a tool not offered.
func mcp(at int, kind wire.MCPKind, tool, says string) wire.MCPEvent {
	e := wire.MCPEvent{At: ms(at), Kind: kind, Tool: tool, RequestID: "1"}
	switch {
	case says == "":
	case kind == wire.MCPCall:
		e.UnknownTool = says == "unknown_tool"
	case kind == wire.MCPResult && says == "dedup":
		e.Dedup = true
	case kind == wire.MCPFault, kind == wire.MCPResult:
		e.Fault = says
	case kind == wire.MCPExit:
		e.End, e.Fault = wire.MCPExitFault, says
	case kind == wire.MCPSession, kind == wire.MCPSessionRefused:
		e.Method = says
	case kind == wire.MCPSpawn:
		e.PID = says
	case kind == wire.MCPToolsChanged:
		e.Change = wire.MCPToolChange(says)
	case kind == wire.MCPCancelled:
		e.Cause = says
	}
	return e
}

// at2026 is e served at MCP 2026-07-28.
func at2026(e wire.MCPEvent) wire.MCPEvent {
	e.Protocol = wire.MCPProtocol20260728
	return e
}

// at2025 is e served at MCP 2025-11-25.
func at2025(e wire.MCPEvent) wire.MCPEvent {
	e.Protocol = wire.MCPProtocol20251125
	return e
}

// mcpID is mcp with the JSON-RPC request id id.
func mcpID(at int, kind wire.MCPKind, tool, says, id string) wire.MCPEvent {
	e := mcp(at, kind, tool, says)
	e.RequestID = id
	return e
}

// stdioExited appends a spawn and a call of commit_write (request id 1)
// whose stdio server process the fault fault ended (it wrote, unless the
// process exited before executing), and that process's exit.
func stdioExited(h *history.History, fault string) {
	h.MCP = append(h.MCP, mcp(1, wire.MCPSpawn, "", "4711"), mcp(1, wire.MCPCall, "commit_write", ""))
	if fault != wire.MCPFaultStdioExitBeforeExecute {
		h.MCP = append(h.MCP, mcp(1, wire.MCPWrite, "commit_write", ""))
	}
	exit := mcp(2, wire.MCPExit, "commit_write", fault)
	exit.PID = "4711"
	h.MCP = append(h.MCP, mcp(2, wire.MCPFault, "commit_write", fault), exit)
}

// respawnedResend appends a new stdio server process and the call of
// commit_write sent on it (its first request, id 1 again), which writes.
func respawnedResend(h *history.History) {
	h.MCP = append(h.MCP, mcp(3, wire.MCPSpawn, "", "4712"), mcp(3, wire.MCPCall, "commit_write", ""), mcp(3, wire.MCPWrite, "commit_write", ""))
}

// keyedDrop appends a keyed call (request id 1) that wrote with key k1 and
// whose connection dropped after execution.
func keyedDrop(h *history.History) {
	h.Setup.Tools = []string{"commit_write_keyed"}
	w := keyedWrite(1, "k1")
	h.MCP = append(h.MCP, mcpID(1, wire.MCPCall, "commit_write_keyed", "", "1"), w, mcpID(2, wire.MCPFault, "commit_write_keyed", "drop_after_execute", "1"))
}

// withHeaders is u with the response headers headers.
func withHeaders(u wire.UpstreamRequest, headers map[string]string) wire.UpstreamRequest {
	u.Headers = headers
	return u
}

// keyedWrite is a write of commit_write_keyed with idempotency key key.
func keyedWrite(at int, key string) wire.MCPEvent {
	w := mcp(at, wire.MCPWrite, "commit_write_keyed", "")
	w.Key = key
	return w
}

// renamedInFirst makes h two client requests (0–100ms, 200–300ms) whose
// first ran commit_write, after which the server renamed it record_entry.
func renamedInFirst(h *history.History) {
	h.Requests = append(h.Requests, history.Exchange{Start: ms(200), End: ms(300), Status: 200})
	loop(h, 1, "forwarded", 200)
	h.MCP = append(h.MCP, mcp(2, wire.MCPToolsChanged, "commit_write", string(wire.MCPToolRemoved)), mcp(2, wire.MCPToolsChanged, "record_entry", string(wire.MCPToolAdded)))
}

// addedInFirst makes h two client requests (0–100ms, 200–300ms) whose
// first ran commit_write, after which the server added record_entry.
func addedInFirst(h *history.History) {
	h.Requests = append(h.Requests, history.Exchange{Start: ms(200), End: ms(300), Status: 200})
	loop(h, 1, "forwarded", 200)
	h.MCP = append(h.MCP, mcp(2, wire.MCPToolsChanged, "record_entry", string(wire.MCPToolAdded)))
}

// offering is u offering the tools names.
func offering(u wire.UpstreamRequest, names ...string) wire.UpstreamRequest {
	u.Offered = names
	return u
}

// answerIDs gives the upstream requests of h, in order, the answer ids ids.
func answerIDs(h *history.History, ids ...string) {
	for i, id := range ids {
		h.Upstream[i].ResponseID = id
	}
}

// initialFailures appends n initial requests answered 503, 1ms apart.
func initialFailures(h *history.History, n int) {
	for i := range n {
		h.Upstream = append(h.Upstream, up(1+i, "initial", "injected_503", 503))
	}
}

// loop appends one whole tool loop: initial, call and write, follow-up.
func loop(h *history.History, at int, followOutcome wire.Outcome, followStatus int) {
	h.Upstream = append(h.Upstream, up(at, "initial", "forwarded", 200), up(at+2, "follow_up", followOutcome, followStatus))
	h.MCP = append(h.MCP, mcp(at+1, wire.MCPCall, "commit_write", ""), mcp(at+1, wire.MCPWrite, "commit_write", ""), mcp(at+1, wire.MCPResult, "commit_write", ""))
}

// reaskedLoop appends a tool loop in which the client reported the script's
// call (call_1, tools/call 1) failed with text and the model asked again
// (call_2, tools/call 2, which wrote): first says what became of the first
// call at the ledger — a write, or a fault (fail_before_execute, is_error).
func reaskedLoop(h *history.History, text string, first ...wire.MCPEvent) {
	initial := up(1, "initial", "forwarded", 200)
	initial.Calls = []wire.ToolCall{{Tool: "commit_write", ID: "call_1"}}
	failed := up(3, "follow_up", "forwarded", 200)
	failed.ResultIDs = []string{"call_1"}
	failed.Results = []wire.ToolResult{{ID: "call_1", Text: text, Read: wire.ResultFailed}}
	failed.Calls = []wire.ToolCall{{Tool: "commit_write", ID: "call_2", AgainFor: "call_1"}}
	last := up(5, "follow_up", "forwarded", 200)
	last.ResultIDs = []string{"call_1", "call_2"}
	h.Upstream = append(h.Upstream, initial, failed, last)
	h.MCP = append(h.MCP, mcpID(2, wire.MCPCall, "commit_write", "", "1"))
	for _, e := range first {
		e.RequestID = "1"
		h.MCP = append(h.MCP, e)
	}
	h.MCP = append(h.MCP, mcpID(4, wire.MCPCall, "commit_write", "", "2"), mcpID(4, wire.MCPWrite, "commit_write", "", "2"), mcpID(4, wire.MCPResult, "commit_write", "", "2"))
}

func TestRules(t *testing.T) {
	tests := []struct {
		name string
		rule string
		h    *history.History
		want Status
	}{
		{"replay: one loop", "no-replay-after-dispatch", seedHistory(func(h *history.History) { loop(h, 1, "injected_500", 500) }), Pass},
		{"replay: three loops", "no-replay-after-dispatch", seedHistory(func(h *history.History) {
			loop(h, 1, "injected_500", 500)
			loop(h, 10, "injected_500", 500)
			loop(h, 20, "injected_500", 500)
		}), Fail},
		{"replay: two in one request, none in the next", "no-replay-after-dispatch", seedHistory(func(h *history.History) {
			h.Requests = append(h.Requests, history.Exchange{Start: ms(200), End: ms(300), Status: 200})
			loop(h, 1, "injected_500", 500)
			loop(h, 10, "injected_500", 500)
			h.Upstream = append(h.Upstream, up(201, "initial", "forwarded", 200), up(202, "follow_up", "forwarded", 200))
		}), Fail},
		{"replay: once in each of two requests", "no-replay-after-dispatch", seedHistory(func(h *history.History) {
			h.Requests = append(h.Requests, history.Exchange{Start: ms(200), End: ms(300), Status: 500})
			loop(h, 1, "injected_500", 500)
			loop(h, 201, "injected_500", 500)
		}), Pass},
		{"replay: refused before execute then retried", "no-replay-after-dispatch", seedHistory(func(h *history.History) {
			h.MCP = append(h.MCP, mcp(1, wire.MCPCall, "commit_write", ""), mcp(1, wire.MCPFault, "commit_write", "fail_before_execute"))
			loop(h, 5, "forwarded", 200)
		}), Pass},
		{"replay: keyed re-send after a drop deduplicated", "no-replay-after-dispatch", seedHistory(func(h *history.History) {
			keyedDrop(h)
			h.MCP = append(h.MCP, mcpID(3, wire.MCPCall, "commit_write_keyed", "", "2"), mcpID(3, wire.MCPResult, "commit_write_keyed", "dedup", "2"))
		}), Pass},
		{"replay: keyed re-send after a drop with a new key", "no-replay-after-dispatch", seedHistory(func(h *history.History) {
			keyedDrop(h)
			w := keyedWrite(3, "k2")
			w.RequestID = "2"
			h.MCP = append(h.MCP, mcpID(3, wire.MCPCall, "commit_write_keyed", "", "2"), w)
		}), Fail},
		{"replay: the model asked again after the client reported a call that ran as failed", "no-replay-after-dispatch", seedHistory(func(h *history.History) {
			reaskedLoop(h, "MCP server process exited: connection closed", mcp(2, wire.MCPWrite, "commit_write", ""))
		}), Fail},
		{"replay: the model asked again after a call refused before it ran", "no-replay-after-dispatch", seedHistory(func(h *history.History) {
			reaskedLoop(h, "MCP tool call commit_write failed: 503", mcp(2, wire.MCPFault, "commit_write", wire.MCPFaultFailBeforeExecute))
		}), Pass},
		{"replay: the model asked again after an isError result, which wrote nothing", "no-replay-after-dispatch", seedHistory(func(h *history.History) {
			reaskedLoop(h, "MCP tool error: entry not found", mcp(2, wire.MCPFault, "commit_write", wire.MCPFaultIsError))
		}), Pass},
		{"replay: no call reached", "no-replay-after-dispatch", seedHistory(func(h *history.History) {
			h.Upstream = append(h.Upstream, up(1, "initial", "forwarded", 200))
		}), Unknown},

		{"retry-before: guardrail retried", "retry-before-dispatch", seedHistory(func(h *history.History) {
			h.Upstream = append(h.Upstream, up(1, "initial", "forwarded", 200), up(2, "follow_up", "injected_500", 500),
				up(3, "initial", "forwarded", 200), up(4, "follow_up", "forwarded", 200))
		}), Pass},
		{"retry-before: not retried", "retry-before-dispatch", seedHistory(func(h *history.History) {
			h.Upstream = append(h.Upstream, up(1, "initial", "forwarded", 200), up(2, "follow_up", "injected_500", 500))
		}), Fail},
		{"retry-before: not retried before the run's deadline ended the request", "retry-before-dispatch", seedHistory(func(h *history.History) {
			h.Requests[0].TimedOut = true
			h.Upstream = append(h.Upstream, up(1, "initial", "injected_500", 500))
		}), Unknown},
		{"retry-before: initial failed, retried, then the tool ran", "retry-before-dispatch", seedHistory(func(h *history.History) {
			h.Upstream = append(h.Upstream, up(0, "initial", "injected_503", 503))
			loop(h, 1, "forwarded", 200)
		}), Pass},
		{"retry-before: a later client request is not a retry", "retry-before-dispatch", seedHistory(func(h *history.History) {
			h.Requests = append(h.Requests, history.Exchange{Start: ms(200), End: ms(300), Status: 200})
			h.Upstream = append(h.Upstream, up(1, "initial", "forwarded", 200), up(2, "follow_up", "injected_500", 500),
				up(201, "initial", "forwarded", 200), up(202, "follow_up", "forwarded", 200))
		}), Fail},
		{"retry-before: initial stream cut before any chunk reached the client, not retried", "retry-before-dispatch", seedHistory(func(h *history.History) {
			h.Upstream = append(h.Upstream, up(1, "initial", "dropped_stream", 200))
			answerIDs(h, "c1")
			h.Requests[0].Stream, h.Requests[0].Status = true, 200
		}), Fail},
		{"retry-before: initial stream cut after chunks reached the client", "retry-before-dispatch", seedHistory(func(h *history.History) {
			h.Upstream = append(h.Upstream, up(1, "initial", "dropped_stream", 200))
			answerIDs(h, "c1")
			h.Requests[0].Stream, h.Requests[0].Status, h.Requests[0].DataChunks, h.Requests[0].ResponseIDs = true, 200, 2, []string{"c1"}
		}), Unknown},
		{"retry-before: initial stream cut, ids rewritten", "retry-before-dispatch", seedHistory(func(h *history.History) {
			h.Upstream = append(h.Upstream, up(1, "initial", "dropped_stream", 200))
			h.Requests[0].Stream, h.Requests[0].Status, h.Requests[0].DataChunks, h.Requests[0].ResponseIDs = true, 200, 2, []string{"gw-1"}
		}), Unknown},
		{"retry-before: tool dispatched", "retry-before-dispatch", seedHistory(func(h *history.History) { loop(h, 1, "injected_500", 500) }), Unknown},
		{"retry-before: no failure", "retry-before-dispatch", seedHistory(func(h *history.History) {
			h.Upstream = append(h.Upstream, up(1, "initial", "forwarded", 200), up(2, "follow_up", "forwarded", 200))
		}), Unknown},
		{"retry-before: should-retry false is not retry-able", "retry-before-dispatch", seedHistory(func(h *history.History) {
			h.Upstream = append(h.Upstream, up(1, "initial", "forwarded", 200), withHeaders(up(2, "follow_up", "injected_503", 503), map[string]string{"X-Should-Retry": "false"}))
		}), Unknown},

		{"surfaces: 500", "error-surfaces", seedHistory(func(h *history.History) { loop(h, 1, "injected_500", 500) }), Pass},
		{"surfaces: invented success", "error-surfaces", seedHistory(func(h *history.History) {
			loop(h, 1, "injected_500", 500)
			loop(h, 10, "forwarded", 200)
			h.Requests[0].Status = 200
		}), Fail},
		{"surfaces: follow-up retried alone, real answer", "error-surfaces", seedHistory(func(h *history.History) {
			loop(h, 1, "injected_500", 500)
			h.Upstream = append(h.Upstream, up(10, "follow_up", "forwarded", 200))
			h.Requests[0].Status = 200
		}), Pass},
		{"surfaces: 200 with no answered retry", "error-surfaces", seedHistory(func(h *history.History) {
			loop(h, 1, "injected_500", 500)
			h.Requests[0].Status = 200
		}), Fail},
		{"surfaces: hang", "error-surfaces", seedHistory(func(h *history.History) {
			loop(h, 1, "injected_500", 500)
			h.Requests[0].Status, h.Requests[0].TimedOut = 0, true
		}), Fail},
		{"surfaces: stream error event", "error-surfaces", seedHistory(func(h *history.History) {
			loop(h, 1, "dropped_stream", 200)
			h.Requests[0].Status, h.Requests[0].Stream, h.Requests[0].ErrorEvents = 200, true, 1
		}), Pass},
		{"surfaces: no failure", "error-surfaces", seedHistory(func(h *history.History) { loop(h, 1, "forwarded", 200) }), Unknown},

		{"splice: error after original chunks", "no-splice", seedHistory(func(h *history.History) {
			loop(h, 1, "dropped_stream", 200)
			h.Requests[0].Stream, h.Requests[0].Status, h.Requests[0].DataChunks, h.Requests[0].ErrorEvents = true, 200, 7, 1
		}), Pass},
		{"splice: fallback spliced", "no-splice", seedHistory(func(h *history.History) {
			loop(h, 1, "dropped_stream", 200)
			loop(h, 10, "dropped_stream", 200)
			answerIDs(h, "c1", "c2", "c3", "c4")
			h.Requests[0].Stream, h.Requests[0].Status, h.Requests[0].DataChunks, h.Requests[0].ErrorEvents = true, 200, 14, 1
			h.Requests[0].ResponseIDs = []string{"c2", "c4"}
		}), Fail},
		{"splice: retried before any chunk reached the client", "no-splice", seedHistory(func(h *history.History) {
			loop(h, 1, "dropped_stream", 200)
			loop(h, 10, "forwarded", 200)
			answerIDs(h, "c1", "c2", "c3", "c4")
			h.Requests[0].Stream, h.Requests[0].Status, h.Requests[0].DataChunks = true, 200, 7
			h.Requests[0].ResponseIDs = []string{"c4"}
		}), Pass},
		{"splice: ids rewritten, requests after the drop", "no-splice", seedHistory(func(h *history.History) {
			loop(h, 1, "dropped_stream", 200)
			loop(h, 10, "dropped_stream", 200)
			answerIDs(h, "c1", "c2", "c3", "c4")
			h.Requests[0].Stream, h.Requests[0].Status, h.Requests[0].DataChunks, h.Requests[0].ErrorEvents = true, 200, 14, 1
			h.Requests[0].ResponseIDs = []string{"gw-1"}
		}), Unknown},
		{"splice: ids rewritten, nothing after the drop", "no-splice", seedHistory(func(h *history.History) {
			loop(h, 1, "dropped_stream", 200)
			h.Requests[0].Stream, h.Requests[0].Status, h.Requests[0].DataChunks, h.Requests[0].ErrorEvents = true, 200, 7, 1
		}), Pass},
		{"splice: not streamed", "no-splice", seedHistory(func(h *history.History) { loop(h, 1, "injected_500", 500) }), Unknown},

		{"lost: refused before it ran on 2026-07-28, re-issued", "no-lost-call", seedHistory(func(h *history.History) {
			h.MCP = append(h.MCP, at2026(mcp(1, wire.MCPCall, "commit_write", "")), at2026(mcp(1, wire.MCPFault, "commit_write", wire.MCPFaultFailBeforeExecute)),
				at2026(mcpID(2, wire.MCPCall, "commit_write", "", "2")), at2026(mcpID(2, wire.MCPWrite, "commit_write", "", "2")))
		}), Pass},
		{"lost: keyed, refused before it ran on 2026-07-28, not re-issued", "no-lost-call", seedHistory(func(h *history.History) {
			h.MCP = append(h.MCP, keyedCall(at2026(mcp(1, wire.MCPCall, "commit_write", ""))), at2026(mcp(1, wire.MCPFault, "commit_write", wire.MCPFaultFailBeforeExecute)))
		}), Fail},
		{"lost: no key, refused before it ran on 2026-07-28, held", "no-lost-call", seedHistory(func(h *history.History) {
			h.MCP = append(h.MCP, at2026(mcp(1, wire.MCPCall, "commit_write", "")), at2026(mcp(1, wire.MCPFault, "commit_write", wire.MCPFaultFailBeforeExecute)))
		}), Unknown},
		{"lost: keyed, re-issued and refused again", "no-lost-call", seedHistory(func(h *history.History) {
			h.MCP = append(h.MCP, keyedCall(at2026(mcp(1, wire.MCPCall, "commit_write", ""))), at2026(mcp(1, wire.MCPFault, "commit_write", wire.MCPFaultFailBeforeExecute)),
				keyedCall(at2026(mcpID(2, wire.MCPCall, "commit_write", "", "2"))), at2026(mcpID(2, wire.MCPFault, "commit_write", wire.MCPFaultFailBeforeExecute, "2")))
		}), Pass},
		{"lost: keyed, session gone before it ran, not re-sent", "no-lost-call", seedHistory(func(h *history.History) {
			h.MCP = append(h.MCP, keyedCall(mcp(1, wire.MCPCall, "commit_write", "")), mcp(1, wire.MCPFault, "commit_write", wire.MCPFaultExpireSession))
		}), Fail},
		{"lost: refused before it ran on 2025-11-25", "no-lost-call", seedHistory(func(h *history.History) {
			h.MCP = append(h.MCP, at2025(mcp(1, wire.MCPCall, "commit_write", "")), at2025(mcp(1, wire.MCPFault, "commit_write", wire.MCPFaultFailBeforeExecute)))
		}), Unknown},
		{"lost: nothing lost", "no-lost-call", seedHistory(func(h *history.History) {
			h.MCP = append(h.MCP, mcp(1, wire.MCPCall, "commit_write", ""), mcp(1, wire.MCPWrite, "commit_write", ""))
		}), Unknown},
		{"ambiguous: not re-sent", "no-replay-ambiguous-mcp", seedHistory(func(h *history.History) {
			loop(h, 1, "forwarded", 200)
			h.MCP = append(h.MCP, mcp(2, wire.MCPFault, "commit_write", "drop_after_execute"))
		}), Pass},
		{"ambiguous: re-sent", "no-replay-ambiguous-mcp", seedHistory(func(h *history.History) {
			loop(h, 1, "forwarded", 200)
			h.MCP = append(h.MCP, mcp(2, wire.MCPFault, "commit_write", "drop_after_execute"), mcp(3, wire.MCPCall, "commit_write", ""), mcp(3, wire.MCPWrite, "commit_write", ""))
		}), Fail},
		{"ambiguous: session expired after execute, not re-sent", "no-replay-ambiguous-mcp", seedHistory(func(h *history.History) {
			h.MCP = append(h.MCP, mcp(1, wire.MCPCall, "commit_write", ""), mcp(1, wire.MCPWrite, "commit_write", ""), mcp(2, wire.MCPFault, "commit_write", wire.MCPFaultExpireSessionAfterExecute),
				mcp(3, wire.MCPSession, "", "initialize"))
		}), Pass},
		{"ambiguous: session expired after execute, re-sent on a new session", "no-replay-ambiguous-mcp", seedHistory(func(h *history.History) {
			h.MCP = append(h.MCP, mcp(1, wire.MCPCall, "commit_write", ""), mcp(1, wire.MCPWrite, "commit_write", ""), mcp(2, wire.MCPFault, "commit_write", wire.MCPFaultExpireSessionAfterExecute),
				mcp(3, wire.MCPSession, "", "initialize"), mcpID(4, wire.MCPCall, "commit_write", "", "2"), mcpID(4, wire.MCPWrite, "commit_write", "", "2"))
		}), Fail},
		{"dispatch: a call refused with 404 for an expired session did not run", "no-replay-after-dispatch", seedHistory(func(h *history.History) {
			h.MCP = append(h.MCP, mcp(1, wire.MCPCall, "commit_write", ""), mcp(1, wire.MCPFault, "commit_write", wire.MCPFaultExpireSession),
				mcpID(2, wire.MCPCall, "commit_write", "", "2"), mcpID(2, wire.MCPWrite, "commit_write", "", "2"))
		}), Pass},
		{"dispatch: a call of an unknown tool did not run", "no-replay-after-dispatch", seedHistory(func(h *history.History) {
			h.MCP = append(h.MCP, mcp(1, wire.MCPCall, "commit_write", "unknown_tool"),
				mcpID(2, wire.MCPCall, "commit_write", "", "2"), mcpID(2, wire.MCPWrite, "commit_write", "", "2"))
		}), Pass},
		{"ambiguous: the script's second call is not a re-send", "no-replay-ambiguous-mcp", seedHistory(func(h *history.History) {
			h.Setup.ToolCalls, h.Setup.Tools = 2, []string{"commit_write", "commit_write"}
			h.MCP = append(h.MCP, mcp(1, wire.MCPCall, "commit_write", ""), mcp(1, wire.MCPWrite, "commit_write", ""), mcp(2, wire.MCPFault, "commit_write", "drop_after_execute"),
				mcp(3, wire.MCPCall, "commit_write", ""), mcp(3, wire.MCPWrite, "commit_write", ""))
		}), Pass},
		{"ambiguous: two scripted calls and a re-send", "no-replay-ambiguous-mcp", seedHistory(func(h *history.History) {
			h.Setup.ToolCalls, h.Setup.Tools = 2, []string{"commit_write", "commit_write"}
			h.MCP = append(h.MCP, mcp(1, wire.MCPCall, "commit_write", ""), mcp(2, wire.MCPFault, "commit_write", "drop_after_execute"),
				mcp(3, wire.MCPCall, "commit_write", ""), mcp(4, wire.MCPCall, "commit_write", ""))
		}), Fail},
		{"ambiguous: keyed re-send deduplicated", "no-replay-ambiguous-mcp", seedHistory(func(h *history.History) {
			keyedDrop(h)
			h.MCP = append(h.MCP, mcpID(3, wire.MCPCall, "commit_write_keyed", "", "2"), mcpID(3, wire.MCPResult, "commit_write_keyed", "dedup", "2"))
		}), Pass},
		{"ambiguous: keyed re-send deduplicated, its answer dropped too", "no-replay-ambiguous-mcp", seedHistory(func(h *history.History) {
			keyedDrop(h)
			h.MCP = append(h.MCP, mcpID(3, wire.MCPCall, "commit_write_keyed", "", "2"), mcpID(3, wire.MCPFault, "commit_write_keyed", "drop_after_execute", "2"))
		}), Pass},
		{"ambiguous: keyed re-send with a new key writes again", "no-replay-ambiguous-mcp", seedHistory(func(h *history.History) {
			keyedDrop(h)
			w := keyedWrite(3, "k2")
			w.RequestID = "2"
			h.MCP = append(h.MCP, mcpID(3, wire.MCPCall, "commit_write_keyed", "", "2"), w, mcpID(3, wire.MCPResult, "commit_write_keyed", "", "2"))
		}), Fail},
		{"ambiguous: keyed re-send refused by is_error is still a re-send", "no-replay-ambiguous-mcp", seedHistory(func(h *history.History) {
			keyedDrop(h)
			h.MCP = append(h.MCP, mcpID(3, wire.MCPCall, "commit_write_keyed", "", "2"), mcpID(3, wire.MCPFault, "commit_write_keyed", "is_error", "2"))
		}), Fail},
		{"ambiguous: stdio server exited after executing, not re-sent", "no-replay-ambiguous-mcp", seedHistory(func(h *history.History) {
			stdioExited(h, wire.MCPFaultStdioExitAfterExecute)
		}), Pass},
		{"ambiguous: stdio server exited after executing, re-sent on a respawned server", "no-replay-ambiguous-mcp", seedHistory(func(h *history.History) {
			stdioExited(h, wire.MCPFaultStdioExitAfterExecute)
			respawnedResend(h)
		}), Fail},
		{"dispatch: stdio server exited after executing, re-sent on a respawned server", "no-replay-after-dispatch", seedHistory(func(h *history.History) {
			stdioExited(h, wire.MCPFaultStdioExitAfterExecute)
			respawnedResend(h)
		}), Fail},
		{"ambiguous: stdio server hung after executing, re-sent on a respawned server", "no-replay-ambiguous-mcp", seedHistory(func(h *history.History) {
			stdioExited(h, wire.MCPFaultStdioHang)
			respawnedResend(h)
		}), Fail},
		{"ambiguous: stdio server wrote a malformed line after executing, re-sent", "no-replay-ambiguous-mcp", seedHistory(func(h *history.History) {
			stdioExited(h, wire.MCPFaultStdioMalformedLine)
			respawnedResend(h)
		}), Fail},
		{"ambiguous: stdio server exited before executing, re-sent: nothing was ambiguous", "no-replay-ambiguous-mcp", seedHistory(func(h *history.History) {
			stdioExited(h, wire.MCPFaultStdioExitBeforeExecute)
			respawnedResend(h)
		}), Unknown},
		{"dispatch: stdio server exited before executing, re-sent on a respawned server", "no-replay-after-dispatch", seedHistory(func(h *history.History) {
			stdioExited(h, wire.MCPFaultStdioExitBeforeExecute)
			respawnedResend(h)
		}), Pass},
		{"ambiguous: stdio server exited after answering, the next call is the script's", "no-replay-ambiguous-mcp", seedHistory(func(h *history.History) {
			stdioExited(h, wire.MCPFaultStdioExitAfterAnswer)
			respawnedResend(h)
		}), Unknown},
		{"ambiguous: no drop", "no-replay-ambiguous-mcp", seedHistory(func(h *history.History) { loop(h, 1, "forwarded", 200) }), Unknown},

		{"keyed: same key", "keyed-retry-same-key", seedHistory(func(h *history.History) {
			h.Setup.Tools = []string{"commit_write_keyed"}
			h.MCP = append(h.MCP, mcp(1, wire.MCPCall, "commit_write_keyed", ""), keyedWrite(1, "k1"), mcp(1, wire.MCPResult, "commit_write_keyed", ""))
			for i := range 2 {
				h.MCP = append(h.MCP, mcp(2+i, wire.MCPCall, "commit_write_keyed", ""), mcp(2+i, wire.MCPResult, "commit_write_keyed", "dedup"))
			}
		}), Pass},
		{"keyed: fresh keys", "keyed-retry-same-key", seedHistory(func(h *history.History) {
			h.Setup.Tools = []string{"commit_write_keyed"}
			for i, k := range []string{"k1", "k2", "k3"} {
				h.MCP = append(h.MCP, mcp(1+i, wire.MCPCall, "commit_write_keyed", ""), keyedWrite(1+i, k))
			}
		}), Fail},
		{"keyed: fresh keys in one request, no call in the next", "keyed-retry-same-key", seedHistory(func(h *history.History) {
			h.Setup.Tools = []string{"commit_write_keyed"}
			h.Requests = append(h.Requests, history.Exchange{Start: ms(200), End: ms(300), Status: 200})
			for i, k := range []string{"k1", "k2"} {
				h.MCP = append(h.MCP, mcp(1+i, wire.MCPCall, "commit_write_keyed", ""), keyedWrite(1+i, k))
			}
		}), Fail},
		{"keyed: not retried", "keyed-retry-same-key", seedHistory(func(h *history.History) {
			h.Setup.Tools = []string{"commit_write_keyed"}
			h.MCP = append(h.MCP, mcp(1, wire.MCPCall, "commit_write_keyed", ""), keyedWrite(1, "k1"))
		}), Unknown},

		{"is-error: each call once", "is-error-not-retried", seedHistory(func(h *history.History) {
			h.MCP = append(h.MCP, mcp(1, wire.MCPCall, "commit_write", ""), mcp(1, wire.MCPFault, "commit_write", "is_error"))
		}), Pass},
		{"is-error: the model asked again after the isError result", "is-error-not-retried", seedHistory(func(h *history.History) {
			reaskedLoop(h, "MCP tool error: entry not found", mcp(2, wire.MCPFault, "commit_write", wire.MCPFaultIsError))
		}), Pass},
		{"is-error: retried", "is-error-not-retried", seedHistory(func(h *history.History) {
			h.MCP = append(h.MCP, mcp(1, wire.MCPCall, "commit_write", ""), mcp(1, wire.MCPFault, "commit_write", "is_error"), mcp(2, wire.MCPCall, "commit_write", ""))
		}), Fail},
		{"is-error: breaker short-circuits", "is-error-not-retried", seedHistory(func(h *history.History) {
			h.Requests = append(h.Requests, history.Exchange{Start: ms(200), End: ms(300), Status: 200})
			h.MCP = append(h.MCP, mcp(1, wire.MCPCall, "commit_write", ""), mcp(1, wire.MCPFault, "commit_write", "is_error"))
		}), Fail},
		{"is-error: retried in one request, short-circuited in the next", "is-error-not-retried", seedHistory(func(h *history.History) {
			h.Requests = append(h.Requests, history.Exchange{Start: ms(200), End: ms(300), Status: 200})
			h.MCP = append(h.MCP, mcp(1, wire.MCPCall, "commit_write", ""), mcp(1, wire.MCPFault, "commit_write", "is_error"), mcp(2, wire.MCPCall, "commit_write", ""))
		}), Fail},
		{"is-error: once in each of two requests", "is-error-not-retried", seedHistory(func(h *history.History) {
			h.Requests = append(h.Requests, history.Exchange{Start: ms(200), End: ms(300), Status: 200})
			h.MCP = append(h.MCP, mcp(1, wire.MCPCall, "commit_write", ""), mcp(1, wire.MCPFault, "commit_write", "is_error"), mcp(201, wire.MCPCall, "commit_write", ""))
		}), Pass},
		{"is-error: none", "is-error-not-retried", seedHistory(func(h *history.History) { loop(h, 1, "forwarded", 200) }), Unknown},

		{"non-retryable: stopped", "non-retryable-not-retried", seedHistory(func(h *history.History) {
			h.Upstream = append(h.Upstream, up(1, "initial", "injected_400", 400))
		}), Pass},
		{"non-retryable: retried", "non-retryable-not-retried", seedHistory(func(h *history.History) {
			h.Upstream = append(h.Upstream, up(1, "initial", "injected_404", 404), up(2, "initial", "injected_404", 404))
		}), Fail},
		{"non-retryable: should-retry false retried", "non-retryable-not-retried", seedHistory(func(h *history.History) {
			h.Upstream = append(h.Upstream, withHeaders(up(1, "initial", "injected_503", 503), map[string]string{"x-should-retry": "false"}), up(2, "initial", "forwarded", 200))
		}), Fail},
		{"non-retryable: 401 re-authorized once", "non-retryable-not-retried", seedHistory(func(h *history.History) {
			h.Upstream = append(h.Upstream, up(1, "initial", "injected_401", 401), up(2, "initial", "injected_401", 401))
		}), Pass},
		{"non-retryable: 401 retried twice", "non-retryable-not-retried", seedHistory(func(h *history.History) {
			h.Upstream = append(h.Upstream, up(1, "initial", "injected_401", 401), up(2, "initial", "injected_401", 401), up(3, "initial", "injected_401", 401))
		}), Fail},
		{"non-retryable: 401 with should-retry false stops at once", "non-retryable-not-retried", seedHistory(func(h *history.History) {
			h.Upstream = append(h.Upstream, withHeaders(up(1, "initial", "injected_401", 401), map[string]string{"x-should-retry": "false"}), up(2, "initial", "forwarded", 200))
		}), Fail},
		{"non-retryable: only 503s", "non-retryable-not-retried", seedHistory(func(h *history.History) {
			h.Upstream = append(h.Upstream, up(1, "initial", "injected_503", 503), up(2, "initial", "forwarded", 200))
		}), Unknown},

		{"retry-after: waited", "retry-after-honored", seedHistory(func(h *history.History) {
			h.Upstream = append(h.Upstream, withHeaders(up(1, "initial", "injected_429", 429), map[string]string{"retry-after-ms": "50"}), up(60, "initial", "forwarded", 200))
		}), Pass},
		{"retry-after: too soon", "retry-after-honored", seedHistory(func(h *history.History) {
			h.Upstream = append(h.Upstream, withHeaders(up(1, "initial", "injected_429", 429), map[string]string{"Retry-After": "1"}), up(60, "initial", "forwarded", 200))
		}), Fail},
		{"retry-after: asked, never retried", "retry-after-honored", seedHistory(func(h *history.History) {
			h.Upstream = append(h.Upstream, withHeaders(up(1, "initial", "injected_429", 429), map[string]string{"Retry-After": "1"}))
		}), Unknown},
		{"retry-after: the next client request is not a retry", "retry-after-honored", seedHistory(func(h *history.History) {
			h.Requests = append(h.Requests, history.Exchange{Start: ms(101), End: ms(200), Status: 200})
			h.Upstream = append(h.Upstream, withHeaders(up(1, "initial", "injected_429", 429), map[string]string{"Retry-After": "1"}), up(102, "initial", "forwarded", 200))
		}), Unknown},
		{"retry-after: two retries, the second too soon", "retry-after-honored", seedHistory(func(h *history.History) {
			h.Upstream = append(h.Upstream, withHeaders(up(1, "initial", "injected_429", 429), map[string]string{"retry-after-ms": "20"}),
				withHeaders(up(30, "initial", "injected_429", 429), map[string]string{"retry-after-ms": "20"}), up(40, "initial", "forwarded", 200))
		}), Fail},
		{"retry-after: an HTTP date cannot be measured", "retry-after-honored", seedHistory(func(h *history.History) {
			h.Upstream = append(h.Upstream, withHeaders(up(1, "initial", "injected_503", 503), map[string]string{"Retry-After": "Wed, 21 Oct 2026 07:28:00 GMT"}), up(2, "initial", "forwarded", 200))
		}), Unknown},
		{"retry-after: none asked", "retry-after-honored", seedHistory(func(h *history.History) {
			h.Upstream = append(h.Upstream, up(1, "initial", "injected_429", 429), up(2, "initial", "forwarded", 200))
		}), Unknown},

		{"bounded: within cap", "bounded-attempts", seedHistory(func(h *history.History) {
			initialFailures(h, 3)
		}), Pass},
		{"bounded: over cap", "bounded-attempts", seedHistory(func(h *history.History) {
			initialFailures(h, 7)
		}), Fail},
		{"bounded: scenario cap", "bounded-attempts", seedHistory(func(h *history.History) {
			h.Expect.MaxAttempts = intp(2)
			initialFailures(h, 3)
		}), Fail},
		{"bounded: no cap known", "bounded-attempts", seedHistory(func(h *history.History) {
			h.Setup.NumRetries = -1
			h.Upstream = append(h.Upstream, up(1, "initial", "injected_503", 503))
		}), Unknown},
		{"bounded: no failure", "bounded-attempts", seedHistory(func(h *history.History) { loop(h, 1, "forwarded", 200) }), Unknown},

		{"cancel: cancelled", "cancel-propagates", seedHistory(func(h *history.History) {
			h.MCP = append(h.MCP, mcp(1, wire.MCPCall, "commit_write", ""), mcp(1, wire.MCPFault, "commit_write", "delay"), mcp(50, wire.MCPCancelled, "commit_write", ""))
		}), Pass},
		{"cancel: kept running", "cancel-propagates", seedHistory(func(h *history.History) {
			h.MCP = append(h.MCP, mcp(1, wire.MCPCall, "commit_write", ""), mcp(1, wire.MCPFault, "commit_write", "delay"))
		}), Fail},
		{"cancel: answered after the tool timeout", "cancel-propagates", seedHistory(func(h *history.History) {
			h.Setup.ToolTimeout = ms(10)
			h.MCP = append(h.MCP, mcp(1, wire.MCPCall, "commit_write", ""), mcp(1, wire.MCPFault, "commit_write", "delay"), mcp(50, wire.MCPResult, "commit_write", ""))
		}), Fail},
		{"cancel: answered after the client had its answer", "cancel-propagates", seedHistory(func(h *history.History) {
			h.MCP = append(h.MCP, mcp(1, wire.MCPCall, "commit_write", ""), mcp(1, wire.MCPFault, "commit_write", "delay"), mcp(150, wire.MCPResult, "commit_write", ""))
		}), Fail},
		{"cancel: finished first", "cancel-propagates", seedHistory(func(h *history.History) {
			h.MCP = append(h.MCP, mcp(1, wire.MCPCall, "commit_write", ""), mcp(1, wire.MCPFault, "commit_write", "delay"), mcp(5, wire.MCPResult, "commit_write", ""))
		}), Unknown},
		{"cancel: no slow call", "cancel-propagates", seedHistory(func(h *history.History) { loop(h, 1, "forwarded", 200) }), Unknown},
		{"model: served model surfaced", "model-honored", seedHistory(func(h *history.History) {
			rerouteLoop(h, 1, "gpt-served")
		}), Pass},
		{"model: requested model claimed", "model-honored", seedHistory(func(h *history.History) {
			rerouteLoop(h, 1, "gpt-asked")
		}), Fail},
		{"model: group name claimed", "model-honored", seedHistory(func(h *history.History) {
			rerouteLoop(h, 1, "repro-model")
		}), Fail},
		{"model: switched mid-conversation, earlier model claimed", "model-honored", seedHistory(func(h *history.History) {
			h.Requests[0].Status, h.Requests[0].Models = 200, []string{"gpt-asked"}
			a, b := up(1, "initial", "forwarded", 200), up(2, "follow_up", "forwarded", 200)
			a.Model, a.ServedModel = "gpt-asked", "gpt-asked"
			b.Model, b.ServedModel = "gpt-asked", "gpt-served"
			h.Upstream = append(h.Upstream, a, b)
		}), Fail},
		{"model: switched in the second request, first model claimed", "model-honored", seedHistory(func(h *history.History) {
			h.Requests[0].Status, h.Requests[0].Models = 200, []string{"gpt-asked"}
			a := up(1, "initial", "forwarded", 200)
			a.Model, a.ServedModel = "gpt-asked", "gpt-asked"
			h.Upstream = append(h.Upstream, a)
			h.Requests = append(h.Requests, history.Exchange{Start: ms(200), End: ms(300), Status: 200, Models: []string{"gpt-asked"}})
			b := up(201, "initial", "forwarded", 200)
			b.Model, b.ServedModel = "gpt-asked", "gpt-served"
			h.Upstream = append(h.Upstream, b)
		}), Fail},
		{"model: no reroute", "model-honored", seedHistory(func(h *history.History) {
			h.Requests[0].Status, h.Requests[0].Models = 200, []string{"gpt-asked"}
			a := up(1, "initial", "forwarded", 200)
			a.Model, a.ServedModel = "gpt-asked", "gpt-asked"
			h.Upstream = append(h.Upstream, a)
		}), Unknown},
		{"model: rerouted but the app's answer named no model", "model-honored", seedHistory(func(h *history.History) {
			rerouteLoop(h, 1, "")
		}), Unknown},

		{"surfaces: a failure in a later request than the tool call is not judged", "error-surfaces", seedHistory(func(h *history.History) {
			h.Requests[0].Status = 200
			h.Requests = append(h.Requests, history.Exchange{Start: ms(200), End: ms(300), Status: 200})
			loop(h, 1, "forwarded", 200)
			h.Upstream = append(h.Upstream, up(201, "initial", "injected_500", 500), up(202, "initial", "forwarded", 200))
		}), Unknown},
		{"stale: the later request calls the renamed tool's new name", "no-stale-tool-call", seedHistory(func(h *history.History) {
			renamedInFirst(h)
			h.Upstream = append(h.Upstream, up(201, "initial", "forwarded", 200))
			h.MCP = append(h.MCP, mcp(202, wire.MCPSession, "", "tools/list"), mcp(203, wire.MCPCall, "record_entry", ""), mcp(203, wire.MCPWrite, "record_entry", ""))
		}), Pass},
		{"stale: the later request calls the old name", "no-stale-tool-call", seedHistory(func(h *history.History) {
			renamedInFirst(h)
			h.Upstream = append(h.Upstream, up(201, "initial", "forwarded", 200))
			h.MCP = append(h.MCP, mcp(203, wire.MCPCall, "commit_write", "unknown_tool"))
		}), Fail},
		{"stale: an unknown-tool call in the request of the change is not judged", "no-stale-tool-call", seedHistory(func(h *history.History) {
			renamedInFirst(h)
			h.MCP = append(h.MCP, mcp(50, wire.MCPCall, "commit_write", "unknown_tool"))
			h.Upstream = append(h.Upstream, offering(up(201, "initial", "forwarded", 200), "ledger-read_ledger", "ledger-record_entry"))
		}), Pass},
		{"stale: a call before the target listed the tools again is not judged", "no-stale-tool-call", seedHistory(func(h *history.History) {
			renamedInFirst(h)
			h.Upstream = append(h.Upstream, up(201, "initial", "forwarded", 200))
			h.MCP = append(h.MCP, mcp(202, wire.MCPCall, "commit_write", "unknown_tool"), mcp(203, wire.MCPSession, "", "tools/list"))
			h.Upstream = append(h.Upstream, offering(up(204, "initial", "forwarded", 200), "ledger-record_entry"))
		}), Pass},
		{"stale: the old name called after listing again", "no-stale-tool-call", seedHistory(func(h *history.History) {
			renamedInFirst(h)
			h.Upstream = append(h.Upstream, up(201, "initial", "forwarded", 200))
			h.MCP = append(h.MCP, mcp(202, wire.MCPSession, "", "tools/list"), mcp(203, wire.MCPCall, "commit_write", "unknown_tool"))
		}), Fail},
		{"stale: no later request", "no-stale-tool-call", seedHistory(func(h *history.History) {
			loop(h, 1, "forwarded", 200)
			h.MCP = append(h.MCP, mcp(2, wire.MCPToolsChanged, "commit_write", string(wire.MCPToolRemoved)))
		}), Unknown},
		{"stale: the later request offers the renamed tool's new name, and a tool whose name ends like the old one", "no-stale-tool-call", seedHistory(func(h *history.History) {
			renamedInFirst(h)
			h.Upstream = append(h.Upstream, offering(up(201, "initial", "forwarded", 200), "ledger-commit_write_keyed", "ledger-record_entry"))
		}), Pass},
		{"stale: the later request still offers the renamed tool's old name", "no-stale-tool-call", seedHistory(func(h *history.History) {
			renamedInFirst(h)
			h.Upstream = append(h.Upstream, offering(up(201, "initial", "forwarded", 200), "ledger-commit_write", "ledger-record_entry"))
		}), Fail},
		{"stale: the later request offers the added tool", "no-stale-tool-call", seedHistory(func(h *history.History) {
			addedInFirst(h)
			h.Upstream = append(h.Upstream, offering(up(201, "initial", "forwarded", 200), "mcp__ledger__commit_write", "mcp__ledger__record_entry"))
		}), Pass},
		{"stale: the later request does not offer the added tool", "no-stale-tool-call", seedHistory(func(h *history.History) {
			addedInFirst(h)
			h.Upstream = append(h.Upstream, offering(up(201, "initial", "forwarded", 200), "mcp__ledger__commit_write"))
		}), Fail},
		{"stale: the added tool missing from the request of the change is not judged", "no-stale-tool-call", seedHistory(func(h *history.History) {
			addedInFirst(h)
			h.Upstream[1] = offering(h.Upstream[1], "ledger-commit_write")
			h.Upstream = append(h.Upstream, offering(up(201, "initial", "forwarded", 200), "ledger-commit_write", "ledger-record_entry"))
		}), Pass},
		{"stale: a request before the target listed the tools again is not judged", "no-stale-tool-call", seedHistory(func(h *history.History) {
			addedInFirst(h)
			h.Upstream = append(h.Upstream, offering(up(201, "initial", "forwarded", 200), "ledger-commit_write"))
			h.MCP = append(h.MCP, mcp(202, wire.MCPSession, "", "tools/list"))
			h.Upstream = append(h.Upstream, offering(up(203, "initial", "forwarded", 200), "ledger-commit_write", "ledger-record_entry"))
		}), Pass},
		{"stale: the added tool not offered after listing again", "no-stale-tool-call", seedHistory(func(h *history.History) {
			addedInFirst(h)
			h.MCP = append(h.MCP, mcp(202, wire.MCPSession, "", "tools/list"))
			h.Upstream = append(h.Upstream, offering(up(203, "initial", "forwarded", 200), "ledger-commit_write"))
		}), Fail},
		{"stale: later requests offered no tools and called none", "no-stale-tool-call", seedHistory(func(h *history.History) {
			addedInFirst(h)
			h.Upstream = append(h.Upstream, up(201, "initial", "forwarded", 200))
		}), Unknown},
		{"stale: the list did not change", "no-stale-tool-call", seedHistory(func(h *history.History) { loop(h, 1, "forwarded", 200) }), Unknown},

		{"reauth: refused once, sent again once", "reauth-at-most-once", seedHistory(func(h *history.History) {
			h.MCP = append(h.MCP, mcpID(1, wire.MCPCall, "commit_write", "", "1"), mcpID(1, wire.MCPFault, "commit_write", wire.MCPFaultUnauthorized, "1"),
				mcpID(2, wire.MCPCall, "commit_write", "", "2"), mcpID(2, wire.MCPWrite, "commit_write", "", "2"))
		}), Pass},
		{"reauth: refused twice, given up", "reauth-at-most-once", seedHistory(func(h *history.History) {
			for i := range 2 {
				id := string(rune('1' + i))
				h.MCP = append(h.MCP, mcpID(1+i, wire.MCPCall, "commit_write", "", id), mcpID(1+i, wire.MCPFault, "commit_write", wire.MCPFaultUnauthorized, id))
			}
		}), Pass},
		{"reauth: the script's second call after a refusal and its retry", "reauth-at-most-once", seedHistory(func(h *history.History) {
			h.Setup.ToolCalls, h.Setup.Tools = 2, []string{"commit_write", "commit_write"}
			h.MCP = append(h.MCP, mcpID(1, wire.MCPCall, "commit_write", "", "1"), mcpID(1, wire.MCPFault, "commit_write", wire.MCPFaultUnauthorized, "1"),
				mcpID(2, wire.MCPCall, "commit_write", "", "2"), mcpID(3, wire.MCPCall, "commit_write", "", "3"))
		}), Pass},
		{"reauth: sent again and again", "reauth-at-most-once", seedHistory(func(h *history.History) {
			for i := range 4 {
				id := string(rune('1' + i))
				h.MCP = append(h.MCP, mcpID(1+i, wire.MCPCall, "commit_write", "", id), mcpID(1+i, wire.MCPFault, "commit_write", wire.MCPFaultUnauthorized, id))
			}
		}), Fail},
		{"reauth: four logical calls, each refused twice", "reauth-at-most-once", seedHistory(func(h *history.History) {
			h.Setup.ToolCalls, h.Setup.Tools = 4, []string{"commit_write", "commit_write", "commit_write", "commit_write"}
			for i := range 8 {
				id := string(rune('a' + i))
				h.MCP = append(h.MCP, mcpID(1+i, wire.MCPCall, "commit_write", "", id), mcpID(1+i, wire.MCPFault, "commit_write", wire.MCPFaultUnauthorized, id))
			}
		}), Pass},
		{"reauth: nothing refused", "reauth-at-most-once", seedHistory(func(h *history.History) { loop(h, 1, "forwarded", 200) }), Unknown},
	}
	seen := map[string]map[Status]bool{}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			tt.h.Expect.Rules = []string{tt.rule}
			vs := Check(tt.h)
			if len(vs) != 1 {
				t.Fatalf("got %d verdicts, want 1: %+v", len(vs), vs)
			}
			v := vs[0]
			if v.Status != tt.want {
				t.Errorf("%s = %s, want %s: %s", tt.rule, v.Status, tt.want, v.Message)
			}
			if v.Message == "" || v.Expected == "" || v.Observed == "" {
				t.Errorf("verdict lacks its sentence: %+v", v)
			}
			if seen[tt.rule] == nil {
				seen[tt.rule] = map[Status]bool{}
			}
			seen[tt.rule][v.Status] = true
		})
	}
	for _, name := range Names() {
		for _, s := range []Status{Pass, Fail, Unknown} {
			if !seen[name][s] {
				t.Errorf("rule %s has no test case that gives %s", name, s)
			}
		}
	}
}

func TestCounts(t *testing.T) {
	h := seedHistory(func(h *history.History) {
		loop(h, 1, "injected_500", 500)
		loop(h, 10, "injected_500", 500)
		loop(h, 20, "injected_500", 500)
		h.Expect = history.Expect{Counts: history.Counts{
			Status:   intp(500),
			Writes:   history.Exactly(1),
			Upstream: map[wire.CountKey]history.Count{{Kind: wire.KindInitial}: *history.Exactly(1), {Kind: wire.KindFollowUp, Outcome: wire.Injected(500)}: *history.Exactly(3)},
			MCP:      &history.MCPExpect{Calls: &history.CallCount{PerTool: map[string]history.Count{"commit_write": *history.Exactly(3)}}},
		}}
	})
	got := map[string]Status{}
	msgs := map[string]string{}
	for _, v := range Check(h) {
		got[v.Check] = v.Status
		msgs[v.Check] = v.Message
	}
	want := map[string]Status{"status": Pass, "writes": Fail, "upstream[initial]": Fail, "upstream[follow_up injected_500]": Pass, "mcp.calls[commit_write]": Pass}
	for k, w := range want {
		if got[k] != w {
			t.Errorf("%s = %s, want %s (%s)", k, got[k], w, msgs[k])
		}
	}
	if len(got) != len(want) {
		t.Errorf("got checks %v, want %v", got, want)
	}
	if m := msgs["writes"]; m != "expected 1 write, observed 3" {
		t.Errorf("writes message = %q", m)
	}
}

// TestRulesIfJudged checks that a rule expected only if judged keeps its
// own verdict, marked, and that its unknown does not make the run unknown
// when another check passed.
func TestRulesIfJudged(t *testing.T) {
	h := seedHistory(func(h *history.History) {
		loop(h, 1, "injected_500", 500)
		h.Expect = history.Expect{Counts: history.Counts{Writes: history.Exactly(1)}, RulesIfJudged: []string{"retry-after-honored"}}
	})
	vs := Check(h)
	if len(vs) != 2 || vs[1].Check != "retry-after-honored" || vs[1].Status != Unknown || !vs[1].IfJudged || vs[0].IfJudged {
		t.Fatalf("got %+v", vs)
	}
	if got := Overall(vs); got != Pass {
		t.Errorf("Overall = %s, want pass: the writes passed and the rule had nothing to judge", got)
	}
	h.Expect.RulesIfJudged, h.Expect.Rules = nil, []string{"retry-after-honored"}
	if got := Overall(Check(h)); got != Unknown {
		t.Errorf("Overall with the rule required = %s, want unknown", got)
	}
}

func TestCheckRunErrorAndUnknownRule(t *testing.T) {
	h := seedHistory(func(h *history.History) {
		h.Error = "no answer within 2s"
		h.Expect.Rules = []string{"no-such-rule"}
	})
	vs := Check(h)
	if len(vs) != 2 || vs[0].Check != "completed" || vs[0].Status != Fail || vs[1].Status != Fail {
		t.Fatalf("got %+v", vs)
	}
	if Overall(vs) != Fail {
		t.Errorf("Overall = %s, want fail", Overall(vs))
	}
}

func TestOverall(t *testing.T) {
	tests := []struct {
		name string
		in   []Status
		want Status
	}{
		{"none", nil, Unknown},
		{"all pass", []Status{Pass, Pass}, Pass},
		{"unknown is not a pass", []Status{Pass, Unknown}, Unknown},
		{"fail wins", []Status{Unknown, Fail, Pass}, Fail},
		{"an if-judged rule's unknown is not held against a pass", []Status{Pass, "unknown if judged"}, Pass},
		{"an if-judged rule's unknown alone is no evidence", []Status{"unknown if judged"}, Unknown},
		{"an if-judged rule's failure fails", []Status{Pass, "fail if judged"}, Fail},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var vs []Verdict
			for _, s := range tt.in {
				st, ifJudged := strings.CutSuffix(string(s), " if judged")
				vs = append(vs, Verdict{Status: Status(st), IfJudged: ifJudged})
			}
			if got := Overall(vs); got != tt.want {
				t.Errorf("Overall = %s, want %s", got, tt.want)
			}
		})
	}
}

// TestRulesMarkdownCurrent checks that rules.md is generated from the table.
func TestRulesMarkdownCurrent(t *testing.T) {
	want := Markdown()
	if *update {
		if err := os.WriteFile("rules.md", []byte(want), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	got, err := os.ReadFile("rules.md")
	if err != nil {
		t.Fatal(err)
	}
	if string(got) != want {
		t.Errorf("rules.md is stale; run go test ./internal/harness/rules -update")
	}
}

func TestRuleDocs(t *testing.T) {
	for _, r := range All() {
		if r.Summary == "" || r.Doc == "" || r.Seed == "" || r.Fix == "" || r.Example == "" || r.Check == nil {
			t.Errorf("rule %s lacks its summary, doc, seed, fix, example or check", r.Name)
		}
		if len(r.Summary) > 80 || strings.ContainsAny(r.Summary, ".\n") || !strings.HasSuffix(r.Fix, ".") {
			t.Errorf("rule %s: want a summary of one short line and a fix of whole sentences: %q, %q", r.Name, r.Summary, r.Fix)
		}
		if requires, cannot := r.Requirement(); requires == "" || cannot == "" {
			t.Errorf("rule %s: its doc does not say when it cannot judge (a sentence beginning \"Cannot judge\")", r.Name)
		}
	}
}

func TestStatusOfAnUnansweredRequest(t *testing.T) {
	tests := []struct {
		name     string
		x        history.Exchange
		observed string
	}{
		{"answered", history.Exchange{Status: 502}, "HTTP 502"},
		{"timed out", history.Exchange{TimedOut: true}, "no answer before the deadline"},
		{"transport error", history.Exchange{TransportError: "connection refused"}, "no HTTP answer (a transport error)"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			h := seedHistory(func(h *history.History) {
				h.Requests = []history.Exchange{tt.x}
				h.Expect.Status = intp(500)
			})
			vs := Check(h)
			if len(vs) != 1 || vs[0].Status != Fail || vs[0].Observed != tt.observed {
				t.Errorf("got %+v, want a failing status observing %q", vs, tt.observed)
			}
		})
	}
}

func TestExchangeAt(t *testing.T) {
	h := seedHistory(func(h *history.History) {
		h.Requests = append(h.Requests, history.Exchange{Start: ms(200), End: ms(300)}, history.Exchange{Start: ms(400), End: ms(500)})
	})
	tests := []struct {
		name string
		at   int
		want int
	}{
		{"inside the first", 50, 0},
		{"after the first ended, before the second", 150, 0},
		{"inside the second", 250, 1},
		{"between the second and the third", 350, 1},
		{"after the last", 600, 2},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := h.ExchangeAt(ms(tt.at).D()); got != tt.want {
				t.Errorf("ExchangeAt(%dms) = %d, want %d", tt.at, got, tt.want)
			}
		})
	}
	if got := (&history.History{}).ExchangeAt(0); got != -1 {
		t.Errorf("ExchangeAt with no exchanges = %d, want -1", got)
	}
}

// faultReport is an armed fault's report with the fault JSON raw.
func faultReport(side string, index int, raw string, matched, fired int) wire.FaultReport {
	return wire.FaultReport{Side: side, Index: index, Fault: json.RawMessage(raw), Matched: matched, Fired: fired}
}

// TestRunFactsHoldPass checks that a rule that would pass says unknown when
// an armed fault never fired or a script call matched no offered tool, naming
// the fault and what the target did instead; that a failure stays a failure;
// that a history without fault reports is judged as before; and that traffic
// no run could own is noted on passing and unknown verdicts, never on failures.
func TestRunFactsHoldPass(t *testing.T) {
	followUp500 := `{"on":"follow_up","respond":{"status":500},"times":"always"}`
	messagesStream := func(h *history.History) {
		h.Upstream = append(h.Upstream,
			wire.UpstreamRequest{At: ms(1), Path: "/v1/messages", Kind: "initial", Outcome: "forwarded", Status: 200, Stream: true},
			wire.UpstreamRequest{At: ms(5), Path: "/v1/messages", Kind: "initial", Outcome: "forwarded", Status: 200, Stream: true})
		h.MCP = append(h.MCP, mcp(2, wire.MCPCall, "commit_write", ""), mcp(2, wire.MCPWrite, "commit_write", ""))
	}
	tests := []struct {
		name string
		rule string
		h    *history.History
		want Status
		// message is the verdict's whole message when set; contains a part of it.
		message  string
		contains []string
		absent   []string
	}{
		{"an upstream fault that never fired holds a pass", "no-replay-after-dispatch", seedHistory(func(h *history.History) {
			messagesStream(h)
			h.Faults = []wire.FaultReport{faultReport(wire.FaultUpstream, 1, followUp500, 0, 0)}
		}), Unknown, "cannot judge: upstream fault 1 {on: follow_up, respond: {status: 500}, times: always} never fired (it matched no request): " +
			"the target sent 2 initial requests and no follow-up (/v1/messages, streamed); " +
			"without that the rule would pass: expected at most 1 execution for 1 logical tool call, observed 1 execution (commit_write ×1)", nil, nil},
		{"a fault that fired lets the rule pass", "no-replay-after-dispatch", seedHistory(func(h *history.History) {
			loop(h, 1, "injected_500", 500)
			h.Faults = []wire.FaultReport{faultReport(wire.FaultUpstream, 1, followUp500, 1, 1)}
		}), Pass, "expected at most 1 execution for 1 logical tool call, observed 1 execution (commit_write ×1)", nil, nil},
		{"a history without fault reports is judged as before", "no-replay-after-dispatch", seedHistory(func(h *history.History) {
			loop(h, 1, "forwarded", 200)
			h.Setup.UpstreamFaults = json.RawMessage(`[` + followUp500 + `]`)
		}), Pass, "", nil, []string{"never fired"}},
		{"a failure stays a failure when the fault never fired", "no-replay-after-dispatch", seedHistory(func(h *history.History) {
			loop(h, 1, "forwarded", 200)
			loop(h, 10, "forwarded", 200)
			h.Faults = []wire.FaultReport{faultReport(wire.FaultUpstream, 1, followUp500, 0, 0)}
		}), Fail, "expected at most 1 execution for 1 logical tool call, observed 2 executions (commit_write ×2); commit_write ran twice for 1 logical tool call (no ask of the model's is known: the script calls it once)", nil, nil},
		{"an unknown stays unknown with its own reason", "no-replay-ambiguous-mcp", seedHistory(func(h *history.History) {
			loop(h, 1, "forwarded", 200)
			h.Faults = []wire.FaultReport{faultReport(wire.FaultUpstream, 1, followUp500, 0, 0)}
		}), Unknown, "cannot judge: no tools/call connection was dropped, nor stdio server lost, after execution", nil, nil},
		{"a fault that matched but did not fire", "retry-before-dispatch", seedHistory(func(h *history.History) {
			h.Upstream = append(h.Upstream, up(1, "initial", "injected_503", 503), up(2, "initial", "forwarded", 200), up(3, "follow_up", "forwarded", 200))
			h.Faults = []wire.FaultReport{
				faultReport(wire.FaultUpstream, 1, `{"on":"initial","respond":{"status":503},"times":"once"}`, 1, 1),
				faultReport(wire.FaultUpstream, 2, `{"on":"initial","respond":{"status":429},"times":{"nth":3}}`, 2, 0),
			}
		}), Unknown, "", []string{"upstream fault 2 {on: initial, respond: {status: 429}, times: {nth: 3}} never fired (it matched 2 requests and fired on none): " +
			"the target sent 2 initial requests and 1 follow-up (/v1/chat/completions, not streamed)"}, []string{"upstream fault 1"}},
		{"an MCP fault on a tool never called", "retry-before-dispatch", seedHistory(func(h *history.History) {
			h.Upstream = append(h.Upstream, up(1, "initial", "forwarded", 200), up(2, "follow_up", "injected_500", 500), up(3, "initial", "forwarded", 200))
			h.MCP = append(h.MCP, mcp(0, wire.MCPSession, "", "initialize"), mcp(0, wire.MCPSession, "", "tools/list"), mcp(0, wire.MCPSession, "", "tools/list"))
			h.Faults = []wire.FaultReport{faultReport(wire.FaultMCP, 1, `{"tool":"commit_write","drop_after_execute":{}}`, 0, 0)}
		}), Unknown, "", []string{"cannot judge: mcp fault 1 {tool: commit_write, drop_after_execute: {}} never fired (it matched no tools/call): " +
			"the target made no tools/call (session: initialize, tools/list); without that the rule would pass: expected a retry"}, nil},
		{"a session step fault that matched no step", "no-replay-after-dispatch", seedHistory(func(h *history.History) {
			loop(h, 1, "forwarded", 200)
			h.MCP = append([]wire.MCPEvent{mcp(0, wire.MCPSessionRefused, "", "initialize"), mcp(0, wire.MCPSession, "", "initialize")}, h.MCP...)
			r := faultReport(wire.FaultMCP, 1, `{"method":"tools/list","fail_before_execute":{}}`, 0, 0)
			r.Method = "tools/list"
			h.Faults = []wire.FaultReport{r}
		}), Unknown, "", []string{"cannot judge: mcp fault 1 {method: tools/list, fail_before_execute: {}} never fired (it matched no tools/list request): " +
			"the target called commit_write ×1; without that"}, nil},
		{"a refused session step is named", "retry-before-dispatch", seedHistory(func(h *history.History) {
			h.Upstream = append(h.Upstream, up(1, "initial", "forwarded", 200), up(2, "follow_up", "injected_500", 500), up(3, "initial", "forwarded", 200))
			h.MCP = append(h.MCP, mcp(0, wire.MCPSessionRefused, "", "initialize"), mcp(0, wire.MCPSession, "", "initialize"))
			h.Faults = []wire.FaultReport{faultReport(wire.FaultMCP, 1, `{"tool":"commit_write","drop_after_execute":{}}`, 0, 0)}
		}), Unknown, "", []string{"the target made no tools/call (session: initialize refused, initialize)"}, nil},
		{"an MCP fault while other tools were called", "cancel-propagates", seedHistory(func(h *history.History) {
			h.MCP = append(h.MCP, mcp(1, wire.MCPCall, "commit_write", ""), mcp(1, wire.MCPFault, "commit_write", "delay"), mcp(50, wire.MCPCancelled, "commit_write", ""),
				mcp(60, wire.MCPCall, "read_ledger", ""), mcp(61, wire.MCPCall, "read_ledger", ""))
			h.Faults = []wire.FaultReport{
				faultReport(wire.FaultMCP, 1, `{"tool":"commit_write","delay":"3s"}`, 1, 1),
				faultReport(wire.FaultMCP, 2, `{"tool":"commit_write_keyed","is_error":{"message":"entry not found"}}`, 0, 0),
			}
		}), Unknown, "", []string{`mcp fault 2 {tool: commit_write_keyed, is_error: {message: "entry not found"}} never fired (it matched no tools/call): ` +
			"the target called commit_write ×1, read_ledger ×2"}, nil},
		{"faults on both sides that never fired", "no-replay-after-dispatch", seedHistory(func(h *history.History) {
			loop(h, 1, "forwarded", 200)
			h.Faults = []wire.FaultReport{
				faultReport(wire.FaultUpstream, 1, followUp500, 0, 0),
				faultReport(wire.FaultUpstream, 2, `{"on":"initial","drop":{"after":"headers"}}`, 0, 0),
				faultReport(wire.FaultMCP, 1, `{"tool":"read_ledger","delay":"1s"}`, 0, 0),
			}
		}), Unknown, "", []string{
			"upstream fault 1 {on: follow_up, respond: {status: 500}, times: always} (it matched no request) and upstream fault 2 {on: initial, drop: {after: headers}} (it matched no request) never fired: the target sent 1 initial request and 1 follow-up (/v1/chat/completions, not streamed); ",
			"mcp fault 1 {tool: read_ledger, delay: 1s} never fired (it matched no tools/call): the target called commit_write ×1; ",
		}, nil},
		{"no model request at all", "no-replay-after-dispatch", seedHistory(func(h *history.History) {
			h.MCP = append(h.MCP, mcp(1, wire.MCPCall, "commit_write", ""))
			h.Faults = []wire.FaultReport{faultReport(wire.FaultUpstream, 1, followUp500, 0, 0)}
		}), Unknown, "", []string{"never fired (it matched no request): the target sent no model request; "}, nil},
		{"a script call that matched no offered tool holds a pass", "no-replay-after-dispatch", seedHistory(func(h *history.History) {
			loop(h, 1, "forwarded", 200)
			h.Upstream[0].Offered = []string{"mcp__ledger__read_ledger", "Bash", "Read"}
			h.Upstream[0].Unmatched = []string{"commit_write"}
			h.Upstream[1].Offered = []string{"Read", "Edit"}
		}), Unknown, "", []string{"cannot judge: the script's call commit_write matched no offered tool; offered: mcp__ledger__read_ledger, Bash, Read, Edit; without that"}, nil},
		{"offered names are capped", "no-replay-after-dispatch", seedHistory(func(h *history.History) {
			loop(h, 1, "forwarded", 200)
			h.Upstream[0].Offered = []string{"t1", "t2", "t3", "t4", "t5", "t6", "t7", "t8", "t9", "t10"}
			h.Upstream[0].Unmatched = []string{"commit_write", "read_ledger"}
		}), Unknown, "", []string{"the script's calls commit_write and read_ledger matched no offered tool; offered: t1, t2, t3, t4, t5, t6, t7, t8 and 2 more;"}, nil},
		{"a side request that offers no tools does not hold a pass", "no-replay-after-dispatch", seedHistory(func(h *history.History) {
			loop(h, 1, "forwarded", 200)
			h.Upstream[0].Offered = []string{"mcp__ledger__commit_write"}
			h.Upstream[1].Offered = []string{"mcp__ledger__commit_write"}
			h.Upstream = append(h.Upstream, wire.UpstreamRequest{At: h.Upstream[1].At, Path: "/v1/messages", Kind: "initial", Outcome: "forwarded", Status: 200, Unmatched: []string{"commit_write"}})
		}), Pass, "", nil, []string{"matched no offered tool"}},
		{"a client that defers its tools behind tool search is named", "no-replay-after-dispatch", seedHistory(func(h *history.History) {
			loop(h, 1, "forwarded", 200)
			h.Upstream[0].Offered = []string{"Bash", "ToolSearch"}
			h.Upstream[0].Unmatched = []string{"commit_write"}
		}), Unknown, "", []string{"offered: Bash, ToolSearch (the client offers ToolSearch: it defers its MCP tools behind a tool search"}, nil},
		{"a script call matched when nothing was offered", "no-replay-after-dispatch", seedHistory(func(h *history.History) {
			loop(h, 1, "forwarded", 200)
			h.Upstream[0].Unmatched = []string{"commit_write"}
		}), Unknown, "", []string{"offered: none (the requests offered no tools)"}, nil},
		{"a failure stays a failure when a call matched no tool", "no-replay-after-dispatch", seedHistory(func(h *history.History) {
			loop(h, 1, "forwarded", 200)
			loop(h, 10, "forwarded", 200)
			h.Upstream[0].Unmatched = []string{"commit_write"}
		}), Fail, "", nil, []string{"matched no offered tool"}},
		{"unattributed traffic is noted on a pass", "no-replay-after-dispatch", seedHistory(func(h *history.History) {
			loop(h, 1, "forwarded", 200)
			h.Unattributed = &history.Unattributed{Upstream: 2, MCP: 1, Samples: []string{"POST /v1/messages initial"}}
		}), Pass, "expected at most 1 execution for 1 logical tool call, observed 1 execution (commit_write ×1); " +
			"note: 2 model requests and 1 MCP message with no run reached the fakes during this run; they may be this target's or a parallel run's", nil, nil},
		{"unattributed traffic is noted on an unknown", "retry-before-dispatch", seedHistory(func(h *history.History) {
			loop(h, 1, "forwarded", 200)
			h.Unattributed = &history.Unattributed{MCP: 1}
		}), Unknown, "", []string{"; note: 0 model requests and 1 MCP message with no run reached the fakes"}, nil},
		{"unattributed traffic does not touch a failure", "no-replay-after-dispatch", seedHistory(func(h *history.History) {
			loop(h, 1, "forwarded", 200)
			loop(h, 10, "forwarded", 200)
			h.Unattributed = &history.Unattributed{Upstream: 3}
		}), Fail, "expected at most 1 execution for 1 logical tool call, observed 2 executions (commit_write ×2); commit_write ran twice for 1 logical tool call (no ask of the model's is known: the script calls it once)", nil, nil},
		{"an MCP cassette miss holds a pass", "no-replay-after-dispatch", seedHistory(func(h *history.History) {
			loop(h, 1, "forwarded", 200)
			miss := mcpID(20, wire.MCPCall, "create_entities", "", "7")
			miss.Args = `{"entities":[{"name":"beta"}]}`
			h.MCP = append(h.MCP, miss, mcpID(20, wire.MCPFault, "create_entities", wire.MCPFaultCassetteMiss, "7"))
		}), Unknown, "cannot judge: the MCP cassette had no answer for tools/call create_entities {entities: [{name: beta}]} (nothing ran; the client got an error): re-record it; " +
			"without that the rule would pass: expected at most 1 execution for 1 logical tool call, observed 1 execution (commit_write ×1)", nil, nil},
		{"an MCP cassette miss holds a keyed rule's pass", "keyed-retry-same-key", seedHistory(func(h *history.History) {
			keyedDrop(h)
			h.MCP = append(h.MCP, mcpID(3, wire.MCPCall, "commit_write_keyed", "", "2"), mcpID(3, wire.MCPFault, "commit_write_keyed", wire.MCPFaultCassetteMiss, "2"))
		}), Unknown, "", []string{"cannot judge: the MCP cassette had no answer for tools/call commit_write_keyed (nothing ran; the client got an error): re-record it; without that the rule would pass"}, nil},
		{"a model cassette miss holds a pass", "no-replay-after-dispatch", seedHistory(func(h *history.History) {
			loop(h, 1, "forwarded", 200)
			h.Upstream = append(h.Upstream, wire.UpstreamRequest{At: ms(30), Path: "/v1/chat/completions", Kind: "follow_up", Outcome: wire.OutcomeCassetteMiss, Status: 404})
		}), Unknown, "", []string{"cannot judge: the model cassette had no answer for model request 3 (follow_up /v1/chat/completions) (the target got a 404): re-record it; without that"}, nil},
		{"a rule that cannot judge names the cassette miss", "no-replay-after-dispatch", seedHistory(func(h *history.History) {
			h.Upstream = append(h.Upstream, up(1, "initial", "forwarded", 200), up(3, "follow_up", "forwarded", 200))
			h.MCP = append(h.MCP, mcpID(2, wire.MCPCall, "create_entities", "", "7"), mcpID(2, wire.MCPFault, "create_entities", wire.MCPFaultCassetteMiss, "7"))
		}), Unknown, "cannot judge: no tool call reached the MCP server, so nothing could be replayed; " +
			"the MCP cassette had no answer for tools/call create_entities (nothing ran; the client got an error): re-record it", nil, nil},
		{"a failure stays a failure on a cassette miss", "no-replay-after-dispatch", seedHistory(func(h *history.History) {
			loop(h, 1, "forwarded", 200)
			loop(h, 10, "forwarded", 200)
			h.MCP = append(h.MCP, mcpID(20, wire.MCPCall, "create_entities", "", "7"), mcpID(20, wire.MCPFault, "create_entities", wire.MCPFaultCassetteMiss, "7"))
		}), Fail, "", nil, []string{"cassette"}},
		{"keyed re-send after a drop: why it passes", "no-replay-ambiguous-mcp", seedHistory(func(h *history.History) {
			keyedDrop(h)
			h.MCP = append(h.MCP, mcpID(3, wire.MCPCall, "commit_write_keyed", "", "2"), mcpID(3, wire.MCPResult, "commit_write_keyed", "dedup", "2"))
			h.Faults = []wire.FaultReport{faultReport(wire.FaultMCP, 1, `{"tool":"commit_write_keyed","times":"once","drop_after_execute":{}}`, 2, 1)}
		}), Pass, "expected no tools/call re-sent after 1 dropped connection, unless re-sent with the same idempotency key and deduplicated by the server, " +
			"observed 1 re-sent with the same idempotency key and deduplicated by the server (1 write, 1 idempotency key)", nil, nil},
		{"keyed re-send with a new key: why it fails", "no-replay-ambiguous-mcp", seedHistory(func(h *history.History) {
			keyedDrop(h)
			w := keyedWrite(3, "k2")
			w.RequestID = "2"
			h.MCP = append(h.MCP, mcpID(3, wire.MCPCall, "commit_write_keyed", "", "2"), w)
		}), Fail, "expected no tools/call re-sent after 1 dropped connection, unless re-sent with the same idempotency key and deduplicated by the server, " +
			"observed 1 re-sent and executed again (2 writes, 2 idempotency keys)", nil, nil},
		{"keyed dedup re-send: no-replay-after-dispatch says why", "no-replay-after-dispatch", seedHistory(func(h *history.History) {
			keyedDrop(h)
			h.MCP = append(h.MCP, mcpID(3, wire.MCPCall, "commit_write_keyed", "", "2"), mcpID(3, wire.MCPResult, "commit_write_keyed", "dedup", "2"))
		}), Pass, "expected at most 1 execution for 1 logical tool call, observed 1 execution (commit_write_keyed ×1) and 1 keyed re-send the server deduplicated by idempotency key", nil, nil},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			tt.h.Expect.Rules = []string{tt.rule}
			vs := Check(tt.h)
			if len(vs) != 1 {
				t.Fatalf("got %d verdicts, want 1: %+v", len(vs), vs)
			}
			v := vs[0]
			if v.Status != tt.want {
				t.Errorf("%s = %s, want %s: %s", tt.rule, v.Status, tt.want, v.Message)
			}
			if tt.message != "" {
				if diff := cmp.Diff(tt.message, v.Message); diff != "" {
					t.Errorf("message (-want +got):\n%s", diff)
				}
			}
			for _, s := range tt.contains {
				if !strings.Contains(v.Message, s) {
					t.Errorf("message %q lacks %q", v.Message, s)
				}
			}
			for _, s := range tt.absent {
				if strings.Contains(v.Message, s) {
					t.Errorf("message %q has %q", v.Message, s)
				}
			}
		})
	}
}

// TestDuplicateOwner checks that a replay after a lost answer is explained
// by the protocol it was served at, by no-replay-ambiguous-mcp and
// no-replay-after-dispatch: on 2026-07-28 the duplicate is the server's or
// the gateway's to prevent, on 2025-xx the client's replay; and that
// no-replay-after-dispatch says nothing of the kind for a re-run that
// followed no lost answer (a model call retried after a 500) or that the
// model asked for again.
func TestDuplicateOwner(t *testing.T) {
	const spec = "on MCP 2026-07-28 a re-issue after a broken stream is what the spec asks of the client; the duplicate is the server's to prevent"
	const legacy = "on MCP 2025-11-25 the client replayed a call whose outcome was unknown"
	lostAnswer := func(at func(wire.MCPEvent) wire.MCPEvent) func(h *history.History) {
		return func(h *history.History) {
			h.MCP = append(h.MCP, at(mcp(1, wire.MCPCall, "commit_write", "")), at(mcp(1, wire.MCPWrite, "commit_write", "")),
				at(mcp(2, wire.MCPFault, "commit_write", wire.MCPFaultDropAfterExecute)),
				at(mcpID(3, wire.MCPCall, "commit_write", "", "2")), at(mcpID(3, wire.MCPWrite, "commit_write", "", "2")))
		}
	}
	tests := []struct {
		name, rule string
		mut        func(h *history.History)
		want       string // a part of the failure's message
		absent     string // a part it must not have
	}{
		{name: "ambiguous: 2026-07-28", rule: "no-replay-ambiguous-mcp", mut: lostAnswer(at2026), want: spec},
		{name: "ambiguous: 2025-11-25", rule: "no-replay-ambiguous-mcp", mut: lostAnswer(at2025), want: legacy},
		{name: "dispatch: re-issued after a broken stream at 2026-07-28", rule: "no-replay-after-dispatch", mut: lostAnswer(at2026),
			want: "commit_write ran twice for 1 logical tool call (no ask of the model's is known: the script calls it once): " + spec},
		{name: "dispatch: re-sent after a dropped connection at 2025-11-25", rule: "no-replay-after-dispatch", mut: lostAnswer(at2025),
			want: "commit_write ran twice for 1 logical tool call (no ask of the model's is known: the script calls it once): " + legacy},
		{name: "dispatch: re-run after a model 500 at 2026-07-28, no answer lost", rule: "no-replay-after-dispatch", mut: func(h *history.History) {
			h.MCP = append(h.MCP, at2026(mcp(1, wire.MCPCall, "commit_write", "")), at2026(mcp(1, wire.MCPWrite, "commit_write", "")),
				at2026(mcpID(3, wire.MCPCall, "commit_write", "", "2")), at2026(mcpID(3, wire.MCPWrite, "commit_write", "", "2")))
		}, want: "commit_write ran twice", absent: "on MCP"},
		{name: "dispatch: asked again by the model after a broken stream at 2026-07-28", rule: "no-replay-after-dispatch", mut: func(h *history.History) {
			reaskedLoop(h, "Connection closed", mcp(2, wire.MCPWrite, "commit_write", ""), mcp(2, wire.MCPFault, "commit_write", wire.MCPFaultDropAfterExecute))
			for i := range h.MCP {
				h.MCP[i] = at2026(h.MCP[i])
			}
		}, want: "after the client reported call_1 failed", absent: "on MCP"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			h := seedHistory(tt.mut)
			h.Expect.Rules = []string{tt.rule}
			v := Check(h)[0]
			if v.Status != Fail || !strings.Contains(v.Message, tt.want) {
				t.Errorf("verdict %s %q, want fail saying %q", v.Status, v.Message, tt.want)
			}
			if tt.absent != "" && strings.Contains(v.Message, tt.absent) {
				t.Errorf("message %q has %q", v.Message, tt.absent)
			}
		})
	}
}

// TestLostCallSaysSo checks the lost-call verdict's words.
func TestLostCallSaysSo(t *testing.T) {
	h := seedHistory(func(h *history.History) {
		h.MCP = append(h.MCP, keyedCall(at2026(mcp(1, wire.MCPCall, "commit_write", ""))), at2026(mcp(1, wire.MCPFault, "commit_write", wire.MCPFaultFailBeforeExecute)))
	})
	h.Expect.Rules = []string{"no-lost-call"}
	v := Check(h)[0]
	if want := "lost call: 1 tools/call never ran and was not re-issued"; !strings.Contains(v.Message, want) {
		t.Errorf("verdict %q lacks %q", v.Message, want)
	}
}

// TestStuckOnCutStream checks that a run whose target hung after the ledger
// cut a tools/call's answer names the target's wait as the finding.
func TestStuckOnCutStream(t *testing.T) {
	tests := []struct {
		name string
		cut  bool
		want bool
	}{
		{name: "answer cut, target hung", cut: true, want: true},
		{name: "nothing cut, target hung", cut: false, want: false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			h := seedHistory(func(h *history.History) {
				h.Error = "the target gave no complete answer to POST /v1/chat/completions (a hang)"
				h.Requests[0].TimedOut = true
				h.MCP = append(h.MCP, mcp(1, wire.MCPCall, "commit_write", ""), mcp(1, wire.MCPWrite, "commit_write", ""))
				if tt.cut {
					h.MCP = append(h.MCP, at2026(mcp(2, wire.MCPFault, "commit_write", wire.MCPFaultDropAfterExecute)))
				}
			})
			v := Check(h)[0]
			if got := strings.Contains(v.Message, "a finding, not a timeout of replaycheck's"); v.Check != "completed" || got != tt.want {
				t.Errorf("verdict %s %q: names the finding = %v, want %v", v.Check, v.Message, got, tt.want)
			}
		})
	}
}

// keyedCall gives the call event e an idempotency key, as a call of a keyed
// tool carries.
func keyedCall(e wire.MCPEvent) wire.MCPEvent {
	e.Key = "k-1"
	return e
}
