package rules

import (
	"strings"

	"github.com/replaycheck/replaycheck/internal/harness/history"
	"github.com/replaycheck/replaycheck/internal/wire"
)

// executions returns the tools/call requests the ledger executed (or began
// to); see Executed.
func executions(h *history.History) []wire.MCPEvent {
	var out []wire.MCPEvent
	for _, i := range Executed(h) {
		out = append(out, h.MCP[i])
	}
	return out
}

// Executed returns the indexes in h.MCP, in order, of the tools/call
// requests the ledger executed (or began to): calls that no fault refused
// before they ran (fail_before_execute, unauthorized, expire_session before
// execute, stdio_exit before_execute, or a replayed MCP cassette's miss,
// which answered an error and forwarded nothing), of a tool the server offered, and that were not answered from an
// earlier call with the same idempotency key (a keyed re-send the server
// deduplicated runs nothing again). A fault event belongs to the last call
// before it with its tool and request id.
func Executed(h *history.History) []int {
	refused := callsWith(h, refusedBefore)
	dedup := deduplicated(h)
	var out []int
	for i, e := range h.MCP {
		if e.Kind != wire.MCPCall || refused[i] || dedup[i] || e.UnknownTool {
			continue
		}
		out = append(out, i)
	}
	return out
}

// callsWith returns the indexes in h.MCP of the tools/call requests that an
// event matching is belongs to: the last call before it with its tool and
// request id.
func callsWith(h *history.History, is func(wire.MCPEvent) bool) map[int]bool {
	out := map[int]bool{}
	last := map[string]int{}
	for i, e := range h.MCP {
		id := e.Tool + "\x00" + e.RequestID
		switch {
		case e.Kind == wire.MCPCall:
			last[id] = i
		case is(e):
			if j, ok := last[id]; ok {
				out[j] = true
			}
		}
	}
	return out
}

// unknownOutcome returns the indexes in h.MCP of the tools/call requests a
// forwarding ledger forwarded and got no answer to (wire.MCPFaultForwardUnknown):
// they may have run.
func unknownOutcome(h *history.History) map[int]bool {
	return callsWith(h, func(e wire.MCPEvent) bool {
		m, ok := e.FaultMeaning()
		return ok && m.Source == wire.FromForwarder && m.Ran == wire.ToolRanUnknown
	})
}

// refusedBefore reports whether e is a fault after which the tool had not
// run (wire.ToolRanNo): one that answered a call before it ran, or ended the
// stdio server process carrying it before it ran, or a replayed MCP
// cassette's miss or a call refused because the forwarded server had exited.
func refusedBefore(e wire.MCPEvent) bool {
	m, ok := e.FaultMeaning()
	return ok && m.Ran == wire.ToolRanNo
}

// cutAfterRun reports whether e is a fault that ran the tool and then ended
// the call without its answer (drop_after_execute, expire_session after
// execute).
func cutAfterRun(e wire.MCPEvent) bool {
	m, ok := e.FaultMeaning()
	return ok && m.EndsCall && m.Ran == wire.ToolRanUnknown
}

// answeredIsError reports whether e is an armed fault that answered its call
// with an isError result in place of the tool (is_error).
func answeredIsError(e wire.MCPEvent) bool {
	m, ok := e.FaultMeaning()
	return ok && m.Source == wire.FromArmed && m.ClientSees == wire.ClientSeesIsError
}

// keyedTools returns the tools whose calls carry an idempotency key: a write
// of theirs reported a key, or a call of theirs was answered "dedup".
func keyedTools(h *history.History) map[string]bool {
	keyed := map[string]bool{}
	for _, e := range h.MCP {
		if e.Key != "" && e.Kind != wire.MCPCall || e.IsDedup() {
			keyed[e.Tool] = true
		}
	}
	return keyed
}

