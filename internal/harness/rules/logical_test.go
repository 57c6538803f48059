package rules

import (
	"strings"
	"testing"

	"github.com/replaycheck/replaycheck/internal/harness/history"
	"github.com/replaycheck/replaycheck/internal/wire"
)

const (
	argsA = `{"entry":"a"}`
	argsB = `{"entry":"b"}`
)

// answering appends an initial answer at at that makes calls.
func answering(h *history.History, at int, calls ...wire.ToolCall) {
	u := up(at, wire.KindInitial, wire.OutcomeForwarded, 200)
	u.Calls = calls
	h.Upstream = append(h.Upstream, u)
}

// scripted is the fake model's scripted call of step (attempt 0) with args.
func scripted(tool, id string, step int, args string) wire.ToolCall {
	return wire.ToolCall{Tool: tool, ID: id, Step: step, Args: args}
}

// executed appends a tools/call of tool with args and key (request id id)
// and, when wrote, its write carrying the key.
func executed(h *history.History, at int, tool, id, args, key string, wrote bool) {
	c := mcpID(at, wire.MCPCall, tool, "", id)
	c.Args, c.Key = args, key
	h.MCP = append(h.MCP, c)
	if wrote {
		w := mcpID(at, wire.MCPWrite, tool, "", id)
		w.Key = key
		h.MCP = append(h.MCP, w)
	}
}

// TestLogicalCalls: no-replay-after-dispatch and no-replay-ambiguous-mcp
// judge executions by the model's asks of the same call (tool and
// arguments), keyed re-sends with one key apart.
func TestLogicalCalls(t *testing.T) {
	tests := []struct {
		name  string
		rule  string
		tools []string
		mut   func(h *history.History)
		want  Status
		said  string
	}{
		{"asked twice with equal arguments: two logical calls", "no-replay-after-dispatch", []string{"commit_write", "commit_write"},
			func(h *history.History) {
				answering(h, 1, scripted("ledger-commit_write", "call_1_0", 1, argsA), scripted("ledger-commit_write", "call_1_1", 2, argsA))
				executed(h, 2, "commit_write", "1", argsA, "", true)
				executed(h, 3, "commit_write", "2", argsA, "", true)
			}, Pass, "observed 2 executions (commit_write ×2)"},
		{"a re-sent model request re-issues the ask under a new id", "no-replay-after-dispatch", []string{"commit_write"},
			func(h *history.History) {
				answering(h, 1, scripted("commit_write", "call_1_0", 1, argsA))
				executed(h, 2, "commit_write", "1", argsA, "", true)
				answering(h, 3, scripted("commit_write", "call_3_0", 1, argsA))
				executed(h, 4, "commit_write", "2", argsA, "", true)
			}, Fail, `commit_write {"entry":"a"} ran twice for 1 logical tool call (the model asked once)`},
		{"a replayed answer re-issues its recorded id", "no-replay-after-dispatch", []string{"commit_write"},
			func(h *history.History) {
				answering(h, 1, wire.ToolCall{Tool: "commit_write", ID: "toolu_rec", Args: argsA})
				executed(h, 2, "commit_write", "1", argsA, "", true)
				answering(h, 3, wire.ToolCall{Tool: "commit_write", ID: "toolu_rec", Args: argsA})
				executed(h, 4, "commit_write", "2", argsA, "", true)
			}, Fail, `ran twice for 1 logical tool call (the model asked once)`},
		{"another call's ask does not cover a replay", "no-replay-after-dispatch", []string{"commit_write", "commit_write"},
			func(h *history.History) {
				answering(h, 1, scripted("commit_write", "call_1_0", 1, argsA), scripted("commit_write", "call_1_1", 2, argsB))
				executed(h, 2, "commit_write", "1", argsA, "", true)
				executed(h, 3, "commit_write", "2", argsA, "", true)
			}, Fail, `commit_write {"entry":"a"} ran twice for 1 logical tool call (the model asked once)`},
		{"keyed re-send with one key: one logical write", "no-replay-after-dispatch", []string{"create_item"},
			func(h *history.History) {
				answering(h, 1, scripted("create_item", "call_1_0", 1, argsA))
				executed(h, 2, "create_item", "1", argsA, "k1", true)
				executed(h, 3, "create_item", "2", argsA, "k1", true)
			}, Pass, "observed 1 execution (create_item ×1) and 1 keyed re-send with one key"},
		{"keyed re-send with a new key", "no-replay-after-dispatch", []string{"create_item"},
			func(h *history.History) {
				answering(h, 1, scripted("create_item", "call_1_0", 1, argsA))
				executed(h, 2, "create_item", "1", argsA, "k1", true)
				executed(h, 3, "create_item", "2", argsA, "k2", true)
			}, Fail, `create_item {"entry":"a"} ran twice`},
		{"a client that changes the arguments: the script's count, said", "no-replay-after-dispatch", []string{"commit_write"},
			func(h *history.History) {
				answering(h, 1, scripted("commit_write", "call_1_0", 1, argsA))
				executed(h, 2, "commit_write", "1", `{"entry":"a","via":"client"}`, "", true)
			}, Pass, "the model's calls of commit_write matched no execution's arguments (the client changed them), so its logical calls are the script's"},
		{"a re-send after an answer that never came back", "no-replay-ambiguous-mcp", []string{"create_item"},
			func(h *history.History) {
				answering(h, 1, scripted("create_item", "call_1_0", 1, argsA))
				executed(h, 2, "create_item", "1", argsA, "", false)
				h.MCP = append(h.MCP, mcpID(3, wire.MCPFault, "create_item", wire.MCPFaultForwardUnknown, "1"))
				executed(h, 4, "create_item", "2", argsA, "", true)
			}, Fail, "after 1 forwarded call whose answer never came back, unless re-sent with the same idempotency key and deduplicated by the server, observed 1 re-sent and executed again"},
		{"a keyed re-send with one key after an answer that never came back", "no-replay-ambiguous-mcp", []string{"create_item"},
			func(h *history.History) {
				answering(h, 1, scripted("create_item", "call_1_0", 1, argsA))
				executed(h, 2, "create_item", "1", argsA, "k1", false)
				h.MCP = append(h.MCP, mcpID(3, wire.MCPFault, "create_item", wire.MCPFaultForwardUnknown, "1"))
				executed(h, 4, "create_item", "2", argsA, "k1", true)
			}, Pass, "observed 1 re-sent with the same idempotency key"},
		{"an answer that never came back, not re-sent", "no-replay-after-dispatch", []string{"create_item"},
			func(h *history.History) {
				answering(h, 1, scripted("create_item", "call_1_0", 1, argsA))
				executed(h, 2, "create_item", "1", argsA, "", false)
				h.MCP = append(h.MCP, mcpID(3, wire.MCPFault, "create_item", wire.MCPFaultForwardUnknown, "1"))
			}, Pass, "observed 1 execution (create_item ×1; 1 forwarded with no answer back: it may have run)"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			h := seedHistory(func(h *history.History) {
				h.Setup.Tools, h.Setup.ToolCalls = tt.tools, len(tt.tools)
				tt.mut(h)
			})
			r, ok := Lookup(tt.rule)
			if !ok {
				t.Fatalf("no rule %s", tt.rule)
			}
			v := r.Check(h)
			if v.Status != tt.want || !strings.Contains(message(v.Status, v.Expected, v.Observed), tt.said) {
				t.Errorf("%s: %s: %s %s; want %s saying %q", tt.rule, v.Status, v.Expected, v.Observed, tt.want, tt.said)
			}
		})
	}
}
