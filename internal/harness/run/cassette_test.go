package run

import (
	"context"
	"fmt"
	"io"
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
	"github.com/jarcoal/httpmock"
	"github.com/tidwall/gjson"

	"github.com/replaycheck/replaycheck/fakes/ledger"
	"github.com/replaycheck/replaycheck/fakes/upstream"
	"github.com/replaycheck/replaycheck/fakes/upstream/cassette"
	"github.com/replaycheck/replaycheck/internal/harness/rules"
	"github.com/replaycheck/replaycheck/internal/harness/scenario"
	"github.com/replaycheck/replaycheck/internal/harness/target"
	"github.com/replaycheck/replaycheck/internal/runtoken"
	"github.com/replaycheck/replaycheck/internal/wire"
)

// provider is the base URL of the mocked model provider.
const provider = "https://provider.test"

var entryIn = regexp.MustCompile(`alpha-rc[0-9a-z]{10}`)

// providerChat answers a chat request as a provider would, with ids of its
// own (none carries the run token): a request without a tool result gets a
// call of the offered tool ending in commit_write, with the entry the
// prompt names; one with a result gets "done". Streamed when asked.
func providerChat(t *testing.T) httpmock.Responder {
	return func(req *http.Request) (*http.Response, error) {
		b, err := io.ReadAll(req.Body)
		if err != nil {
			return nil, err
		}
		body := gjson.ParseBytes(b)
		followUp := body.Get(`messages.#(role=="tool")`).Exists()
		tool := ""
		body.Get("tools.#.function.name").ForEach(func(_, n gjson.Result) bool {
			if strings.HasSuffix(n.Str, "commit_write") {
				tool = n.Str
			}
			return true
		})
		entry := entryIn.FindString(body.Get(`messages.#(role=="user").content`).String())
		if !followUp && (tool == "" || entry == "") {
			t.Errorf("provider: a request without the tool or the entry: %s", b)
		}
		args := fmt.Sprintf(`{"entry":%q}`, entry)
		id, model := "chatcmpl-prov"+fmt.Sprint(followUp), body.Get("model").Str
		var out string
		ct := "application/json"
		switch {
		case !body.Get("stream").Bool() && followUp:
			out = fmt.Sprintf(`{"id":%q,"object":"chat.completion","created":1,"model":%q,"choices":[{"index":0,"message":{"role":"assistant","content":"done"},"finish_reason":"stop"}],"usage":{"prompt_tokens":9,"completion_tokens":1,"total_tokens":10}}`, id, model)
		case !body.Get("stream").Bool():
			out = fmt.Sprintf(`{"id":%q,"object":"chat.completion","created":1,"model":%q,"choices":[{"index":0,"message":{"role":"assistant","content":null,"tool_calls":[{"id":"call_prov7","type":"function","function":{"name":%q,"arguments":%q}}]},"finish_reason":"tool_calls"}],"usage":{"prompt_tokens":9,"completion_tokens":5,"total_tokens":14}}`, id, model, tool, args)
		default:
			ct = "text/event-stream"
			chunk := func(delta, finish string) string {
				return fmt.Sprintf("data: {\"id\":%q,\"object\":\"chat.completion.chunk\",\"created\":1,\"model\":%q,\"choices\":[{\"index\":0,\"delta\":%s,\"finish_reason\":%s}]}\n\n", id, model, delta, finish)
			}
			if followUp {
				out = chunk(`{"role":"assistant","content":""}`, "null") + chunk(`{"content":"done"}`, "null") + chunk(`{}`, `"stop"`)
			} else {
				out = chunk(fmt.Sprintf(`{"role":"assistant","tool_calls":[{"index":0,"id":"call_prov7","type":"function","function":{"name":%q,"arguments":""}}]}`, tool), "null") +
					chunk(fmt.Sprintf(`{"tool_calls":[{"index":0,"function":{"arguments":%q}}]}`, args), "null") + chunk(`{}`, `"tool_calls"`)
			}
			out += "data: [DONE]\n\n"
		}
		resp := httpmock.NewStringResponse(http.StatusOK, out)
		resp.Header.Set("Content-Type", ct)
		return resp, nil
	}
}

