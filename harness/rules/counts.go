package rules

import (
	"fmt"
	"sort"
	"strconv"
	"strings"

	"github.com/replaycheck/replaycheck/harness/history"
)

// counts checks the scenario's plain count expectations, in a fixed order.
func counts(h *history.History) []Verdict {
	e := h.Expect
	var out []Verdict
	eq := func(name string, want *int, got int, unit string) {
		if want == nil {
			return
		}
		s := Fail
		if got == *want {
			s = Pass
		}
		out = append(out, verdict(name, KindCount, s, plural(*want, unit), strconv.Itoa(got)))
	}
	if e.Status != nil {
		var got []string
		ok := len(h.Requests) > 0
		for _, x := range h.Requests {
			got = append(got, strconv.Itoa(x.Status))
			ok = ok && x.Status == *e.Status
		}
		if len(got) == 0 {
			got = []string{"no request"}
		}
		s := Fail
		if ok {
			s = Pass
		}
		out = append(out, verdict("status", KindCount, s, "HTTP "+strconv.Itoa(*e.Status), "HTTP "+strings.Join(got, ", ")))
	}
	eq("writes", e.Writes, len(h.Writes()), "write")
	eq("keys", e.Keys, len(h.Keys()), "key")
	eq("cancellations", e.Cancellations, len(h.MCPOf(history.MCPCancelled, "")), "cancellation")
	if len(e.Upstream) > 0 {
		keys := make([]string, 0, len(e.Upstream))
		for k := range e.Upstream {
			keys = append(keys, k)
		}
		sort.Strings(keys)
		for _, k := range keys {
			want := e.Upstream[k]
			eq("upstream["+k+"]", &want, upstreamCount(h, k), "request")
		}
	}
	if e.MCP != nil && e.MCP.Calls != nil {
		c := e.MCP.Calls
		if c.PerTool == nil {
			eq("mcp.calls", &c.Total, len(h.Calls("")), "tools/call")
		} else {
			tools := make([]string, 0, len(c.PerTool))
			for t := range c.PerTool {
				tools = append(tools, t)
			}
			sort.Strings(tools)
			for _, t := range tools {
				want := c.PerTool[t]
				eq("mcp.calls["+t+"]", &want, len(h.Calls(t)), "tools/call")
			}
		}
	}
	chunks, errs := 0, 0
	for _, x := range h.Requests {
		chunks += x.DataChunks
		errs += x.ErrorEvents
	}
	eq("data_chunks", e.DataChunks, chunks, "data chunk")
	eq("error_events", e.ErrorEvents, errs, "error event")
	return out
}

// upstreamCount counts upstream requests matching key: a kind ("initial"),
// or a kind and outcome ("follow_up injected_500").
func upstreamCount(h *history.History, key string) int {
	kind, outcome, hasOutcome := strings.Cut(key, " ")
	n := 0
	for _, u := range h.Upstream {
		if (kind == "any" || u.Kind == kind) && (!hasOutcome || u.Outcome == outcome) {
			n++
		}
	}
	return n
}

// UpstreamKey reports whether key is a valid upstream count key: initial,
// follow_up or any, optionally followed by a space and an outcome.
func UpstreamKey(key string) error {
	kind, outcome, hasOutcome := strings.Cut(key, " ")
	switch kind {
	case "initial", "follow_up", "any":
	default:
		return fmt.Errorf("upstream count %q: want initial, follow_up or any, optionally followed by an outcome such as \"follow_up injected_500\"", key)
	}
	if hasOutcome && (outcome == "" || strings.ContainsAny(outcome, " \t")) {
		return fmt.Errorf("upstream count %q: the outcome must be one word such as injected_500", key)
	}
	return nil
}
