package run

import (
	"context"
	"encoding/json"
	"fmt"
	"maps"
	"net"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/replaycheck/replaycheck/fakes/fault"
	"github.com/replaycheck/replaycheck/fakes/upstream"
	"github.com/replaycheck/replaycheck/harness/history"
	"github.com/replaycheck/replaycheck/harness/rules"
	"github.com/replaycheck/replaycheck/harness/scenario"
)

// testKey is the master key of the helper proxy: it must never appear in a
// history, an error or captured output.
const testKey = "sk-test-secret-4711"

func testEnv(k string) string {
	return map[string]string{"TEST_KEY": testKey, "HELPER_SECRET": "hunter2-secret"}[k]
}

// writeTarget writes a target file (and extra files) into a new directory
// and loads it.
func writeTarget(t *testing.T, src string, extra map[string]string) (Target, string) {
	t.Helper()
	dir := t.TempDir()
	for name, body := range extra {
		if err := os.WriteFile(filepath.Join(dir, name), []byte(body), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	path := filepath.Join(dir, "target.yaml")
	if err := os.WriteFile(path, []byte(src), 0o644); err != nil {
		t.Fatal(err)
	}
	tg, err := LoadTargetFile(path, TargetFileOptions{Getenv: testEnv, Replaycheck: "/bin/false"})
	if err != nil {
		t.Fatalf("loading the target file: %v", err)
	}
	return tg, dir
}

func self(t *testing.T) string {
	t.Helper()
	exe, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	return exe
}

// helperProxyTarget is a proxy target started as the test binary's proxy
// helper with a rendered JSON config in mode.
func helperProxyTarget(t *testing.T, mode string) (Target, string) {
	return writeTarget(t, fmt.Sprintf(`
kind: proxy
name: helper-%[2]s
url: http://127.0.0.1:{{port}}
headers: {Authorization: "Bearer ${TEST_KEY}"}
num_retries: 2
start:
  command: [%[1]q, --config, "{{config}}", --port, "{{port}}"]
  config: proxy.json.tmpl
  env: {%[3]s: proxy}
  ready: {timeout: 20s}
  stop_grace: 5s
`, self(t), mode, helperEnv), map[string]string{"proxy.json.tmpl": `{"Upstream": "{{upstream_url}}", "MCP": "{{mcp_url}}", "Mode": "` + mode + `",
 "Key": "` + testKey + `", "Fallbacks": { {{- range $f, $t := fallbacks}}"{{$f}}": "{{$t}}"{{end}} }}
`})
}

func loadSeed(t *testing.T, names ...string) []*scenario.Scenario {
	t.Helper()
	var paths []string
	for _, n := range names {
		paths = append(paths, "../../scenarios/seed/"+n+".yaml")
	}
	ss, err := scenario.Load(paths...)
	if err != nil {
		t.Fatal(err)
	}
	return ss
}

func ctxFor(t *testing.T) context.Context {
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	t.Cleanup(cancel)
	return ctx
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
	hs, err := Run(ctxFor(t), ss, Options{Targets: []Target{guarded, naive}, Parallel: 4})
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

// TestProxyStartAndStop starts the helper proxy directly: the rendered
// config holds the fakes' URLs, the output is captured with the key masked,
// and Close stops it gracefully (SIGTERM) and removes the config.
func TestProxyStartAndStop(t *testing.T) {
	tg, _ := helperProxyTarget(t, "guarded")
	env, err := startFakes(nil, time.Now, FakeAddrs{})
	if err != nil {
		t.Fatal(err)
	}
	defer env.Close()
	inst, err := tg.Start(ctxFor(t), env.urls, nil)
	if err != nil {
		t.Fatalf("Start: %v", err)
	}
	pi := inst.(*proxyInstance)
	cfg, err := os.ReadFile(pi.configPath)
	if err != nil || !strings.Contains(string(cfg), `"Upstream": "`+env.urls.Upstream+`"`) || !strings.Contains(string(cfg), `"MCP": "`+env.urls.MCP+`"`) {
		t.Errorf("rendered config (%v):\n%s", err, cfg)
	}
	x := inst.Send(ctxFor(t), Request{Request: scenario.Request{Endpoint: scenario.Chat, Prompt: "Call commit_write once with entry alpha-rc0000000001, then reply done."}, Token: "rc0000000001"})
	if x.Status != 200 {
		t.Errorf("a request through the proxy: %+v", x)
	}
	pid := pi.pid()
	if err := inst.Close(); err != nil {
		t.Fatalf("Close: %v", err)
	}
	assertGone(t, []int{pid})
	if _, err := os.Stat(pi.configPath); !os.IsNotExist(err) {
		t.Errorf("rendered config still there: %v", err)
	}
	out := strings.Join(pi.out.Lines(), "\n")
	if !strings.Contains(out, "with key ***") || strings.Contains(out, testKey) || !strings.Contains(out, "proxy stopping") {
		t.Errorf("captured output: key not masked or no graceful stop:\n%s", out)
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
			file:    fmt.Sprintf("start: {command: [%q], env: {%s: never-ready, HELPER_SECRET: \"${HELPER_SECRET}\"}, ready: {timeout: 300ms}, stop_grace: 100ms}", self(t), helperEnv),
			wantErr: []string{"not ready: http://127.0.0.1:", "gave no HTTP answer within 300ms", "warming up, secret ***"},
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
			_, err := Run(ctxFor(t), loadSeed(t, "no-fault-chat"), Options{Targets: []Target{tg}})
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
	builtin, err := ParseTarget("builtin:guarded")
	if err != nil {
		t.Fatal(err)
	}
	hs, err := Run(ctxFor(t), ss, Options{Targets: []Target{tg, builtin}, Parallel: 4})
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
		`OPENAI_API_KEY=` + dummyOpenAIKey + `\n`,
		`ANTHROPIC_API_KEY=` + dummyAnthropicKey + `\n`,
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

// TestLoadTargetFileErrors checks that bad target files are errors at their
// line and column.
func TestLoadTargetFileErrors(t *testing.T) {
	tests := []struct {
		name    string
		src     string
		wantErr string
	}{
		{"unknown kind", "kind: gateway\nurl: x\n", "target.yaml:1:7: unknown target kind \"gateway\"; want client ("},
		{"no kind", "url: http://x\n", "target.yaml: a target file needs a kind: client ("},
		{"unknown field", "kind: proxy\nurl: http://127.0.0.1:4000\nfakes: {upstream_addr: 127.0.0.1:1, mcp_addr: 127.0.0.1:2}\nheaderz: {}\n", "target.yaml:4:1: unknown field \"headerz\""},
		{"client field on a proxy", "kind: proxy\nurl: http://127.0.0.1:{{port}}\ncommand: [x]\n", "target.yaml:3:1: unknown field \"command\""},
		{"wrong type", "kind: client\ncommand: x\n", "target.yaml:2:10:"},
		{"bad duration", "kind: client\ncommand: [x]\ntimeout: soon\n", "target.yaml:3:10:"},
		{"no url", "kind: proxy\nstart: {command: [x]}\n", "target.yaml: a proxy target needs a url"},
		{"not started, no fakes", "kind: proxy\nurl: http://127.0.0.1:4000\n", "must name the fakes' fixed addresses"},
		{"unset env", "kind: proxy\nurl: http://127.0.0.1:{{port}}\nheaders: {Authorization: \"Bearer ${NOPE_KEY}\"}\nstart: {command: [x]}\n", "target.yaml:3:26: environment variable NOPE_KEY is not set"},
		{"unknown template variable", "kind: proxy\nurl: http://127.0.0.1:{{port}}\nstart: {command: [x, \"{{upstream}}\"]}\n", "target.yaml:3:22: unknown template variable {{upstream}} here; want one of config, fallbacks,"},
		{"prompt in a proxy", "kind: proxy\nurl: http://127.0.0.1:{{port}}\nstart: {command: [x, \"{{prompt}}\"]}\n", "unknown template variable {{prompt}}"},
		{"bad body endpoint", "kind: proxy\nurl: http://127.0.0.1:{{port}}\nbodies: {chatt: {}}\nstart: {command: [x]}\n", "target.yaml:3:9: bodies: unknown endpoint \"chatt\""},
		{"bad fake address", "kind: proxy\nurl: http://127.0.0.1:4000\nfakes: {upstream_addr: nowhere, mcp_addr: 127.0.0.1:2}\n", "target.yaml:3:24: upstream_addr \"nowhere\": want host:port"},
		{"missing config template", "kind: proxy\nurl: http://127.0.0.1:{{port}}\nstart: {command: [x], config: missing.tmpl}\n", "config template"},
		{"client without command", "kind: client\n", "a client target needs a command"},
		{"syntax", "kind: client\ncommand: [x\n", "target.yaml:"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			path := filepath.Join(t.TempDir(), "target.yaml")
			if err := os.WriteFile(path, []byte(tt.src), 0o644); err != nil {
				t.Fatal(err)
			}
			_, err := LoadTargetFile(path, TargetFileOptions{Getenv: testEnv})
			if err == nil {
				t.Fatal("no error")
			}
			if !strings.Contains(err.Error(), tt.wantErr) {
				t.Errorf("error:\n%v\nwant it to contain %q", err, tt.wantErr)
			}
			var se *scenario.Error
			if !errorsAs(err, &se) {
				t.Errorf("error %T is not a *scenario.Error", err)
			}
		})
	}
}

// TestResolveTarget tells builtin names from files.
func TestResolveTarget(t *testing.T) {
	if tg, err := ResolveTarget("builtin:naive", TargetFileOptions{}); err != nil || tg.Name() != "builtin:naive" {
		t.Errorf("builtin:naive: %v, %v", tg, err)
	}
	if _, err := ResolveTarget("nope.yaml", TargetFileOptions{}); err == nil || !strings.Contains(err.Error(), "nope.yaml: no such file") {
		t.Errorf("missing file: %v", err)
	}
	if _, err := ResolveTarget("lambda:x", TargetFileOptions{}); err == nil || !strings.Contains(err.Error(), "nor is it a target file") {
		t.Errorf("unknown: %v", err)
	}
}

// TestFixedFakes runs a proxy the harness does not start, configured with
// fixed fake addresses: its shared scenarios run on fakes at those
// addresses, then its isolated ones one at a time on fresh fakes there.
func TestFixedFakes(t *testing.T) {
	up, mcp := freeAddr(t), freeAddr(t)
	gw, err := ParseTarget("builtin:guarded")
	if err != nil {
		t.Fatal(err)
	}
	inst, err := gw.Start(ctxFor(t), Fakes{Upstream: "http://" + up + "/v1", MCP: "http://" + mcp + "/mcp"}, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer inst.Close()
	url := inst.(*builtinInstance).sender.base
	tg, _ := writeTarget(t, fmt.Sprintf("kind: proxy\nname: fixed\nurl: %s\nfakes: {upstream_addr: %q, mcp_addr: %q}\n", url, up, mcp), nil)
	ss := loadSeed(t, "fault-on-chat", "no-fault-messages")
	iso, err := scenario.Load("../../scenarios/mcp/tool-errors.yaml")
	if err != nil {
		t.Fatal(err)
	}
	hs, err := Run(ctxFor(t), append(ss, iso[0]), Options{Targets: []Target{tg}, Parallel: 4})
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
	gw, _ := ParseTarget("builtin:guarded")
	hs, err := Run(ctxFor(t), ss, Options{Targets: []Target{gw}})
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

// TestTargetSchema lists both kinds and their fields.
func TestTargetSchema(t *testing.T) {
	b, err := TargetSchema()
	if err != nil {
		t.Fatal(err)
	}
	var s struct {
		OneOf []struct {
			Ref string `json:"$ref"`
		} `json:"oneOf"`
		Defs map[string]struct {
			Properties           map[string]any `json:"properties"`
			AdditionalProperties *bool          `json:"additionalProperties"`
		} `json:"$defs"`
	}
	if err := json.Unmarshal(b, &s); err != nil {
		t.Fatal(err)
	}
	if len(s.OneOf) != 2 {
		t.Errorf("oneOf: %+v", s.OneOf)
	}
	for def, fields := range map[string][]string{
		"ProxyFile":  {"kind", "url", "headers", "bodies", "start", "fakes", "retry_after_hint"},
		"ClientFile": {"kind", "command", "env", "dir", "timeout", "retry_after_hint"},
		"ProxyStart": {"command", "config", "env", "ready", "stop_grace"},
	} {
		d, ok := s.Defs[def]
		if !ok {
			t.Errorf("no definition %s", def)
			continue
		}
		for _, f := range fields {
			if _, ok := d.Properties[f]; !ok {
				t.Errorf("%s lacks %s", def, f)
			}
		}
		if d.AdditionalProperties == nil || *d.AdditionalProperties {
			t.Errorf("%s allows unknown fields", def)
		}
	}
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
	hs, err := Run(ctx, ss, Options{Targets: []Target{tg}, Parallel: 2, OnHistory: func(h *history.History) {
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
	hs, err := Run(ctxFor(t), loadSeed(t, "no-fault-chat"), Options{Targets: []Target{tg}})
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
			_, err := Run(ctxFor(t), ss, Options{Targets: []Target{tg}})
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
	tg, err := LoadTargetFile(path, TargetFileOptions{Getenv: getenv})
	if err != nil {
		t.Fatal(err)
	}
	hs, err := Run(ctxFor(t), ss, Options{Targets: []Target{tg}})
	if err != nil {
		t.Fatalf("Run: %v", err)
	}
	run := hs[0].Requests[0].Client
	if run.Stdout != "key=*** mode=naive-mode\n" || run.Stderr != "key=***\n" {
		t.Errorf("stdout %q, stderr %q: want the key masked and the mode shown", run.Stdout, run.Stderr)
	}
}

// TestProxyConfigPathFromAnotherDirectory loads a target file by a relative
// path from another directory (as `replaycheck run --target
// targets/x.yaml` from the repository root does): {{config}} must name the
// rendered config absolutely, since the proxy runs in the target file's
// directory.
func TestProxyConfigPathFromAnotherDirectory(t *testing.T) {
	_, dir := helperProxyTarget(t, "guarded")
	t.Chdir(filepath.Dir(dir))
	tg, err := LoadTargetFile(filepath.Join(filepath.Base(dir), "target.yaml"), TargetFileOptions{Getenv: testEnv, Replaycheck: "/bin/false"})
	if err != nil {
		t.Fatal(err)
	}
	env, err := startFakes(nil, time.Now, FakeAddrs{})
	if err != nil {
		t.Fatal(err)
	}
	defer env.Close()
	inst, err := tg.Start(ctxFor(t), env.urls, nil)
	if err != nil {
		t.Fatalf("Start: %v", err)
	}
	defer inst.Close()
	if p := inst.(*proxyInstance).configPath; !filepath.IsAbs(p) {
		t.Errorf("{{config}} is %q, not an absolute path", p)
	}
}

// parseTargetEnv parses the target file src with env as the environment.
func parseTargetEnv(t *testing.T, src string, env map[string]string) (Target, error) {
	t.Helper()
	path := filepath.Join(t.TempDir(), "target.yaml")
	return ParseTargetFile(path, []byte(src), TargetFileOptions{Getenv: func(k string) string { return env[k] }, Replaycheck: "/bin/false"})
}

// TestTargetFileEnvInEveryScalar: ${NAME} and ${NAME:-default} work in every
// scalar value of a target file — whole numbers, durations, list items, map
// values, nested body fields — and a plain scalar that expands to a number or
// true/false is one, while a quoted one and text that only looks like a
// number (010, 1.10) stay strings.
func TestTargetFileEnvInEveryScalar(t *testing.T) {
	const clientSrc = `kind: client
name: ${CLIENT_NAME:-agent}
command: [sh, -c, "${CLIENT_CMD}", "${PIN}"]
timeout: ${CLIENT_TIMEOUT:-90s}
num_retries: ${MAX_RETRIES:-2}
retry_after_hint: ${HINT:-250ms}
env:
  VERSION: ${VERSION}
  PIN: ${PIN}
  COUNT: ${MAX_RETRIES:-2}
dir: ${WORK_DIR:-/tmp}
`
	const proxySrc = `kind: proxy
url: http://${PROXY_HOST:-127.0.0.1}:{{port}}
num_retries: ${MAX_RETRIES:-2}
bodies:
  chat:
    max_tokens: ${MAX_TOKENS:-100}
    stream: ${STREAM:-false}
    temperature: ${TEMPERATURE:-0.5}
    parallel: "${STREAM:-false}"
    metadata: {user: "${USER_ID}", tags: [a, "${TAG:-b}"]}
    tools:
      - type: mcp
        server_label: ${LABEL:-ledger}
        server_url: "{{mcp_url}}"
start:
  command: ["${PROXY_BIN:-litellm}", --port, "{{port}}"]
  ready:
    url: "${READY_BASE:-http://127.0.0.1}:{{port}}/health"
    timeout: ${READY_TIMEOUT:-5s}
  stop_grace: ${GRACE:-1s}
  dir: ${PROXY_DIR:-/srv}
`
	env := map[string]string{"CLIENT_CMD": "echo hi", "VERSION": "1.10", "PIN": "0123", "USER_ID": "u-7", "LABEL": "books"}
	tests := []struct {
		name string
		src  string
		env  map[string]string
		want any
	}{
		{
			name: "client defaults",
			src:  clientSrc,
			env:  env,
			want: ClientFile{Kind: "client", Name: "agent", Command: []string{"sh", "-c", "echo hi", "0123"},
				Timeout: fault.Duration(90 * time.Second), NumRetries: ptr(2), RetryAfterHint: fault.Duration(250 * time.Millisecond),
				Env: map[string]string{"VERSION": "1.10", "PIN": "0123", "COUNT": "2"}, Dir: "/tmp"},
		},
		{
			name: "client from the environment",
			src:  clientSrc,
			env:  merge(env, map[string]string{"CLIENT_NAME": "codex", "CLIENT_TIMEOUT": "3m", "MAX_RETRIES": "7", "HINT": "1s", "WORK_DIR": "/work"}),
			want: ClientFile{Kind: "client", Name: "codex", Command: []string{"sh", "-c", "echo hi", "0123"},
				Timeout: fault.Duration(3 * time.Minute), NumRetries: ptr(7), RetryAfterHint: fault.Duration(time.Second),
				Env: map[string]string{"VERSION": "1.10", "PIN": "0123", "COUNT": "7"}, Dir: "/work"},
		},
		{
			name: "proxy defaults",
			src:  proxySrc,
			env:  env,
			want: ProxyFile{Kind: "proxy", URL: "http://127.0.0.1:{{port}}", NumRetries: ptr(2),
				Bodies: map[string]map[string]any{"chat": {
					"max_tokens": uint64(100), "stream": false, "temperature": 0.5, "parallel": "false",
					"metadata": map[string]any{"user": "u-7", "tags": []any{"a", "b"}},
					"tools":    []any{map[string]any{"type": "mcp", "server_label": "books", "server_url": "{{mcp_url}}"}},
				}},
				Start: &ProxyStart{Command: []string{"litellm", "--port", "{{port}}"}, Dir: "/srv",
					Ready:     Ready{URL: "http://127.0.0.1:{{port}}/health", Timeout: fault.Duration(5 * time.Second)},
					StopGrace: fault.Duration(time.Second)}},
		},
		{
			name: "proxy from the environment",
			src:  proxySrc,
			env:  merge(env, map[string]string{"MAX_RETRIES": "0", "MAX_TOKENS": "4096", "STREAM": "true", "TEMPERATURE": "1.25", "PROXY_BIN": "/opt/gw", "GRACE": "10s"}),
			want: ProxyFile{Kind: "proxy", URL: "http://127.0.0.1:{{port}}", NumRetries: ptr(0),
				Bodies: map[string]map[string]any{"chat": {
					"max_tokens": uint64(4096), "stream": true, "temperature": 1.25, "parallel": "true",
					"metadata": map[string]any{"user": "u-7", "tags": []any{"a", "b"}},
					"tools":    []any{map[string]any{"type": "mcp", "server_label": "books", "server_url": "{{mcp_url}}"}},
				}},
				Start: &ProxyStart{Command: []string{"/opt/gw", "--port", "{{port}}"}, Dir: "/srv",
					Ready:     Ready{URL: "http://127.0.0.1:{{port}}/health", Timeout: fault.Duration(5 * time.Second)},
					StopGrace: fault.Duration(10 * time.Second)}},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			tg, err := parseTargetEnv(t, tt.src, tt.env)
			if err != nil {
				t.Fatalf("loading: %v", err)
			}
			var got any
			switch tg := tg.(type) {
			case *client:
				got = tg.spec
			case *proxy:
				got = tg.spec
			}
			if diff := cmp.Diff(tt.want, got); diff != "" {
				t.Errorf("decoded file (-want +got):\n%s", diff)
			}
		})
	}
}

func ptr[T any](v T) *T { return &v }

func merge(a, b map[string]string) map[string]string {
	out := maps.Clone(a)
	maps.Copy(out, b)
	return out
}

// TestTargetFileEnvErrors: an unset ${NAME} without a default is an error
// at the line and column of its scalar, wherever that is; a value of the
// wrong type is one too, and shows no secret.
func TestTargetFileEnvErrors(t *testing.T) {
	tests := []struct {
		name    string
		src     string
		wantErr string
	}{
		{"int field", "kind: client\ncommand: [x]\nnum_retries: ${MAX_RETRIES}\n", "target.yaml:3:14: environment variable MAX_RETRIES is not set (use ${MAX_RETRIES:-default} for a default)"},
		{"duration field", "kind: client\ncommand: [x]\ntimeout: ${CLIENT_TIMEOUT}\n", "target.yaml:3:10: environment variable CLIENT_TIMEOUT is not set"},
		{"list item", "kind: client\ncommand:\n  - x\n  - --model=${MODEL}\n", "target.yaml:4:5: environment variable MODEL is not set"},
		{"nested body field", "kind: proxy\nurl: http://127.0.0.1:{{port}}\nbodies:\n  chat:\n    tools: [{type: mcp, server_label: \"${LABEL}\"}]\nstart: {command: [x]}\n", "target.yaml:5:39: environment variable LABEL is not set"},
		{"block scalar", "kind: client\ncommand:\n  - sh\n  - -c\n  - |\n    echo ${GREETING}\n", "target.yaml:5:5: environment variable GREETING is not set"},
		{"via", "kind: client\ncommand: [x]\nvia: ${GATEWAY_FILE}\n", "target.yaml:3:6: environment variable GATEWAY_FILE is not set"},
		{"wrong type", "kind: client\ncommand: [x]\nnum_retries: ${RUN_MODE}\n", "target.yaml:3:14: num_retries: want a whole number, got \"naive\""},
		{"wrong type, secret", "kind: client\ncommand: [x]\nnum_retries: ${MY_API_KEY}\n", "target.yaml:3:14: num_retries: want a whole number, got \"***\""},
		{"bad duration, secret", "kind: client\ncommand: [x]\ntimeout: ${MY_API_KEY}\n", "target.yaml:3:10: "},
		{"bad address, secret", "kind: proxy\nurl: http://127.0.0.1:4000\nfakes: {upstream_addr: \"${MY_API_KEY}\", mcp_addr: 127.0.0.1:2}\n", "target.yaml:3:24: upstream_addr \"***\": want host:port"},
	}
	env := map[string]string{"RUN_MODE": "naive", "MY_API_KEY": "sk-typed-secret-1234"}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, err := parseTargetEnv(t, tt.src, env)
			if err == nil {
				t.Fatal("no error")
			}
			if !strings.Contains(err.Error(), tt.wantErr) {
				t.Errorf("error:\n%v\nwant it to contain %q", err, tt.wantErr)
			}
			if strings.Contains(err.Error(), env["MY_API_KEY"]) {
				t.Errorf("the secret appears in the error:\n%v", err)
			}
			var se *scenario.Error
			if !errorsAs(err, &se) {
				t.Errorf("error %T is not a *scenario.Error", err)
			}
		})
	}
}

// TestTargetFileEnvSecrets: a secret-named ${NAME} is a secret wherever the
// file uses it (here in a body field and a ready URL, where no ${ENV} was
// expanded before), and an env value from ${ENV} is one whatever its name;
// a plain env value and other references are not.
func TestTargetFileEnvSecrets(t *testing.T) {
	src := `kind: proxy
url: http://127.0.0.1:{{port}}
bodies:
  chat:
    metadata: {auth: "${SERVICE_TOKEN}", mode: "${RUN_MODE}"}
start:
  command: [x]
  env:
    FROM_ENV: "${RUN_MODE}-${REGION}"
    TAGGED: !!str ${ZONE}
    BLOCK: |
      zone=${ZONE:-none}
    PLAIN: literal-value
  ready: {url: "http://127.0.0.1:{{port}}/health?key=${HEALTH_KEY}"}
`
	env := map[string]string{"SERVICE_TOKEN": "tok-body-secret-42", "HEALTH_KEY": "hk-ready-secret-77", "RUN_MODE": "naive", "REGION": "eu", "ZONE": "zone-b"}
	tg, err := parseTargetEnv(t, src, env)
	if err != nil {
		t.Fatal(err)
	}
	secrets := tg.(*proxy).secrets
	for _, want := range []string{"tok-body-secret-42", "hk-ready-secret-77", "naive-eu", "zone-b", "zone=zone-b\n"} {
		if !slices.Contains(secrets, want) {
			t.Errorf("secrets %q: want %q among them", secrets, want)
		}
	}
	for _, notWant := range []string{"naive", "literal-value"} {
		if slices.Contains(secrets, notWant) {
			t.Errorf("secrets %q: %q is not a secret", secrets, notWant)
		}
	}
}

// TestTargetFileEnvEscape: $${ is a literal ${ (for the shell of a command),
// never looked up; ${NAME} next to it still is.
func TestTargetFileEnvEscape(t *testing.T) {
	src := "kind: client\ncommand: [sh, -c, 'echo $${HOME:-none} ${RUN_MODE} $$ $HOME']\nenv: {LITERAL: \"$${NOT_SET}\"}\n"
	tg, err := parseTargetEnv(t, src, map[string]string{"RUN_MODE": "naive"})
	if err != nil {
		t.Fatal(err)
	}
	c := tg.(*client)
	if got, want := c.spec.Command[2], "echo ${HOME:-none} naive $$ $HOME"; got != want {
		t.Errorf("command argument %q, want %q", got, want)
	}
	if got, want := c.spec.Env["LITERAL"], "${NOT_SET}"; got != want {
		t.Errorf("env value %q, want %q", got, want)
	}
	if slices.Contains(c.secrets, "${NOT_SET}") {
		t.Errorf("an escaped value is among the secrets %q", c.secrets)
	}
}

// TestTargetSchemaAllowsEnvRefs: the schema lets a number or a duration be
// a ${NAME} reference, as the loader does, and still says what it wants.
func TestTargetSchemaAllowsEnvRefs(t *testing.T) {
	b, err := TargetSchema()
	if err != nil {
		t.Fatal(err)
	}
	type prop struct {
		Type        string `json:"type"`
		Pattern     string `json:"pattern"`
		Description string `json:"description"`
		AnyOf       []struct {
			Type    string `json:"type"`
			Pattern string `json:"pattern"`
		} `json:"anyOf"`
	}
	var s struct {
		Defs map[string]struct {
			Properties map[string]prop `json:"properties"`
		} `json:"$defs"`
	}
	if err := json.Unmarshal(b, &s); err != nil {
		t.Fatal(err)
	}
	for def, fields := range map[string]map[string]string{
		"ClientFile": {"num_retries": "${MAX_RETRIES:-2}", "timeout": "${CLIENT_TIMEOUT:-90s}", "retry_after_hint": "${HINT}"},
		"ProxyFile":  {"num_retries": "${MAX_RETRIES}"},
		"ProxyStart": {"stop_grace": "${GRACE:-5s}"},
		"Ready":      {"timeout": "${READY_TIMEOUT:-3m}"},
	} {
		for field, ref := range fields {
			p := s.Defs[def].Properties[field]
			var typed, env bool
			for _, alt := range p.AnyOf {
				switch {
				case alt.Type == "integer" || alt.Pattern != "" && !regexp.MustCompile(alt.Pattern).MatchString(ref):
					typed = true
				case alt.Type == "string" && alt.Pattern != "" && regexp.MustCompile(alt.Pattern).MatchString(ref):
					env = true
				}
			}
			if !typed || !env || p.Description == "" {
				t.Errorf("%s.%s = %+v: want a description and anyOf its type and a string matching %s", def, field, p, ref)
			}
		}
	}
	if p := s.Defs["ClientFile"].Properties["dir"]; p.Type != "string" || len(p.AnyOf) > 0 {
		t.Errorf("ClientFile.dir = %+v: want a plain string", p)
	}
}
