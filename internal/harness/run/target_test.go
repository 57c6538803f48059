package run

import (
	"context"
	"encoding/json"
	"fmt"
	"net"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/replaycheck/replaycheck/fakes/fault"
	"github.com/replaycheck/replaycheck/fakes/upstream"
	"github.com/replaycheck/replaycheck/internal/harness/history"
	"github.com/replaycheck/replaycheck/internal/harness/rules"
	"github.com/replaycheck/replaycheck/internal/harness/scenario"
	"github.com/replaycheck/replaycheck/internal/harness/target"
	"github.com/replaycheck/replaycheck/internal/harness/targetfile"
)

func loadSeed(t *testing.T, names ...string) []*scenario.Scenario {
	t.Helper()
	var paths []string
	for _, n := range names {
		paths = append(paths, "../../../scenarios/seed/"+n+".yaml")
	}
	ss, err := scenario.Load(paths...)
	if err != nil {
		t.Fatal(err)
	}
	return ss
}

// TestProxyTargetRunsSeed starts the helper proxy from a target file with a
// rendered config: the seed passes guarded (the stream-drop scenario gets a
// process of its own with the fallback rendered in), the naive mode gives the
// Before counts, the master key appears nowhere, and the rendered configs are
// removed.
func TestProxyTargetRunsSeed(t *testing.T) {
	ss := loadSeed(t, "fault-on-chat", "no-fault-responses", "stream-drop-fallback", "guardrail-fault-once-messages")
	guarded, dir := helperProxyTarget(t, "guarded")
	naive, _ := helperProxyTarget(t, "naive")
	hs, err := Run(ctxFor(t), ss, Options{Targets: []target.Target{guarded, naive}, Parallel: 4})
	if err != nil {
		t.Fatalf("Run: %v", err)
	}
	got := map[string]string{}
	for _, h := range hs {
		r := rules.Evaluate(h)
		got[h.Scenario+" on "+h.Target] = fmt.Sprintf("%s writes=%d", r.Verdict, r.Counts.Writes)
	}
	want := map[string]string{
		"seed chat fault_on on helper-guarded":                  "pass writes=1",
		"seed chat fault_on on helper-naive":                    "fail writes=3",
		"seed responses no fault on helper-guarded":             "pass writes=1",
		"seed responses no fault on helper-naive":               "pass writes=1",
		"seed chat stream drop with fallback on helper-guarded": "pass writes=1",
		"seed chat stream drop with fallback on helper-naive":   "fail writes=2",
		"seed messages guardrail fault_once on helper-guarded":  "pass writes=0",
		"seed messages guardrail fault_once on helper-naive":    "pass writes=0",
	}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("verdicts (-want +got):\n%s", diff)
	}
	b, err := json.Marshal(hs)
	if err != nil {
		t.Fatal(err)
	}
	if strings.Contains(string(b), testKey) {
		t.Errorf("the master key appears in the histories")
	}
	left, _ := filepath.Glob(filepath.Join(dir, ".replaycheck-*"))
	if len(left) > 0 {
		t.Errorf("rendered configs left behind: %v", left)
	}
}