// recordThroughRelay sends each scenario's requests, rendered for token,
// through the built-in guarded gateway to an upstream fake relaying to the
// mocked provider, records the relayed exchanges in a cassette in dir and
// returns its path: a session recorded as `serve --relay URL --record DIR`
// records it, with the harness's own prompts.
func recordThroughRelay(t *testing.T, dir, token string, ss []*scenario.Scenario) string {
	t.Helper()
	mt := httpmock.NewMockTransport()
	mt.RegisterResponder("POST", provider+"/v1/chat/completions", providerChat(t))
	rec, err := cassette.Create(filepath.Join(dir, "session.jsonl"))
	if err != nil {
		t.Fatal(err)
	}
	u, err := upstream.New(upstream.Config{Relay: provider, Client: &http.Client{Transport: mt}, Record: rec})
	if err != nil {
		t.Fatal(err)
	}
	usrv := httptest.NewServer(u)
	l, err := ledger.New(ledger.Config{})
	if err != nil {
		t.Fatal(err)
	}
	mux := http.NewServeMux()
	mux.Handle("/mcp", l)
	lsrv := httptest.NewServer(mux)
	guarded, err := target.ParseTarget("builtin:guarded")
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	inst, err := guarded.Start(ctx, target.Fakes{Upstream: usrv.URL + "/v1", MCP: lsrv.URL + "/mcp"}, nil)
	if err != nil {
		t.Fatal(err)
	}
	for _, s := range ss {
		r, err := s.Render(token)
		if err != nil {
			t.Fatal(err)
		}
		for _, req := range r.Requests {
			x := inst.Send(ctx, target.Request{Request: req, Token: token})
			if x.Status != http.StatusOK || x.TransportError != "" {
				t.Fatalf("recording %s: %+v", s.Name, x)
			}
		}
	}
	inst.Close()
	usrv.Close()
	lsrv.Close()
	l.Close()
	if err := rec.Close(); err != nil {
		t.Fatal(err)
	}
	if n := l.Counts("").Writes + l.Counts(token).Writes; n != len(ss) {
		t.Fatalf("recording wrote %d ledger lines, want %d", n, len(ss))
	}
	info := mt.GetCallCountInfo()
	if n := info["POST "+provider+"/v1/chat/completions"]; n != 2*len(ss) {
		t.Fatalf("provider called %d times, want %d (an initial request and a follow-up per scenario)", n, 2*len(ss))
	}
	return rec.Path()
}

// faulted are scenarios with a fault on a model answer, in the scripted
// form (the seed's script), each with the cassette form next to it: the
// same scenario with model: {cassette: session.jsonl}.
const faulted = `
- name: follow-up 500 %[1]s
  request: {endpoint: chat}
  %[2]s
  faults:
    upstream: [{on: follow_up, respond: {status: 500}, times: always}]
  expect:
    writes: 1
    rules: [no-replay-after-dispatch, error-surfaces]
    targets:
      "builtin:*": {status: 500, upstream: {initial: 1, follow_up: 1, "follow_up injected_500": 1}}
- name: stream cut after tool call %[1]s
  request: {endpoint: chat, stream: true}
  %[2]s
  faults:
    upstream: [{on: initial, stream: true, drop: {after: tool_call}, times: once}]
  expect:
    writes: {max: 1}
    targets:
      "builtin:*": {status: 200, writes: 0, error_events: 1, upstream: {initial: 1, "initial dropped_stream": 1}}
`

