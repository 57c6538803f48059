package rules

import (
	"strings"
	"testing"
	"time"

	"github.com/replaycheck/replaycheck/internal/harness/history"
	"github.com/replaycheck/replaycheck/internal/wire"
)

// hungAfterWrite is the stdio hang scenario's history as a starved machine
// leaves it: the gateway's tool timeout expired before the stdio server
// wrote, so nothing was written, and the gateway answered 200 without
// sending the call again.
func hungAfterWrite(h *history.History) {
	h.Requests[0].Status = 200
	h.Setup.ToolTimeout = ms(200)
	h.Expect = history.Expect{Counts: history.Counts{Status: intp(200), Writes: history.Exactly(1)},
		Rules: []string{"no-replay-after-dispatch"}}
	h.MCP = []wire.MCPEvent{mcp(1, wire.MCPCall, "commit_write", "")}
	h.Upstream = []wire.UpstreamRequest{up(0, wire.KindInitial, "forwarded", 200), up(250, wire.KindFollowUp, "forwarded", 200)}
}

// streamIdleGaveUp is a run whose target gave up on the model's stream
// after its 500ms stream idle timeout and answered the app 500, though the
// model's answer was whole and the tool ran once.
func streamIdleGaveUp(h *history.History) {
	h.Requests[0].Status = 500
	h.Requests[0].Stream = true
	h.Setup.StreamIdleTimeout = ms(500)
	h.Expect = history.Expect{Counts: history.Counts{Status: intp(200), Writes: history.Exactly(1)},
		Rules: []string{"no-replay-after-dispatch"}}
	h.MCP = []wire.MCPEvent{mcp(1, wire.MCPCall, "commit_write", ""), mcp(2, wire.MCPWrite, "commit_write", ""), mcp(3, wire.MCPResult, "commit_write", "")}
	h.Upstream = []wire.UpstreamRequest{up(0, wire.KindInitial, "forwarded", 200), up(50, wire.KindFollowUp, "forwarded", 200)}
}

// starvedBy gives h the harness's lateness late and a deadline of 30s.
func starvedBy(late time.Duration) func(h *history.History) {
	return func(h *history.History) {
		h.Harness = &history.Harness{Lateness: history.Duration(late), Deadline: history.Duration(30 * time.Second)}
	}
}

// clientKilled is a run whose client was killed at its 60s deadline before
// it called the tool, having waited for a CPU for waited of it; the
// harness's own timers kept time.
func clientKilled(waited time.Duration) func(h *history.History) {
	return func(h *history.History) {
		h.Harness = &history.Harness{Lateness: history.Duration(20 * time.Millisecond), Deadline: history.Duration(time.Minute)}
		h.Expect = history.Expect{Counts: history.Counts{Status: intp(200), Writes: history.Exactly(1)},
			Rules: []string{"no-replay-after-dispatch"}}
		h.Requests[0].End = history.Duration(time.Minute)
		h.Requests[0].Status, h.Requests[0].TimedOut, h.Requests[0].CleanEnd = 0, true, false
		h.Requests[0].Client = &history.ClientRun{Exit: -1, Killed: true, RunDelay: history.Duration(waited)}
		h.Requests[0].TransportError = "client agent did not exit before the scenario's deadline; its process group was killed"
		h.Upstream = []wire.UpstreamRequest{up(0, wire.KindInitial, "forwarded", 200)}
	}
}

// stalled gives h the harness's lateness late, its stalls, and a deadline
// of 30s.
func stalled(late time.Duration, stalls ...history.Stall) func(h *history.History) {
	return func(h *history.History) {
		starvedBy(late)(h)
		h.Harness.Stalls = stalls
	}
}

// span is a stall from ms from to ms to of the run, its wake-ups up to
// most ms late.
func span(from, to, most int) history.Stall {
	return history.Stall{Start: ms(from), End: ms(to), Most: ms(most)}
}

