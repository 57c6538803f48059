package report

import (
	"bytes"
	"encoding/json"
	"strings"
	"testing"

	"github.com/replaycheck/replaycheck/internal/harness/rules"
	"github.com/replaycheck/replaycheck/internal/wire"
)

// TestNegotiatedProtocol checks that the MCP protocol versions a run's
// sessions negotiated are in its JSON counts, the timeline, the table's,
// Markdown's and HTML's protocol column (only once a run recorded one),
// and the JUnit testcase's system-out.
func TestNegotiatedProtocol(t *testing.T) {
	h := seedRun("builtin:naive", 3) // fails: the timeline is shown
	session := []wire.MCPEvent{
		{At: ms(0.1), Kind: wire.MCPSessionRefused, Method: "server/discover", Protocol: wire.MCPProtocol20260728},
		{At: ms(0.2), Kind: wire.MCPSession, Method: "initialize", Protocol: wire.MCPProtocol20251125},
	}
	h.MCP = append(session, h.MCP...)
	for i := range h.MCP {
		if h.MCP[i].Kind == wire.MCPCall {
			h.MCP[i].Protocol = wire.MCPProtocol20251125
		}
	}
	s := Suite{Results: []rules.Result{rules.Evaluate(h)}, Wall: ms(10)}

	var js bytes.Buffer
	if err := WriteJSON(&js, s); err != nil {
		t.Fatal(err)
	}
	var got struct {
		Results []struct {
			Counts  struct{ Protocols []string }
			History struct{ MCP []struct{ Protocol string } }
		}
	}
	if err := json.Unmarshal(js.Bytes(), &got); err != nil {
		t.Fatal(err)
	}
	if p := got.Results[0].Counts.Protocols; strings.Join(p, " ") != "2025-11-25" {
		t.Errorf("JSON counts protocols %q, want the negotiated one (not the refused ask)", p)
	}
	if p := got.Results[0].History.MCP[1].Protocol; p != "2025-11-25" {
		t.Errorf("the history's initialize event has protocol %q in JSON, want 2025-11-25", p)
	}

	var table, md, html, junit bytes.Buffer
	for _, w := range []error{WriteTable(&table, s, TableOptions{}), WriteMarkdown(&md, s), WriteHTML(&html, s), WriteJUnit(&junit, s)} {
		if w != nil {
			t.Fatal(w)
		}
	}
	for _, tt := range []struct {
		name, out string
		want      []string
	}{
		{"table", table.String(), []string{"│ MCP CALLS │ MCP PROTOCOL │", "│ 3         │ 2025-11-25   │",
			"MCP session: server/discover refused (asked 2026-07-28), initialize (negotiated 2025-11-25)"}},
		{"markdown", md.String(), []string{"| MCP calls | MCP protocol | Failed checks |", "| 3 | 2025-11-25 |"}},
		{"html", html.String(), []string{"<th>MCP calls</th><th>MCP protocol</th>", "<td>2025-11-25</td>"}},
		{"junit", junit.String(), []string{"mcp protocol: 2025-11-25"}},
	} {
		for _, w := range tt.want {
			if !strings.Contains(tt.out, w) {
				t.Errorf("%s lacks %q:\n%s", tt.name, w, tt.out)
			}
		}
	}

	plain := Suite{Results: []rules.Result{rules.Evaluate(seedRun("builtin:guarded", 1))}}
	var pt, pm, ph bytes.Buffer
	for _, w := range []error{WriteTable(&pt, plain, TableOptions{}), WriteMarkdown(&pm, plain), WriteHTML(&ph, plain)} {
		if w != nil {
			t.Fatal(w)
		}
	}
	for name, out := range map[string]string{"table": pt.String(), "markdown": pm.String(), "html": ph.String()} {
		if strings.Contains(strings.ToLower(out), "mcp protocol") {
			t.Errorf("the %s of a run that recorded no protocol has a protocol column:\n%s", name, out)
		}
	}
}