// A session recorded through the relay from a provider (with a run token
// of its own in the prompts) answers a scenario's model: {cassette: FILE}
// in later runs with other tokens, in parallel on one upstream fake, with
// the upstream faults cutting and failing the replayed answers as they do
// the scripted ones: on builtin:guarded and builtin:naive every verdict is
// the scripted scenario's, and every model request was answered from the
// cassette.
func TestCassetteModelReplaysLikeScript(t *testing.T) {
	dir := t.TempDir()
	clean := `
- name: clean
  request: {endpoint: chat}
  expect: {writes: 1}
- name: clean stream
  request: {endpoint: chat, stream: true}
  expect: {writes: 1}
`
	ss := loadYAML(t, dir, "clean.yaml", clean)
	recordedWith := runtoken.Derive("recording")
	file := recordThroughRelay(t, dir, recordedWith, ss)
	raw, err := os.ReadFile(file)
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(string(raw), `"token":"`+recordedWith+`"`) {
		t.Fatalf("the cassette does not name the recording's token:\n%s", raw)
	}

	both := loadYAML(t, dir, "faulted.yaml", fmt.Sprintf(faulted, "(scripted)", "")+fmt.Sprintf(faulted, "(cassette)", "model: {cassette: session.jsonl}"))
	var targets []target.Target
	for _, name := range []string{"builtin:guarded", "builtin:naive"} {
		tg, err := target.ParseTarget(name)
		if err != nil {
			t.Fatal(err)
		}
		targets = append(targets, tg)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	hs, err := Run(ctx, both, Options{Targets: targets, Parallel: 8, Seed: "later"})
	if err != nil {
		t.Fatal(err)
	}
	type outcome struct {
		Overall  rules.Status
		Verdicts []string
		Writes   int
		Upstream []string
	}
	got := map[string]outcome{}
	for _, h := range hs {
		if h.Token == recordedWith {
			t.Fatalf("%s ran with the recording's token", h.Scenario)
		}
		vs := rules.Check(h)
		o := outcome{Overall: rules.Overall(vs), Writes: len(h.Writes())}
		for _, v := range vs {
			o.Verdicts = append(o.Verdicts, v.Check+" "+string(v.Status))
		}
		for _, u := range h.Upstream {
			o.Upstream = append(o.Upstream, u.CountKey().String())
			if u.Outcome == wire.OutcomeCassetteMiss {
				t.Errorf("%s on %s: a cassette miss: %+v", h.Scenario, h.Target, u)
			}
			// A replayed answer has the provider's id; a scripted one the
			// fake's, which names the run token; an injected error none.
			replayed := strings.HasPrefix(u.ResponseID, "chatcmpl-prov")
			if u.ResponseID != "" && replayed != strings.Contains(h.Scenario, "(cassette)") {
				t.Errorf("%s on %s: answer %s", h.Scenario, h.Target, u.ResponseID)
			}
		}
		scripted := strings.Replace(h.Scenario, "(cassette)", "(scripted)", 1)
		key := scripted + " on " + h.Target
		if scripted == h.Scenario {
			got[key] = o
			continue
		}
		if d := cmp.Diff(got[key], o); d != "" {
			t.Errorf("%s: the cassette run differs from the scripted one (-scripted +cassette):\n%s", key, d)
		}
		if h.Setup.ToolCalls != 1 || !slices.Equal(h.Setup.Tools, []string{ledger.ToolCommitWrite}) {
			t.Errorf("%s: setup tool calls %d %v, want 1 [commit_write]", key, h.Setup.ToolCalls, h.Setup.Tools)
		}
	}
	// The seed's verdicts: the fix holds, the bug is caught.
	for key, want := range map[string]rules.Status{
		"follow-up 500 (scripted) on builtin:guarded":              rules.Pass,
		"follow-up 500 (scripted) on builtin:naive":                rules.Fail,
		"stream cut after tool call (scripted) on builtin:guarded": rules.Pass,
		"stream cut after tool call (scripted) on builtin:naive":   rules.Fail,
	} {
		if got[key].Overall != want {
			t.Errorf("%s: %s, want %s (%+v)", key, got[key].Overall, want, got[key])
		}
	}
}

// loadYAML writes src as dir/name and loads it.
func loadYAML(t *testing.T, dir, name, src string) []*scenario.Scenario {
	t.Helper()
	path := filepath.Join(dir, name)
	if err := os.WriteFile(path, []byte(src), 0o644); err != nil {
		t.Fatal(err)
	}
	ss, err := scenario.Load(path)
	if err != nil {
		t.Fatal(err)
	}
	return ss
}