// TestStarvedHarness: a run whose failures only a timeout explains, while
// the harness's own timers ran late by a share of that timeout, is unknown
// with the reason; a replay rule that broke, a count above its most, a
// harness that kept time, or a timeout long beside the lateness, leave it
// failed. So is a run whose counts fell short because the harness's own
// stdio server never forwarded a call the target sent and gave up, saying
// so with the unfired fault; the same run without that fact (a target that
// never sent the call) fails, and so does a write that ran twice beside it.
func TestStarvedHarness(t *testing.T) {
	tests := []struct {
		name string
		muts []func(h *history.History)
		want Status
		// why is a part of the failed or unknown checks' messages.
		why string
	}{
		{
			name: "writes 0 after a 200ms tool timeout, timers 2.3s late",
			muts: []func(h *history.History){hungAfterWrite, starvedBy(2300 * time.Millisecond)},
			want: Unknown,
			why:  "cannot judge: the harness was starved: its timers ran up to 2.3s late while the 200ms tool timeout decided this run; re-run on a quieter machine or with a lower --parallel (expected 1 write, observed 0)",
		},
		{
			name: "writes 0 after a 200ms tool timeout, timers 150ms late",
			muts: []func(h *history.History){hungAfterWrite, starvedBy(150 * time.Millisecond)},
			want: Unknown,
			why:  "its timers ran up to 150ms late while the 200ms tool timeout decided",
		},
		{
			name: "writes 0 after a 200ms tool timeout on a machine with CPU to spare",
			muts: []func(h *history.History){hungAfterWrite, starvedBy(60 * time.Millisecond)},
			want: Fail,
			why:  "expected 1 write, observed 0",
		},
		{
			name: "writes 0 after a 1s tool timeout, timers 300ms late",
			muts: []func(h *history.History){hungAfterWrite, func(h *history.History) { h.Setup.ToolTimeout = ms(1000) }, starvedBy(300 * time.Millisecond)},
			want: Fail,
			why:  "expected 1 write, observed 0",
		},
		{
			name: "writes 0 after a 200ms tool timeout, lateness not measured",
			muts: []func(h *history.History){hungAfterWrite},
			want: Fail,
			why:  "expected 1 write, observed 0",
		},
		{
			name: "a write that ran twice under starvation",
			muts: []func(h *history.History){hungAfterWrite, starvedBy(2300 * time.Millisecond), func(h *history.History) {
				h.MCP = []wire.MCPEvent{mcpID(1, wire.MCPCall, "commit_write", "", "1"), mcpID(2, wire.MCPWrite, "commit_write", "", "1"),
					mcpID(300, wire.MCPCall, "commit_write", "", "2"), mcpID(301, wire.MCPWrite, "commit_write", "", "2")}
			}},
			want: Fail,
			why:  "expected 1 write, observed 2",
		},
		{
			name: "a write short and a replay rule broken under starvation",
			muts: []func(h *history.History){hungAfterWrite, starvedBy(2300 * time.Millisecond), func(h *history.History) {
				h.Expect.Writes = history.Exactly(3)
				h.MCP = []wire.MCPEvent{mcpID(1, wire.MCPCall, "commit_write", "", "1"), mcpID(2, wire.MCPWrite, "commit_write", "", "1"),
					mcpID(300, wire.MCPCall, "commit_write", "", "2"), mcpID(301, wire.MCPWrite, "commit_write", "", "2")}
			}},
			want: Fail,
			why:  "expected at most 1 execution",
		},
		{
			name: "HTTP 500 after a 500ms stream idle timeout, timers 390ms late",
			muts: []func(h *history.History){streamIdleGaveUp, starvedBy(390 * time.Millisecond)},
			want: Unknown,
			why:  "its timers ran up to 390ms late while the 500ms stream idle timeout decided this run; re-run on a quieter machine or with a lower --parallel (expected HTTP 200, observed HTTP 500)",
		},
		{
			name: "HTTP 500 after a 500ms stream idle timeout, timers 60ms late",
			muts: []func(h *history.History){streamIdleGaveUp, starvedBy(60 * time.Millisecond)},
			want: Fail,
			why:  "expected HTTP 200, observed HTTP 500",
		},
		{
			name: "HTTP 200 where 500 was expected under starvation",
			muts: []func(h *history.History){streamIdleGaveUp, starvedBy(2 * time.Second), func(h *history.History) {
				h.Expect.Status = intp(500)
				h.Requests[0].Status = 200
			}},
			want: Fail,
			why:  "expected HTTP 500, observed HTTP 200",
		},
		{
			name: "no answer before a 2s deadline, timers 1.5s late",
			muts: []func(h *history.History){hungAfterWrite, starvedBy(1500 * time.Millisecond), func(h *history.History) {
				h.Harness.Deadline = history.Duration(2 * time.Second)
				h.Requests[0].Status, h.Requests[0].TimedOut = 0, true
				h.Error = "the target gave no complete answer to POST /v1/chat/completions: the fakes saw nothing of the run for its 2s deadline (a hang)"
			}},
			want: Unknown,
			why:  "its timers ran up to 1.5s late while the 2s deadline decided",
		},
		{
			name: "no answer before a 2s deadline, timers 300ms late",
			muts: []func(h *history.History){hungAfterWrite, starvedBy(300 * time.Millisecond), func(h *history.History) {
				h.Harness.Deadline = history.Duration(2 * time.Second)
				h.Requests[0].Status, h.Requests[0].TimedOut = 0, true
				h.Error = "the target gave no complete answer to POST /v1/chat/completions: the fakes saw nothing of the run for its 2s deadline (a hang)"
			}},
			want: Fail,
			why:  "a hang",
		},
		{
			name: "a client killed at a 60s deadline, having waited 40s for a CPU",
			muts: []func(h *history.History){clientKilled(40 * time.Second)},
			want: Unknown,
			why:  "cannot judge: the machine was starved: the client's processes waited up to 40s for a CPU in the 1m0s before it was killed; re-run on a quieter machine or with a lower --parallel (expected 1 write, observed 0)",
		},
		{
			name: "a client killed at a 60s deadline, having waited 2s for a CPU",
			muts: []func(h *history.History){clientKilled(2 * time.Second)},
			want: Fail,
			why:  "expected 1 write, observed 0",
		},
		{
			name: "a client killed at its own 3s timeout, having waited 2s for a CPU",
			muts: []func(h *history.History){clientKilled(2 * time.Second), func(h *history.History) { h.Requests[0].End = ms(3000) }},
			want: Unknown,
			why:  "the client's processes waited up to 2s for a CPU in the 3s before it was killed",
		},
		{
			name: "writes 0: the stdio server never forwarded the call",
			muts: []func(h *history.History){hangNeverForwarded},
			want: Unknown,
			why: "cannot judge: the harness's stdio server never forwarded the target's tools/call commit_write ×1 to the ledger: the target gave it up (cancelled it or closed the server's stdin) first, so it never ran " +
				`and mcp fault 1 {tool: commit_write, times: once, stdio_hang: {}} never fired (it matched no tools/call); the run measured how fast the harness delivered the call, not what the target decided (the harness may have been starved); re-run on a quieter machine or with a lower --parallel (expected 1 write, observed 0)`,
		},
		{
			name: "writes 0: the target never sent the call",
			muts: []func(h *history.History){hangNeverForwarded, func(h *history.History) {
				h.MCP = h.MCP[:1:1]
			}},
			want: Fail,
			why:  "expected 1 write, observed 0",
		},
		{
			name: "a write that ran twice beside a call never forwarded",
			muts: []func(h *history.History){hangNeverForwarded, func(h *history.History) {
				h.MCP = append(h.MCP, mcpID(420, wire.MCPCall, "commit_write", "", "1"), mcpID(421, wire.MCPWrite, "commit_write", "", "1"),
					mcpID(430, wire.MCPCall, "commit_write", "", "2"), mcpID(431, wire.MCPWrite, "commit_write", "", "2"))
			}},
			want: Fail,
			why:  "expected 1 write, observed 2",
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			h := seedHistory(func(h *history.History) {
				for _, m := range tt.muts {
					m(h)
				}
			})
			vs := Check(h)
			if got := Overall(vs); got != tt.want {
				t.Errorf("Overall = %s, want %s:%s", got, tt.want, messages(vs))
			}
			found, starved := false, 0
			for _, v := range vs {
				if v.Status != Pass && strings.Contains(v.Message, tt.why) {
					found = true
				}
				if v.Starved {
					starved++
					if v.Status != Unknown {
						t.Errorf("%s is marked starved but says %s", v.Check, v.Status)
					}
				}
			}
			if want := tt.want == Unknown; (starved > 0) != want {
				t.Errorf("%d checks marked starved, want some: %v%s", starved, want, messages(vs))
			}
			if !found {
				t.Errorf("no failed or unknown check says %q:%s", tt.why, messages(vs))
			}
		})
	}
}

