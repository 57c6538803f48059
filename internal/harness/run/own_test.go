package run

import (
	"fmt"
	"net/http"
	"os"
	"regexp"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/replaycheck/replaycheck/internal/fakepair"
	"github.com/replaycheck/replaycheck/internal/harness/history"
	"github.com/replaycheck/replaycheck/internal/harness/scenario"
	"github.com/replaycheck/replaycheck/internal/harness/target"
	"github.com/replaycheck/replaycheck/internal/harness/targetfile"
	"github.com/replaycheck/replaycheck/internal/wire"
)

// agentScenarios run an agent with its own prompt: with no fault, and with
// every follow-up failing.
const agentScenarios = `
- name: agent books a sale
  request: {endpoint: chat}
  expect: {writes: 1, client: {exit: zero}}
- name: agent books another sale
  request: {endpoint: chat}
  expect: {writes: 1, client: {exit: zero}}
- name: agent follow-up fails
  request: {endpoint: chat}
  faults:
    upstream: [{on: follow_up, respond: {status: 500}, times: always}]
    mcp: [{tool: read_ledger, delay: 1ms}]
  expect: {writes: 1, client: {exit: nonzero}}
- name: agent fault that cannot fire
  request: {endpoint: chat}
  faults:
    upstream: [{on: initial, endpoint: messages, respond: {status: 503}}]
  expect: {writes: 1, client: {exit: zero}}
`

// TestClientOwnAddresses runs an agent that never sends the run token (its
// own prompt, its own tool name, read_ledger without arguments), directly
// and in front of a proxy (via), several runs at once: each run gets its own
// addresses, so every model request, tool call and session step is its run's
// and nothing is unattributed; each run has a fresh {{run_dir}}, removed
// afterwards; armed faults say whether they fired; the history records what
// the client called.
func TestClientOwnAddresses(t *testing.T) {
	ss, errs := scenario.Parse("agents.yaml", []byte(agentScenarios))
	if len(errs) > 0 {
		t.Fatal(errs)
	}
	const agent = `
kind: client
name: %s
command: [%q]
env: {%s: agent, AGENT_MCP_URL: "{{mcp_url}}", AGENT_HOME: "{{run_dir}}"}
timeout: 20s
%s`
	direct, _ := writeTarget(t, fmt.Sprintf(agent, "agent", self(t), helperEnv, ""), nil)
	via, _ := writeTarget(t, fmt.Sprintf(agent, "agent-via-gateway", self(t), helperEnv, "via: builtin:guarded"), nil)
	hs, err := Run(ctxFor(t), ss, Options{Targets: []target.Target{direct, via}, Parallel: 8})
	if err != nil {
		t.Fatalf("Run: %v", err)
	}
	if len(hs) != 8 {
		t.Fatalf("%d histories, want 8", len(hs))
	}
	for _, h := range hs {
		t.Run(h.Scenario+" on "+h.Target, func(t *testing.T) {
			if h.Error != "" {
				t.Fatalf("run error: %s", h.Error)
			}
			c := h.Requests[0].Client
			wantExit := 0
			if h.Scenario == "agent follow-up fails" {
				wantExit = 1
			}
			if c.Exit != wantExit {
				t.Errorf("exit %d, want %d; stdout %q stderr %q", c.Exit, wantExit, c.Stdout, c.Stderr)
			}
			if n := len(h.Writes()); n != 1 {
				t.Errorf("%d writes, want 1", n)
			}
			if n := len(h.Calls("read_ledger")); n != 1 {
				t.Errorf("%d read_ledger calls, want 1 (read-only calls count too)", n)
			}
			// The gateway retries a failed model call on its own (it ran no
			// tool); every attempt is this run's.
			wantFollowUps := 1
			if h.Target == "agent-via-gateway" && h.Scenario == "agent follow-up fails" {
				wantFollowUps = 3
			}
			if len(h.UpstreamOf("initial")) != 1 || len(h.UpstreamOf("follow_up")) != wantFollowUps {
				t.Errorf("upstream %+v, want one initial and %d follow-ups", h.Upstream, wantFollowUps)
			}
			if got := h.Requests[0].Paths; !slices.Equal(got, []string{"/v1/chat/completions"}) {
				t.Errorf("client paths %q, want the chat path it called", got)
			}
			if h.Requests[0].Endpoint != "" || h.Requests[0].Path != "" {
				t.Errorf("client exchange claims endpoint %q path %q; the client chose its own", h.Requests[0].Endpoint, h.Requests[0].Path)
			}
			var session []string
			for _, e := range h.MCPOf(wire.MCPSession, "") {
				session = append(session, e.Method)
			}
			// The example agent's go-sdk client speaks 2026-07-28 (server/discover,
			// then stateless requests) to the ledger, which offers it.
			if !slices.Contains(session, "server/discover") && !slices.Contains(session, "initialize") {
				t.Errorf("session events %q, want the client's server/discover (or initialize)", session)
			}
			if h.Unattributed != nil {
				t.Errorf("unattributed traffic %+v, want none", h.Unattributed)
			}
			home := regexp.MustCompile(`home=(\S+)`).FindStringSubmatch(c.Stdout)
			if home == nil {
				t.Fatalf("agent printed no home: %q", c.Stdout)
			}
			if _, err := os.Stat(home[1]); !os.IsNotExist(err) {
				t.Errorf("run dir %s still there after the run (stat: %v)", home[1], err)
			}
			var fired []int
			for _, f := range h.Faults {
				fired = append(fired, f.Fired)
			}
			want := map[string][]int{"agent follow-up fails": {wantFollowUps, 1}, "agent fault that cannot fire": {0}}[h.Scenario]
			if !slices.Equal(fired, want) {
				t.Errorf("faults fired %v, want %v: %+v", fired, want, h.Faults)
			}
		})
	}
}

