package rules

import (
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/replaycheck/replaycheck/internal/harness/history"
	"github.com/replaycheck/replaycheck/internal/wire"
)

// TestEvaluateNotApplicable checks that a run whose faults act only on a
// dialect or stream mode the target did not use is skipped with why, and
// that every other run is judged: a fault that fired, a fault the target's
// requests could meet, a target that sent no model request, an MCP fault,
// and a replay rule that failed all the same.
func TestEvaluateNotApplicable(t *testing.T) {
	yes, no := true, false
	geminiStream := func(matched, fired int) wire.FaultReport {
		f := faultReport(wire.FaultUpstream, 1, `{"on":"follow_up","endpoint":"gemini","stream":true,"drop":{"after":"headers"},"times":"once"}`, matched, fired)
		f.Endpoint, f.Stream = "gemini", &yes
		return f
	}
	chat := func(h *history.History) {
		h.Expect = history.Expect{Rules: []string{"no-replay-after-dispatch", "error-surfaces"}}
		h.Upstream = append(h.Upstream,
			wire.UpstreamRequest{At: ms(1), Path: "/v1/chat/completions", Endpoint: "chat", Kind: wire.KindInitial, Outcome: "forwarded", Status: 200},
			wire.UpstreamRequest{At: ms(3), Path: "/v1/chat/completions", Endpoint: "chat", Kind: wire.KindFollowUp, Outcome: "forwarded", Status: 200})
		h.MCP = append(h.MCP, mcp(2, wire.MCPCall, "commit_write", ""), mcp(2, wire.MCPWrite, "commit_write", ""))
	}
	tests := []struct {
		name string
		h    *history.History
		want Status
		why  string
	}{
		{"a gemini stream fault on a chat target", seedHistory(func(h *history.History) {
			chat(h)
			h.Faults = []wire.FaultReport{geminiStream(0, 0)}
		}), Skipped, "not applicable: the target spoke OpenAI Chat Completions, not streamed; this scenario's faults act on Gemini generateContent, streamed"},
		{"a stream fault on a target that never streams", seedHistory(func(h *history.History) {
			chat(h)
			f := faultReport(wire.FaultUpstream, 1, `{"stream":true,"drop":{"after":"headers"}}`, 0, 0)
			f.Stream = &yes
			h.Faults = []wire.FaultReport{f}
		}), Skipped, "not applicable: the target spoke OpenAI Chat Completions, not streamed; this scenario's faults act on any dialect, streamed"},
		{"a fault the target's dialect could meet is judged", seedHistory(func(h *history.History) {
			chat(h)
			f := faultReport(wire.FaultUpstream, 1, `{"on":"follow_up","endpoint":"chat","stream":false,"times":{"nth":3}}`, 1, 0)
			f.Endpoint, f.Stream = "chat", &no
			h.Faults = []wire.FaultReport{f}
		}), Unknown, ""},
		{"a fault with no dialect filter is judged", seedHistory(func(h *history.History) {
			chat(h)
			h.Faults = []wire.FaultReport{faultReport(wire.FaultUpstream, 1, `{"on":"initial","respond":{"status":500},"times":{"nth":5}}`, 1, 0)}
		}), Unknown, ""},
		{"a target that sent no model request is judged", seedHistory(func(h *history.History) {
			h.Expect = history.Expect{Rules: []string{"no-replay-after-dispatch"}}
			h.Faults = []wire.FaultReport{geminiStream(0, 0)}
		}), Unknown, ""},
		{"an MCP fault beside it keeps the scenario", seedHistory(func(h *history.History) {
			chat(h)
			h.Faults = []wire.FaultReport{geminiStream(0, 0), faultReport(wire.FaultMCP, 1, `{"tool":"read_ledger","delay":"1s"}`, 0, 0)}
		}), Unknown, ""},
		{"a fault that fired keeps the scenario", seedHistory(func(h *history.History) {
			chat(h)
			f := geminiStream(1, 1)
			f.Endpoint = "chat"
			h.Faults = []wire.FaultReport{f}
		}), Unknown, ""},
		{"a broken replay rule stays a failure", seedHistory(func(h *history.History) {
			chat(h)
			h.MCP = append(h.MCP, mcp(4, wire.MCPCall, "commit_write", ""), mcp(4, wire.MCPWrite, "commit_write", ""))
			h.Faults = []wire.FaultReport{geminiStream(0, 0)}
		}), Fail, ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			r := Evaluate(tt.h)
			if r.Verdict != tt.want {
				t.Fatalf("verdict %s, want %s: %+v", r.Verdict, tt.want, r.Verdicts)
			}
			if tt.want != Skipped {
				return
			}
			want := []Verdict{{Check: CheckApplies, Kind: KindRun, Status: Skipped,
				Expected: "a fault the target's model requests can meet", Observed: tt.why[len("not applicable: "):], Message: tt.why}}
			if diff := cmp.Diff(want, r.Verdicts); diff != "" {
				t.Errorf("verdicts (-want +got):\n%s", diff)
			}
		})
	}
}

// TestRepeatSkipped checks that a repeated scenario whose every run was
// skipped is skipped, and that skipped runs count for nothing beside judged
// ones.
func TestRepeatSkipped(t *testing.T) {
	skipped := Result{Verdict: Skipped, Verdicts: []Verdict{skippedVerdict("why")}, History: &history.History{}}
	passed := Result{Verdict: Pass, Verdicts: []Verdict{{Check: "writes", Status: Pass}}, History: &history.History{}}
	all := NewTally(0)
	all.Add(1, skipped)
	all.Add(2, skipped)
	if got := all.Result(); got.Verdict != Skipped || got.Repeat.Skipped != 2 {
		t.Errorf("every run skipped: verdict %s, skipped %d; want skipped, 2", got.Verdict, got.Repeat.Skipped)
	}
	mixed := NewTally(0)
	mixed.Add(1, skipped)
	mixed.Add(2, passed)
	if got := mixed.Result(); got.Verdict != Pass {
		t.Errorf("one skipped, one passed: verdict %s, want pass", got.Verdict)
	}
}