// TestProxyStartFaults covers a proxy that cannot start: each error names
// the cause, shows the last output lines (secrets masked), and leaves no
// process behind.
func TestProxyStartFaults(t *testing.T) {
	busy, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer busy.Close()
	tests := []struct {
		name    string
		url     string
		file    string
		wantErr []string
	}{
		{
			name:    "command not found",
			file:    "start: {command: [/nonexistent/proxy-binary]}",
			wantErr: []string{"starting target t", `command "/nonexistent/proxy-binary" not found`},
		},
		{
			name:    "exits during start",
			file:    fmt.Sprintf("start: {command: [%q], env: {%s: exit-early}}", self(t), helperEnv),
			wantErr: []string{"the process exited during start (exited with code 3)", "fatal: cannot parse the config", "pid="},
		},
		{
			name:    "never ready",
			file:    fmt.Sprintf("start: {command: [%q], env: {%s: never-ready, HELPER_SECRET: \"${HELPER_SECRET}\"}, ready: {timeout: 2s}, stop_grace: 100ms}", self(t), helperEnv),
			wantErr: []string{"not ready: http://127.0.0.1:", "gave no HTTP answer within 2s", "warming up, secret ***"},
		},
		{
			name:    "working directory missing",
			file:    fmt.Sprintf("start: {command: [%q], dir: ./no-such-dir, env: {%s: never-ready}}", self(t), helperEnv),
			wantErr: []string{"starting target t: working directory ", "no-such-dir (start.dir) does not exist"},
		},
		{
			name:    "proxy port already taken",
			url:     "http://" + busy.Addr().String(),
			file:    fmt.Sprintf("start: {command: [%q], env: {%s: never-ready}}", self(t), helperEnv),
			wantErr: []string{"its address " + busy.Addr().String() + " is already taken by another process"},
		},
		{
			name:    "fixed fake address busy",
			file:    fmt.Sprintf("fakes: {upstream_addr: %q, mcp_addr: \"127.0.0.1:0\"}\nstart: {command: [%q], env: {%s: never-ready}}", busy.Addr(), self(t), helperEnv),
			wantErr: []string{"starting the upstream fake: address " + busy.Addr().String() + " is already in use"},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			url := tt.url
			if url == "" {
				url = "http://127.0.0.1:{{port}}"
			}
			src := "kind: proxy\nname: t\nurl: " + url + "\n" + tt.file + "\n"
			tg, _ := writeTarget(t, src, nil)
			_, err := Run(ctxFor(t), loadSeed(t, "no-fault-chat"), Options{Targets: []target.Target{tg}})
			if err == nil {
				t.Fatal("Run: no error")
			}
			for _, w := range tt.wantErr {
				if !strings.Contains(err.Error(), w) {
					t.Errorf("error lacks %q:\n%v", w, err)
				}
			}
			if strings.Contains(err.Error(), "hunter2-secret") {
				t.Errorf("error shows a secret:\n%v", err)
			}
			assertGone(t, pidsIn(err.Error()))
		})
	}
}

// clientScenarios are scenarios for the helper client.
const clientScenarios = `
- name: client ok
  request: {endpoint: chat, prompt: "say done {{entry}}"}
  expect: {upstream: {initial: 0}, client: {exit: zero, stdout_contains: done}}
- name: client exit 3
  request: {endpoint: chat, prompt: "exit=3 {{entry}}"}
  expect: {client: {exit: 3, stderr_contains: failing as asked}}
- name: client hangs
  request: {endpoint: chat, prompt: "hang {{entry}}"}
  expect: {client: {exit: zero}}
- name: not for clients
  request: {endpoint: chat}
  expect: {status: 200}
`

