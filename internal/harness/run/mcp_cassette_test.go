package run

import (
	"net/http/httptest"
	"path/filepath"
	"strings"
	"testing"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/replaycheck/replaycheck/fakes/ledger"
	"github.com/replaycheck/replaycheck/fakes/ledger/mcpcassette"
	"github.com/replaycheck/replaycheck/internal/harness/rules"
	"github.com/replaycheck/replaycheck/internal/harness/scenario"
	"github.com/replaycheck/replaycheck/internal/itemserver"
	"github.com/replaycheck/replaycheck/internal/runtoken"
	"github.com/replaycheck/replaycheck/internal/wire"
)

// TestMCPCassetteSeedOnTheGateway records one create_item call of a run
// through a forwarding ledger into an MCP cassette, stops the server, and
// runs the seed's fault_on scenario with mcp: {cassette: FILE} and no
// server at all: naive's three executions and guarded's one are counted
// from the replay as from the live server (TestForwardSeedOnTheGateway),
// with each run's own token in place of the recorded one.
func TestMCPCassetteSeedOnTheGateway(t *testing.T) {
	path := recordCreateItem(t)
	tests := []struct {
		target     string
		wantWrites int
		want       rules.Status
	}{
		{"builtin:naive", 3, rules.Fail},
		{"builtin:guarded", 1, rules.Pass},
	}
	for _, tt := range tests {
		t.Run(tt.target, func(t *testing.T) {
			hs := runSource(t, `
name: seed chat fault_on, replayed from an MCP cassette
request: {endpoint: chat}
mcp: {cassette: `+path+`}
model: [{call: create_item, arguments: {name: "{{entry}}"}}, {say: done}]
faults:
  upstream: [{on: follow_up, respond: {status: 500}, times: always}]
expect: {rules: [no-replay-after-dispatch]}
`, tt.target, 1)
			h := hs[0]
			if got := len(h.Writes()); got != tt.wantWrites {
				t.Errorf("history has %d writes, want %d", got, tt.wantWrites)
			}
			for _, e := range h.MCP {
				if e.IsFault(wire.MCPFaultCassetteMiss) {
					t.Errorf("a cassette miss: %+v", e)
				}
			}
			vs := rules.Check(h)
			if len(vs) != 1 || vs[0].Status != tt.want {
				t.Fatalf("verdicts %+v: want no-replay-after-dispatch %s", vs, tt.want)
			}
		})
	}
}

// TestMCPCassetteMissIsNoPass: a guarded target whose call the cassette did
// not record (other arguments) runs nothing and gets an MCP error; the rule
// that would pass on its zero executions says unknown, naming the miss.
func TestMCPCassetteMissIsNoPass(t *testing.T) {
	path := recordCreateItem(t)
	hs := runSource(t, `
name: a call the MCP cassette never recorded
request: {endpoint: chat}
mcp: {cassette: `+path+`}
model: [{call: create_item, arguments: {name: "other-{{entry}}"}}, {say: done}]
expect: {rules: [no-replay-after-dispatch, is-error-not-retried]}
`, "builtin:guarded", 1)
	h := hs[0]
	if got := len(h.Writes()); got != 0 {
		t.Errorf("history has %d writes, want 0", got)
	}
	if got := len(rules.Executed(h)); got != 0 {
		t.Errorf("%d executions counted, want 0: a missed call ran nothing", got)
	}
	vs := rules.Check(h)
	if got := rules.Overall(vs); got != rules.Unknown {
		t.Errorf("overall %s, want unknown: %+v", got, vs)
	}
	for _, v := range vs {
		if v.Status == rules.Pass {
			t.Errorf("%s passed on a cassette miss: %s", v.Check, v.Message)
		}
	}
	want := "the MCP cassette had no answer for tools/call create_item {name: other-alpha-" + h.Token
	if !strings.Contains(vs[0].Message, want) {
		t.Errorf("no-replay-after-dispatch: %s\nwant it to contain %q", vs[0].Message, want)
	}
}

// recordCreateItem records create_item {name: {{entry}}} of a run through a
// ledger forwarding to an item server, at the run's own address, and
// returns the cassette's path; the server is gone when it returns.
func recordCreateItem(t *testing.T) string {
	t.Helper()
	_, serverURL, stop := itemserver.ServeHTTPStoppable(t)
	defer stop()
	path := filepath.Join(t.TempDir(), "mcp", "session.jsonl")
	rec, err := mcpcassette.Create(path)
	if err != nil {
		t.Fatal(err)
	}
	l, err := ledger.New(ledger.Config{Forward: &ledger.Forward{URL: serverURL, Record: rec}})
	if err != nil {
		t.Fatal(err)
	}
	token := runtoken.Derive("recorded")
	ls := httptest.NewServer(runtoken.Handler(token, l))
	cs, err := mcp.NewClient(&mcp.Implementation{Name: "recorder", Version: "1"}, nil).
		Connect(ctxFor(t), &mcp.StreamableClientTransport{Endpoint: ls.URL}, nil)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := cs.CallTool(ctxFor(t), &mcp.CallToolParams{Name: "create_item", Arguments: map[string]any{"name": scenario.Entry(token)}}); err != nil {
		t.Fatal(err)
	}
	_ = cs.Close()
	ls.Close()
	if err := l.Close(); err != nil {
		t.Fatal(err)
	}
	if err := rec.Close(); err != nil {
		t.Fatal(err)
	}
	return path
}
