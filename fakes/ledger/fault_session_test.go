package ledger

import (
	"context"
	"testing"

	"github.com/google/go-cmp/cmp"
	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/replaycheck/replaycheck/internal/wire"
)

// TestSessionStepFaults refuses session steps (initialize, tools/list) with
// fail_before_execute and judges what the MCP SDK's own client sees: a
// refused initialize fails Connect and a later Connect works; a refused
// tools/list fails that ListTools and the session goes on. It checks the
// exact counts of requests each fault matched and fired on, the refused
// steps' events, and that method faults and tools/call faults stay apart.
func TestSessionStepFaults(t *testing.T) {
	type report struct{ Matched, Fired int }
	tests := []struct {
		name         string
		faults       []string
		global       bool   // armed with token "", the client at the shared address
		wantConnects int    // failed Connects before one worked (at most 3 tries)
		wantLists    []bool // whether ListTools 1 and 2 failed
		wantCallErr  bool   // whether the commit_write call failed
		wantWrites   int
		wantRefused  []string // methods of the wire.MCPSessionRefused events
		wantReports  []report
	}{
		{name: "initialize refused once", faults: []string{"{method: initialize, fail_before_execute: {}, times: once}"},
			wantConnects: 1, wantLists: []bool{false, false}, wantWrites: 1,
			wantRefused: []string{"initialize"}, wantReports: []report{{2, 1}}},
		{name: "initialize reset once", faults: []string{"{method: initialize, fail_before_execute: {reset: true}, times: once}"},
			wantConnects: 1, wantLists: []bool{false, false}, wantWrites: 1,
			wantRefused: []string{"initialize"}, wantReports: []report{{2, 1}}},
		{name: "initialize refused twice", faults: []string{"{method: initialize, fail_before_execute: {status: 500}, times: 2}"},
			wantConnects: 2, wantLists: []bool{false, false}, wantWrites: 1,
			wantRefused: []string{"initialize", "initialize"}, wantReports: []report{{3, 2}}},
		{name: "tools/list refused once", faults: []string{"{method: tools/list, fail_before_execute: {status: 429}, times: once}"},
			wantLists: []bool{true, false}, wantWrites: 1,
			wantRefused: []string{"tools/list"}, wantReports: []report{{2, 1}}},
		{name: "tools/list reset on the second", faults: []string{"{method: tools/list, fail_before_execute: {reset: true}, times: {nth: 2}}"},
			wantLists: []bool{false, true}, wantWrites: 1,
			wantRefused: []string{"tools/list"}, wantReports: []report{{2, 1}}},
		{name: "tools/list refused always, tools/call untouched", faults: []string{"{method: tools/list, fail_before_execute: {}}"},
			wantLists: []bool{true, true}, wantWrites: 1,
			wantRefused: []string{"tools/list", "tools/list"}, wantReports: []report{{2, 2}}},
		{name: "tools/call fault leaves session steps alone", faults: []string{"{fail_before_execute: {}}"},
			wantLists: []bool{false, false}, wantCallErr: true,
			wantReports: []report{{1, 1}}},
		{name: "global initialize fault at the shared address", global: true, faults: []string{"{method: initialize, fail_before_execute: {}, times: once}"},
			wantConnects: 1, wantLists: []bool{false, false}, wantWrites: 1,
			wantRefused: []string{"initialize"}, wantReports: []report{{2, 1}}},
	}
	for _, m := range modes {
		for _, tt := range tests {
			t.Run(m.name+"/"+tt.name, func(t *testing.T) {
				s, shared := newLedger(t, Config{Stateless: m.stateless})
				const tok = "rc0000000s01"
				armed, url := tok, ownAddress(t, s, tok)
				if tt.global {
					armed, url = "", shared
				}
				mustArm(t, s, armed, tt.faults...)
				if m.protocol == "default" && tt.wantRefused != nil && tt.wantRefused[0] == MethodInitialize {
					// The SDK's client speaks 2026-07-28 to a server that
					// serves it (server/discover) and then sends no
					// initialize at all: there is nothing to refuse.
					tt.wantConnects, tt.wantRefused, tt.wantReports = 0, nil, []report{{0, 0}}
				}

				var cs *mcp.ClientSession
				failed := 0
				for cs == nil && failed < 3 {
					ctx, cancel := contextT()
					c := mcp.NewClient(&mcp.Implementation{Name: "ledger-test", Version: "1"}, nil)
					got, err := c.Connect(ctx, &mcp.StreamableClientTransport{Endpoint: url, MaxRetries: -1}, sessionOptions(m.protocol))
					cancel()
					if err != nil {
						failed++
						continue
					}
					cs = got
					t.Cleanup(func() { _ = cs.Close() })
				}
				if failed != tt.wantConnects || cs == nil {
					t.Fatalf("failed Connects = %d, want %d (session %v)", failed, tt.wantConnects, cs != nil)
				}
				var lists []bool
				for range 2 {
					ctx, cancel := contextT()
					res, err := cs.ListTools(ctx, nil)
					cancel()
					lists = append(lists, err != nil)
					if err == nil && len(res.Tools) != len(toolNames()) {
						t.Errorf("ListTools gave %d tools, want %d", len(res.Tools), len(toolNames()))
					}
				}
				if diff := cmp.Diff(tt.wantLists, lists); diff != "" {
					t.Errorf("failed ListTools (-want +got):\n%s", diff)
				}
				res, err := cs.CallTool(context.Background(), &mcp.CallToolParams{Name: ToolCommitWrite, Arguments: map[string]any{"entry": "e " + tok}})
				if gotErr := err != nil || res.IsError; gotErr != tt.wantCallErr {
					t.Errorf("commit_write failed = %v (%v), want %v", gotErr, err, tt.wantCallErr)
				}

				c := s.Counts(tok)
				if c.Writes != tt.wantWrites || c.CallsTotal() != 1 {
					t.Errorf("Counts(%s) = %+v, want %d write of 1 call", tok, c, tt.wantWrites)
				}
				var refused []string
				for _, e := range s.Events(armed) {
					if e.Kind == wire.MCPSessionRefused {
						refused = append(refused, e.Method)
					}
				}
				if diff := cmp.Diff(tt.wantRefused, refused); diff != "" {
					t.Errorf("refused session steps (-want +got):\n%s", diff)
				}
				var reports []report
				for _, r := range s.FaultReports(armed) {
					reports = append(reports, report{r.Matched, r.Fired})
				}
				if diff := cmp.Diff(tt.wantReports, reports); diff != "" {
					t.Errorf("fault reports {matched, fired} (-want +got):\n%s", diff)
				}
			})
		}
	}
}