// TestClientTarget runs the helper client: its environment points at the
// fakes with dummy keys, exit codes and output are checked, a client past
// its deadline is killed with its group and fails only its scenario, and
// client-only scenarios skip the builtin target.
func TestClientTarget(t *testing.T) {
	ss, errs := scenario.Parse("clients.yaml", []byte(clientScenarios))
	if len(errs) > 0 {
		t.Fatal(errs)
	}
	tg, _ := writeTarget(t, fmt.Sprintf(`
kind: client
name: helper-client
command: [%q]
env: {%s: client, CLIENT_SECRET: "${TEST_KEY}", CLIENT_MODE: "tool at {{mcp_url}}"}
timeout: 3s
`, self(t), helperEnv), nil)
	builtin, err := target.ParseTarget("builtin:guarded")
	if err != nil {
		t.Fatal(err)
	}
	hs, err := Run(ctxFor(t), ss, Options{Targets: []target.Target{tg, builtin}, Parallel: 4})
	if err != nil {
		t.Fatalf("Run: %v", err)
	}
	got := map[string]rules.Status{}
	byName := map[string]int{}
	for i, h := range hs {
		got[h.Scenario+" on "+h.Target] = rules.Evaluate(h).Verdict
		byName[h.Scenario+" on "+h.Target] = i
	}
	want := map[string]rules.Status{
		"client ok on helper-client":         rules.Pass,
		"client exit 3 on helper-client":     rules.Pass,
		"client hangs on helper-client":      rules.Fail,
		"not for clients on builtin:guarded": rules.Pass,
	}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Fatalf("verdicts (-want +got):\n%s", diff)
	}
	ok := hs[byName["client ok on helper-client"]]
	out := ok.Requests[0].Client.Stdout
	for _, re := range []string{
		`OPENAI_BASE_URL=http://127\.0\.0\.1:\d+/v1\n`,
		`ANTHROPIC_BASE_URL=http://127\.0\.0\.1:\d+\n`,
		`OPENAI_API_KEY=` + target.DummyOpenAIKey + `\n`,
		`ANTHROPIC_API_KEY=` + target.DummyAnthropicKey + `\n`,
		`REPLAYCHECK_MCP_URL=http://127\.0\.0\.1:\d+/mcp\n`,
		`REPLAYCHECK_TOKEN=` + ok.Token + `\n`,
		`CLIENT_SECRET=\*\*\*\n`,
		`CLIENT_MODE=tool at http://127\.0\.0\.1:\d+/mcp\n`,
		`prompt=say done ` + ok.Entry + `\n`,
	} {
		if !regexp.MustCompile(re).MatchString(out) {
			t.Errorf("client stdout lacks %s:\n%s", re, out)
		}
	}
	hang := hs[byName["client hangs on helper-client"]]
	for _, w := range []string{"client helper-client did not exit before its 3s timeout; its process group was killed", "waiting for a model that never answers"} {
		if !strings.Contains(hang.Error, w) {
			t.Errorf("hang error lacks %q: %q", w, hang.Error)
		}
	}
	if !hang.Requests[0].Client.Killed {
		t.Errorf("hang not marked killed: %+v", hang.Requests[0].Client)
	}
	assertGone(t, pidsIn(hang.Requests[0].Client.Stdout))
	if n := len(pidsIn(hang.Requests[0].Client.Stdout)); n != 2 {
		t.Errorf("want the client's and its child's pid in its output, got %d", n)
	}
}