func messages(vs []Verdict) string {
	var b strings.Builder
	for _, v := range vs {
		b.WriteString("\n  " + string(v.Status) + " " + v.Check + ": " + v.Message)
	}
	return b.String()
}

// TestStarvedWait: a retry that came after the wait Retry-After asked for is
// credited with waiting only when the harness kept time, or ran late by less
// than the retry's margin over the wait: a retry sent at once and held up by
// a starved machine (the naive gateway at --parallel 256, a 2ms backoff
// arriving 1.025s after a Retry-After: 1) is unknown, not a pass. A retry
// that came too soon fails however starved the harness was.
func TestStarvedWait(t *testing.T) {
	retryAt := func(gapMS int) func(h *history.History) {
		return func(h *history.History) {
			h.Upstream = append(h.Upstream, withHeaders(up(1, "initial", "injected_503", 503), map[string]string{"Retry-After": "1"}), up(1+gapMS, "initial", "forwarded", 200))
		}
	}
	tests := []struct {
		name string
		muts []func(h *history.History)
		want Status
		why  string
	}{
		{"1.025s gap, timers 896ms late", []func(*history.History){retryAt(1025), starvedBy(896 * time.Millisecond)}, Unknown,
			"the harness was starved: its wake-ups came up to 896ms late between the answer and the retry, so up to 1.792s of the gap (2 wake-ups) may be the machine's: as much as half the 1s wait asked for and more than the retry's 25ms margin over it"},
		// The answer came at 1ms, the retry at 1026ms.
		{"1.025s gap, a wake-up 300ms late within it", []func(*history.History){retryAt(1025), stalled(300*time.Millisecond, span(100, 400, 300))}, Unknown,
			"its wake-ups came up to 300ms late between the answer and the retry, so up to 600ms"},
		{"1.025s gap, many wake-ups 50ms late within it", []func(*history.History){retryAt(1025), stalled(50*time.Millisecond, span(0, 1030, 50))}, Pass, ""},
		{"1.025s gap, a wake-up 896ms late before it", []func(*history.History){retryAt(1025), stalled(896*time.Millisecond, span(-895, 1, 896), span(1030, 1926, 896))}, Pass, ""},
		{"1.9s gap, a wake-up 300ms late within it", []func(*history.History){retryAt(1900), stalled(300*time.Millisecond, span(100, 400, 300))}, Pass, ""},
		{"1.025s gap, timers 200ms late", []func(*history.History){retryAt(1025), starvedBy(200 * time.Millisecond)}, Pass, ""},
		{"1.025s gap, timers 60ms late", []func(*history.History){retryAt(1025), starvedBy(60 * time.Millisecond)}, Pass, ""},
		{"2.9s gap, timers 896ms late", []func(*history.History){retryAt(2900), starvedBy(896 * time.Millisecond)}, Pass, ""},
		{"1.025s gap, no lateness measured", []func(*history.History){retryAt(1025)}, Pass, ""},
		{"60ms gap, timers 2s late", []func(*history.History){retryAt(60), starvedBy(2 * time.Second)}, Fail, "expected a wait of at least 1s"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			h := seedHistory(func(h *history.History) {
				for _, m := range tt.muts {
					m(h)
				}
			})
			v := retryAfterHonored(h)
			if v.Status != tt.want || !strings.Contains(message(v.Status, v.Expected, v.Observed), tt.why) {
				t.Fatalf("got %s %q, want %s containing %q", v.Status, message(v.Status, v.Expected, v.Observed), tt.want, tt.why)
			}
			if v.Starved != (tt.want == Unknown) {
				t.Errorf("Starved = %v", v.Starved)
			}
		})
	}
}