// TestKeepRunDirs: with KeepRunDirs the client's scratch directory stays,
// holding what the client left, and the history names it.
func TestKeepRunDirs(t *testing.T) {
	ss, errs := scenario.Parse("agents.yaml", []byte(agentScenarios))
	if len(errs) > 0 {
		t.Fatal(errs)
	}
	src := fmt.Sprintf("kind: client\ncommand: [%q]\nenv: {%s: agent, AGENT_MCP_URL: \"{{mcp_url}}\", AGENT_HOME: \"{{run_dir}}\"}\n", self(t), helperEnv)
	tg, err := targetfile.Parse(t.TempDir()+"/agent.yaml", []byte(src), targetfile.Options{Getenv: testEnv, KeepRunDirs: true})
	if err != nil {
		t.Fatal(err)
	}
	hs, err := Run(ctxFor(t), ss[:1], Options{Targets: []target.Target{tg}})
	if err != nil {
		t.Fatalf("Run: %v", err)
	}
	dir := hs[0].Requests[0].Client.RunDir
	if dir == "" {
		t.Fatalf("no run dir in the history: %+v", hs[0].Requests[0].Client)
	}
	t.Cleanup(func() { os.RemoveAll(dir) })
	if _, err := os.Stat(dir + "/agent-was-here"); err != nil {
		t.Errorf("kept run dir lacks what the client left: %v", err)
	}
}

// TestUnattributed: a model request and a tool call that carry no run token
// and arrive at the shared addresses are counted for the window they came
// in, with samples, and for no other window.
func TestUnattributed(t *testing.T) {
	env, err := startFakes(fakepair.Config{}, Options{Now: time.Now}, target.FakeAddrs{})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { env.Close() })
	before := time.Now()
	body := `{"model":"m","messages":[{"role":"user","content":"hello"}]}`
	resp, err := http.Post(env.UpstreamURL()+"/chat/completions", "application/json", strings.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	c := mcp.NewClient(&mcp.Implementation{Name: "t", Version: "1"}, nil)
	cs, err := c.Connect(ctxFor(t), &mcp.StreamableClientTransport{Endpoint: env.MCPURL()}, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer cs.Close()
	if _, err := cs.CallTool(ctxFor(t), &mcp.CallToolParams{Name: "read_ledger"}); err != nil {
		t.Fatal(err)
	}
	got := unattributed(env, before, time.Now())
	want := &history.Unattributed{Upstream: 1, MCP: 1, Samples: []string{"POST /v1/chat/completions initial forwarded", "tools/call read_ledger"}}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("unattributed (-want +got):\n%s", diff)
	}
	if u := unattributed(env, time.Now(), time.Now().Add(time.Hour)); u != nil {
		t.Errorf("a later window has %+v, want nil", u)
	}
}