// TestFixedFakes runs a proxy the harness does not start, configured with
// fixed fake addresses: its shared scenarios run on fakes at those
// addresses, then its isolated ones one at a time on fresh fakes there.
func TestFixedFakes(t *testing.T) {
	up, mcp := freeAddr(t), freeAddr(t)
	gw, err := target.ParseTarget("builtin:guarded")
	if err != nil {
		t.Fatal(err)
	}
	inst, err := gw.Start(ctxFor(t), target.Fakes{Upstream: "http://" + up + "/v1", MCP: "http://" + mcp + "/mcp"}, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer inst.Close()
	url, _ := inst.(target.Reachable).BaseURL()
	tg, _ := writeTarget(t, fmt.Sprintf("kind: proxy\nname: fixed\nurl: %s\nfakes: {upstream_addr: %q, mcp_addr: %q}\n", url, up, mcp), nil)
	ss := loadSeed(t, "fault-on-chat", "no-fault-messages")
	iso, err := scenario.Load("../../../scenarios/mcp/tool-errors.yaml")
	if err != nil {
		t.Fatal(err)
	}
	hs, err := Run(ctxFor(t), append(ss, iso[0]), Options{Targets: []target.Target{tg}, Parallel: 4})
	if err != nil {
		t.Fatalf("Run: %v", err)
	}
	for _, h := range hs {
		if r := rules.Evaluate(h); r.Verdict != rules.Pass {
			t.Errorf("%s: %s %v %s", h.Scenario, r.Verdict, rules.Failed(r.Verdicts), h.Error)
		}
	}
}
func freeAddr(t *testing.T) string {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	return ln.Addr().String()
}

// TestAddRetryHint adds hints to error answers that have none.
func TestAddRetryHint(t *testing.T) {
	faults := []upstream.Fault{
		{On: "follow_up", Respond: &upstream.Respond{Status: 500}},
		{On: "initial", Respond: &upstream.Respond{Status: 429, Headers: map[string]string{"Retry-After": "2"}}},
		{On: "follow_up", Drop: &upstream.Drop{After: "headers"}},
	}
	if !addRetryHint(faults, time.Millisecond) {
		t.Fatal("no hint added")
	}
	// Retry-After is whole seconds (RFC 9110 delay-seconds), rounded up so
	// that it never asks for less than the hint; retry-after-ms is exact.
	want := []map[string]string{{"retry-after-ms": "1", "Retry-After": "1"}, {"Retry-After": "2"}}
	for i, w := range want {
		if diff := cmp.Diff(w, faults[i].Respond.Headers); diff != "" {
			t.Errorf("fault %d headers (-want +got):\n%s", i, diff)
		}
	}
	long := []upstream.Fault{{On: "follow_up", Respond: &upstream.Respond{Status: 503}}}
	addRetryHint(long, 2500*time.Millisecond)
	if diff := cmp.Diff(map[string]string{"retry-after-ms": "2500", "Retry-After": "3"}, long[0].Respond.Headers); diff != "" {
		t.Errorf("2.5s hint headers (-want +got):\n%s", diff)
	}
	if addRetryHint(faults[1:2], time.Millisecond) {
		t.Error("a fault with its own Retry-After got a hint")
	}
	ss, errs := scenario.Parse("h.yaml", []byte(`
name: hinted
retry_after_hint: 1ms
request: {endpoint: chat}
faults: {upstream: [{on: follow_up, respond: {status: 500}, times: once}]}
expect: {writes: 1}
`))
	if len(errs) > 0 {
		t.Fatal(errs)
	}
	gw, _ := target.ParseTarget("builtin:guarded")
	hs, err := Run(ctxFor(t), ss, Options{Targets: []target.Target{gw}})
	if err != nil {
		t.Fatal(err)
	}
	if len(hs[0].Notes) != 1 || !strings.Contains(hs[0].Notes[0], "retry_after_hint 1ms") {
		t.Errorf("notes: %q", hs[0].Notes)
	}
	var hinted bool
	for _, u := range hs[0].Upstream {
		for k, v := range u.Headers {
			hinted = hinted || strings.EqualFold(k, "retry-after-ms") && v == "1"
		}
	}
	if !hinted {
		t.Errorf("no upstream answer carried the hint: %+v", hs[0].Upstream)
	}
	_ = fault.Duration(0)
}

// TestProxyStoppedOnCancel cancels the run (Ctrl-C) while a scenario waits
// on a slow model: Run returns at once and the proxy's process is gone.
func TestProxyStoppedOnCancel(t *testing.T) {
	ss, errs := scenario.Parse("c.yaml", []byte(`
- name: quick
  request: {endpoint: chat}
  expect: {writes: 1}
- name: slow
  request: {endpoint: chat}
  faults: {upstream: [{on: follow_up, delay: 1m}]}
  expect: {writes: 1}
`))
	if len(errs) > 0 {
		t.Fatal(errs)
	}
	tg, _ := helperProxyTarget(t, "guarded")
	ctx, cancel := context.WithCancel(ctxFor(t))
	defer cancel()
	var pids []int
	hs, err := Run(ctx, ss, Options{Targets: []target.Target{tg}, Parallel: 2, OnHistory: func(_ int, h *history.History) {
		pids = append(pids, pidsIn(strings.Join(h.TargetOutput, "\n"))...)
		cancel()
	}})
	if err == nil || !strings.Contains(err.Error(), "run interrupted") {
		t.Errorf("Run: %v, want interrupted", err)
	}
	if len(pids) == 0 {
		t.Fatalf("no proxy pid in the first history's target output: %+v", hs)
	}
	assertGone(t, pids)
}

// TestProxyAnswerSecretsMasked sends the seed through a proxy that echoes
// the Authorization header in its answer (as some proxies' auth errors do):
// the header's value must not reach the history.
func TestProxyAnswerSecretsMasked(t *testing.T) {
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "application/json")
		w.WriteHeader(http.StatusUnauthorized)
		fmt.Fprintf(w, `{"error": {"message": "invalid key: %s"}}`, r.Header.Get("Authorization"))
	}))
	t.Cleanup(srv.Close)
	tg, _ := writeTarget(t, fmt.Sprintf("kind: proxy\nname: echo\nurl: %s\nheaders: {Authorization: \"Bearer ${TEST_KEY}\"}\nfakes: {upstream_addr: %q, mcp_addr: %q}\n",
		srv.URL, freeAddr(t), freeAddr(t)), nil)
	hs, err := Run(ctxFor(t), loadSeed(t, "no-fault-chat"), Options{Targets: []target.Target{tg}})
	if err != nil {
		t.Fatalf("Run: %v", err)
	}
	b, err := json.Marshal(hs)
	if err != nil {
		t.Fatal(err)
	}
	if hs[0].Requests[0].Status != http.StatusUnauthorized || !strings.Contains(hs[0].Requests[0].Body, "invalid key: ***") {
		t.Errorf("exchange: %+v", hs[0].Requests[0])
	}
	if strings.Contains(string(b), testKey) {
		t.Errorf("the header's value appears in the history:\n%s", b)
	}
}