// deduplicated returns the indexes in h.MCP of the tools/call events the
// server answered from an earlier call with the same idempotency key instead
// of executing them: calls of a keyed tool answered "dedup", or whose answer
// was dropped after a handler that wrote nothing. A call's later events are
// found by its tool and request id, up to the next call with both.
func deduplicated(h *history.History) map[int]bool {
	keyed := keyedTools(h)
	if len(keyed) == 0 {
		return nil
	}
	type outcome struct{ wrote, dedup, dropped, other bool }
	calls := map[int]*outcome{}
	last := map[string]int{}
	for i, e := range h.MCP {
		if !keyed[e.Tool] {
			continue
		}
		id := e.Tool + "\x00" + e.RequestID
		if e.Kind == wire.MCPCall {
			calls[i], last[id] = &outcome{}, i
			continue
		}
		j, ok := last[id]
		if !ok {
			continue
		}
		o := calls[j]
		switch {
		case e.Kind == wire.MCPWrite:
			o.wrote = true
		case e.IsDedup():
			o.dedup = true
		case cutAfterRun(e):
			o.dropped = true
		case refusedBefore(e) || answeredIsError(e):
			o.other = true // refused or answered isError: not a deduplicated answer
		}
	}
	out := map[int]bool{}
	for i, o := range calls {
		if !o.wrote && !o.other && (o.dedup || o.dropped) {
			out[i] = true
		}
	}
	return out
}

// byTool counts events per tool.
func byTool(es []wire.MCPEvent) map[string]int {
	m := map[string]int{}
	for _, e := range es {
		m[e.Tool]++
	}
	return m
}

// upstreamIn returns the upstream requests made during exchange i (all of
// them when i < 0).
func upstreamIn(h *history.History, i int) []wire.UpstreamRequest {
	var out []wire.UpstreamRequest
	for _, u := range h.Upstream {
		if i < 0 || h.ExchangeAt(u.At.D()) == i {
			out = append(out, u)
		}
	}
	return out
}

// header returns the value of the named response header (case-insensitive).
func header(u wire.UpstreamRequest, name string) string {
	for k, v := range u.Headers {
		if strings.EqualFold(k, name) {
			return v
		}
	}
	return ""
}

// retryableStatus reports whether a status is one a client may retry.
func retryableStatus(s int) bool {
	switch s {
	case 408, 429, 500, 502, 503, 504, 529:
		return true
	}
	return false
}

// terminalStatus reports whether a status must not be retried.
func terminalStatus(s int) bool {
	switch s {
	case 400, 401, 403, 404, 422, 501:
		return true
	}
	return false
}

// cut reports whether the upstream dropped or reset the answer.
func cut(u wire.UpstreamRequest) bool { return u.Outcome.Cut() }

// dropped reports whether the upstream dropped a stream after it began.
func dropped(u wire.UpstreamRequest) bool { return u.Outcome.Dropped() }

// retryable reports whether the upstream failure is one a client may retry:
// a cut, or a retry-able status, unless the answer said x-should-retry: false.
func retryable(u wire.UpstreamRequest) bool {
	if strings.EqualFold(header(u, "x-should-retry"), "false") {
		return false
	}
	return cut(u) || retryableStatus(u.Status)
}

// nonRetryable reports whether the upstream failure must not be retried: a
// terminal status or x-should-retry: false.
func nonRetryable(u wire.UpstreamRequest) bool {
	if cut(u) {
		return false
	}
	return terminalStatus(u.Status) || u.Status >= 400 && strings.EqualFold(header(u, "x-should-retry"), "false")
}

// failure reports whether the upstream answered with an error or cut.
func failure(u wire.UpstreamRequest) bool { return cut(u) || u.Status >= 400 }

// label renders an upstream request as "follow_up injected_500".
func label(u wire.UpstreamRequest) string { return u.CountKey().String() }

// delivered reports whether the client stream of exchange i carried chunks
// of the upstream answer u, and whether that can be told at all: only when
// the client stream carries ids of the upstream's own answers (a target that
// passes them through) and u has one, or when the client got no chunk at all.
func delivered(h *history.History, i int, u wire.UpstreamRequest) (reached, known bool) {
	if i < 0 || i >= len(h.Requests) || u.ResponseID == "" {
		return false, false
	}
	x := h.Requests[i]
	if !x.Stream || x.DataChunks == 0 {
		return false, true // nothing reached the client before the answer was complete
	}
	for _, id := range x.ResponseIDs {
		for _, v := range h.Upstream {
			if v.ResponseID != "" && v.ResponseID == id {
				known = true
			}
		}
		if id == u.ResponseID {
			reached = true
		}
	}
	return reached, known
}
