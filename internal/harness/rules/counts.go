package rules

import (
	"fmt"
	"maps"
	"slices"
	"strconv"
	"strings"

	"github.com/replaycheck/replaycheck/internal/harness/history"
	"github.com/replaycheck/replaycheck/internal/wire"
)

// counts checks the scenario's plain count expectations for the history's
// target (the general counts with its expect.targets blocks laid over them),
// in a fixed order. A count is exact or within bounds; the verdict says which
// in words ("at most 1 write", "1–3 requests"). short[check] reports, for a
// check that failed, whether a timeout can explain it: a count below its
// least (something did not happen in time), a status that was an error
// answer (5xx) or none before the run's deadline, a client's exit where it
// was killed at the deadline.
func counts(h *history.History) (out []Verdict, short map[string]bool) {
	e := h.Expect.For(h.Target)
	short = map[string]bool{}
	eq := func(name string, want *history.Count, got int, unit string) {
		if want == nil {
			return
		}
		s := Fail
		if want.Match(got) {
			s = Pass
		}
		short[name] = s == Fail && got < want.Min
		out = append(out, verdict(name, KindCount, s, want.Describe(unit), strconv.Itoa(got)))
	}
	client := isClient(h)
	if e.Status != nil && client {
		out = append(out, verdict("status", KindCount, Unknown, "HTTP "+strconv.Itoa(*e.Status), "the target is a client: it gets no HTTP answer"))
	}
	if e.Status != nil && !client {
		var got []string
		ok := len(h.Requests) > 0
		for _, x := range h.Requests {
			switch {
			case x.Status != 0:
				got = append(got, "HTTP "+strconv.Itoa(x.Status))
			case x.TimedOut:
				got = append(got, "no answer before the deadline")
			default:
				got = append(got, "no HTTP answer (a transport error)")
			}
			ok = ok && x.Status == *e.Status
		}
		if len(got) == 0 {
			got = []string{"no request"}
		}
		s := Fail
		if ok {
			s = Pass
		}
		// An error answer, or none by the deadline, is what a target's
		// timeout turns into; a wrong success is not.
		short["status"] = s == Fail && slices.ContainsFunc(h.Requests, func(x history.Exchange) bool {
			return x.Status != *e.Status && (x.TimedOut || x.Status >= 500)
		})
		out = append(out, verdict("status", KindCount, s, "HTTP "+strconv.Itoa(*e.Status), strings.Join(got, ", ")))
	}
	eq("writes", e.Writes, len(h.Writes()), "write")
	eq("keys", e.Keys, len(h.Keys()), "key")
	eq("cancellations", e.Cancellations, len(h.MCPOf(wire.MCPCancelled, "")), "cancellation")
	for _, k := range slices.SortedFunc(maps.Keys(e.Upstream), wire.CompareCountKeys) {
		want := e.Upstream[k]
		eq("upstream["+k.String()+"]", &want, upstreamCount(h, k), "request")
	}
	if e.MCP != nil && e.MCP.Calls != nil {
		c := e.MCP.Calls
		if c.PerTool == nil {
			eq("mcp.calls", &c.Total, len(h.Calls("")), "tools/call")
		} else {
			for _, t := range slices.Sorted(maps.Keys(c.PerTool)) {
				want := c.PerTool[t]
				eq("mcp.calls["+t+"]", &want, len(h.Calls(t)), "tools/call")
			}
		}
	}
	if e.MCP != nil {
		unknownTool := 0
		for _, c := range h.Calls("") {
			if c.UnknownTool {
				unknownTool++
			}
		}
		eq("mcp.unknown_tool_calls", e.MCP.UnknownToolCalls, unknownTool, "tools/call")
		eq("mcp.spawns", e.MCP.Spawns, len(h.MCPOf(wire.MCPSpawn, "")), "spawn")
	}
	chunks, errs := 0, 0
	for _, x := range h.Requests {
		chunks += x.DataChunks
		errs += x.ErrorEvents
	}
	if client {
		for _, c := range []struct {
			name string
			want *history.Count
		}{{"data_chunks", e.DataChunks}, {"error_events", e.ErrorEvents}} {
			if c.want != nil {
				out = append(out, verdict(c.name, KindCount, Unknown, c.want.String(), "the target is a client: it gets no stream"))
			}
		}
	} else {
		eq("data_chunks", e.DataChunks, chunks, "data chunk")
		eq("error_events", e.ErrorEvents, errs, "error event")
	}
	if c := h.Expect.Client; c != nil {
		out = append(out, clientChecks(h, c)...)
		short["client.exit"] = slices.ContainsFunc(h.Requests, func(x history.Exchange) bool { return x.Client != nil && x.Client.Killed })
	}
	return out, short
}

// isClient reports whether the history's requests were runs of a client
// target's command.
func isClient(h *history.History) bool {
	return len(h.Requests) > 0 && h.Requests[0].Client != nil
}

// clientChecks checks a client target's exit code and output in every run of
// its command; they cannot be judged on other targets.
func clientChecks(h *history.History, c *history.ClientExpect) []Verdict {
	type check struct {
		name, expected string
		set            bool
		ok             func(r *history.ClientRun) bool
		observed       func(r *history.ClientRun) string
	}
	exit := history.ExitCode{}
	if c.Exit != nil {
		exit = *c.Exit
	}
	checks := []check{
		{"client.exit", "exit code " + exit.String(), c.Exit != nil,
			func(r *history.ClientRun) bool { return !r.Killed && exit.Match(r.Exit) },
			func(r *history.ClientRun) string {
				if r.Killed {
					return "killed at its deadline"
				}
				return "exit code " + strconv.Itoa(r.Exit)
			}},
		{"client.stdout", fmt.Sprintf("stdout containing %q", c.StdoutContains), c.StdoutContains != "",
			func(r *history.ClientRun) bool { return strings.Contains(r.Stdout, c.StdoutContains) },
			func(r *history.ClientRun) string { return fmt.Sprintf("stdout %q", lastLine(r.Stdout)) }},
		{"client.stderr", fmt.Sprintf("stderr containing %q", c.StderrContains), c.StderrContains != "",
			func(r *history.ClientRun) bool { return strings.Contains(r.Stderr, c.StderrContains) },
			func(r *history.ClientRun) string { return fmt.Sprintf("stderr %q", lastLine(r.Stderr)) }},
	}
	var out []Verdict
	for _, ck := range checks {
		if !ck.set {
			continue
		}
		if !isClient(h) {
			out = append(out, verdict(ck.name, KindCount, Unknown, ck.expected, "the target is not a client"))
			continue
		}
		s, observed := Pass, ""
		for _, x := range h.Requests {
			if x.Client == nil {
				continue
			}
			if !ck.ok(x.Client) {
				s, observed = Fail, ck.observed(x.Client)
				break
			}
			observed = ck.observed(x.Client)
		}
		out = append(out, verdict(ck.name, KindCount, s, ck.expected, observed))
	}
	return out
}

// lastLine returns the last non-empty line of s, shortened for messages.
func lastLine(s string) string {
	lines := strings.Split(strings.TrimRight(s, "\n"), "\n")
	l := lines[len(lines)-1]
	if len(l) > 160 {
		l = l[:160] + "…"
	}
	return l
}

// upstreamCount counts the upstream requests that key counts.
func upstreamCount(h *history.History, key wire.CountKey) int {
	n := 0
	for _, u := range h.Upstream {
		if key.Counts(u) {
			n++
		}
	}
	return n
}