// TestClientStartFaults covers a client target that cannot run at all: the
// run fails (exit 3) with the cause named, instead of every scenario
// failing with a misleading error.
func TestClientStartFaults(t *testing.T) {
	tests := []struct {
		name    string
		file    string
		wantErr string
	}{
		{name: "command not found", file: "command: [no-such-agent-binary]", wantErr: `starting client target c: command "no-such-agent-binary" not found in PATH`},
		{name: "working directory missing", file: "command: [sh, -c, 'echo done']\ndir: ./no-such-dir", wantErr: "starting client target c: working directory "},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			tg, _ := writeTarget(t, "kind: client\nname: c\n"+tt.file+"\n", nil)
			ss, errs := scenario.Parse("c.yaml", []byte("name: c\nexpect: {client: {exit: zero}}\n"))
			if len(errs) > 0 {
				t.Fatal(errs)
			}
			_, err := Run(ctxFor(t), ss, Options{Targets: []target.Target{tg}})
			if err == nil || !strings.Contains(err.Error(), tt.wantErr) {
				t.Errorf("Run: %v, want an error containing %q", err, tt.wantErr)
			}
		})
	}
}

// TestSecretNamedReferencesMasked: a ${NAME} whose name says it is a secret
// (KEY, TOKEN, SECRET, PASSWORD, …) is masked wherever the file uses it, here
// in a client's command; other references (a mode, a path) are shown.
func TestSecretNamedReferencesMasked(t *testing.T) {
	ss, errs := scenario.Parse("c.yaml", []byte("name: echo\nrequest: {endpoint: chat}\nexpect: {client: {exit: zero}}\n"))
	if len(errs) > 0 {
		t.Fatal(errs)
	}
	getenv := func(k string) string {
		return map[string]string{"MY_API_KEY": "sk-in-argv-secret-8080", "RUN_MODE": "naive-mode"}[k]
	}
	dir := t.TempDir()
	path := filepath.Join(dir, "target.yaml")
	src := "kind: client\nname: c\ncommand: [sh, -c, 'echo key=${MY_API_KEY} mode=${RUN_MODE}; echo key=${MY_API_KEY} >&2']\n"
	if err := os.WriteFile(path, []byte(src), 0o644); err != nil {
		t.Fatal(err)
	}
	tg, err := targetfile.Load(path, targetfile.Options{Getenv: getenv})
	if err != nil {
		t.Fatal(err)
	}
	hs, err := Run(ctxFor(t), ss, Options{Targets: []target.Target{tg}})
	if err != nil {
		t.Fatalf("Run: %v", err)
	}
	run := hs[0].Requests[0].Client
	if run.Stdout != "key=*** mode=naive-mode\n" || run.Stderr != "key=***\n" {
		t.Errorf("stdout %q, stderr %q: want the key masked and the mode shown", run.Stdout, run.Stderr)
	}
}
