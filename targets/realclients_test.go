package targets_test

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"maps"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/replaycheck/replaycheck/internal/targettest"
)

// realClient is a shipped target file that runs a real agent CLI or SDK
// program from targets/clients (installed by `make clients`), and what each
// client scenario must show on it.
type realClient struct {
	file     string   // target file in targets/
	needs    []string // files under targets/ the run needs (installed by npm ci)
	version  []string // a command, run in targets/clients, that proves the client starts
	node     bool     // runs on node (PATH)
	offered  string   // how the client offers the ledger's commit_write
	endpoint string   // the model API path it calls
	// followUps is the follow-up model calls in the scenarios with faults:
	// the client's own retry policy, with the retry hint the scenarios set.
	followUpsOnce, followUpsAlways int
	// exitOnce is the client's exit code in "client follow-up 500 once":
	// 0 after its retry, 1 for a client that makes none and reports the
	// error.
	exitOnce int
	// timeout is the run's --timeout, for a client slower than the default
	// deadline; "" = the default.
	timeout string
	// gemini, for a client that streams the Gemini API, is what each
	// scenario of scenarios/gemini shows on it, as "VERDICT exit=N …" lines
	// like the client scenarios'; a "fail" is a finding the scenario
	// proves. On any other client they are skipped (notGemini).
	gemini map[string]string
	// mcp is what the MCP fault scenarios of scenarios/clients show on a
	// client that differs from the usual: the call not sent again after an
	// ambiguous session expiry, the 401 not retried without credentials to
	// refresh, the tool's error told to the model and exit 0.
	mcp map[string]string
	// stdio marks a client that spawns the ledger over stdio (replaycheck
	// ledger-stdio); spawns is how many ledger-stdio processes it starts in
	// a run without a stdio fault.
	stdio  bool
	spawns int
	// stdioFaults is what the scenarios of scenarios/stdio show on a stdio
	// client that differs from the usual (see TestRealClientsStdio): a
	// "fail" is a finding the scenario proves.
	stdioFaults map[string]string
	// told is what the first follow-up of each stdio fault scenario told
	// the model about the call (see toldModel), where it differs from the
	// usual: the ledger's answer in a scenario without a fault or whose
	// answer arrived, nothing in a crash loop (no call).
	told map[string]told
}

// told is what a run's first follow-up told the model about the first tool
// call (the history's results), or that no follow-up came: Error is the
// dialect's error flag, Text a stable part of the result's text (the
// history keeps its first 200 characters), Again the calls the model asked
// for again (again_if_failed) in the run.
type told struct {
	Error bool
	Text  string
	Again int
}

// noFollowUp is the told of a run that made no follow-up.
var noFollowUp = told{Text: "(no follow-up)"}

// answered is the told of a run whose follow-up carried the ledger's answer
// (recorded alpha-…, as text or JSON).
var answered = told{Text: "recorded"}

// geminiScenarios are the scenarios of scenarios/gemini, whose faults act on
// streamed Gemini requests only.
var geminiScenarios = []string{"gemini follow-up stream cut", "gemini stream error on the follow-up"}

// notGemini is what scenarios/gemini shows on a client that does not stream
// the Gemini API: skipped as not applicable, the run otherwise a run with
// no fault; tail ends the line (paths, spawns).
func notGemini(tail string) map[string]string {
	out := map[string]string{}
	for _, s := range geminiScenarios {
		out[s] = "skipped exit=0 writes=1 mcp_calls=1 initial=1 follow_ups=1 " + tail
	}
	return out
}

// askedAgain is the scenario whose model asks again when told the call
// failed (scenarios/stdio/clients-exit-after-execute-asks-again.yaml).
const askedAgain = "client stdio server exits after executing, model asks again"

// geminiPath is the path streamed Gemini clients call, geminiUnaryPath the
// one unstreamed ones call.
const (
	geminiPath      = "/v1beta/models/gemini-2.5-flash:streamGenerateContent"
	geminiUnaryPath = "/v1beta/models/gemini-2.5-flash:generateContent"
)

// googleGenAINeeds is what the @google/genai agent needs, streamed or not.
var googleGenAINeeds = []string{"clients/google-genai.mjs", "clients/node_modules/@google/genai/package.json", "clients/node_modules/@modelcontextprotocol/sdk/package.json"}

// googleGenAIMCP is what the MCP fault scenarios show on the @google/genai
// agent at path: mcpToTool throws the MCP client's error, which ends the run
// (exit 1) before any follow-up.
func googleGenAIMCP(path string) map[string]string {
	return map[string]string{
		"client mcp session expired after the call ran": "pass exit=1 writes=1 mcp_calls=1 initial=1 follow_ups=0 paths=[" + path + "]",
		"client mcp tools/call refused 401":             "pass exit=1 writes=0 mcp_calls=1 initial=1 follow_ups=0 paths=[" + path + "]",
	}
}

var realClients = []realClient{
	{
		file:  "claude-code.yaml",
		needs: []string{"clients/node_modules/.bin/claude"}, version: []string{"node_modules/.bin/claude", "--version"},
		offered: "mcp__ledger__commit_write", endpoint: "/v1/messages",
		// CLAUDE_CODE_MAX_RETRIES=2 in the target file; Retry-After is not
		// honoured on a 500.
		followUpsOnce: 2, followUpsAlways: 3,
	},
	{
		file:  "codex.yaml",
		needs: []string{"clients/node_modules/.bin/codex"}, version: []string{"node_modules/.bin/codex", "--version"}, node: true,
		offered: "mcp__ledger.commit_write", endpoint: "/v1/responses",
		// request_max_retries 4 inside stream_max_retries 1: 5 × 2 attempts.
		followUpsOnce: 2, followUpsAlways: 10,
	},
	{
		file:  "openai-agents.yaml",
		needs: []string{"clients/openai-agents.mjs", "clients/node_modules/@openai/agents/package.json"}, node: true,
		offered: "commit_write", endpoint: "/v1/responses",
		followUpsOnce: 2, followUpsAlways: 3,
		mcp: map[string]string{
			// The lost session ends the run with the MCP client's error.
			"client mcp session expired after the call ran": "pass exit=1 writes=1 mcp_calls=1 initial=1 follow_ups=0 paths=[/v1/responses]",
		},
	},
	{
		file:  "ai-sdk.yaml",
		needs: []string{"clients/ai-sdk.mjs", "clients/node_modules/ai/package.json", "clients/node_modules/@ai-sdk/mcp/package.json"}, node: true,
		offered: "commit_write", endpoint: "/v1/chat/completions",
		followUpsOnce: 2, followUpsAlways: 3,
	},
	{
		file:  "ai-sdk-google.yaml",
		needs: []string{"clients/ai-sdk-google.mjs", "clients/node_modules/ai/package.json", "clients/node_modules/@ai-sdk/google/package.json"}, node: true,
		offered: "commit_write", endpoint: geminiPath,
		followUpsOnce: 2, followUpsAlways: 3,
		gemini: map[string]string{
			// The provider ends the stream without an error when the
			// Gemini API's error object arrives (vercel/ai issue 5217):
			// the agent prints nothing and exits 0, an invented success.
			"gemini stream error on the follow-up": "fail exit=0 writes=1 mcp_calls=1 initial=1 follow_ups=1 paths=[" + geminiPath + "]",
			"gemini follow-up stream cut":          "pass exit=1 writes=1 mcp_calls=1 initial=1 follow_ups=1 paths=[" + geminiPath + "]",
		},
	},
	{
		file:  "gemini-cli.yaml",
		needs: []string{"clients/node_modules/.bin/gemini"}, version: []string{"node_modules/.bin/gemini", "--version"}, node: true,
		offered: "mcp_ledger_commit_write", endpoint: geminiPath,
		// general.maxAttempts 2 in the target file: one retry, after ~5 s
		// (Retry-After is not read on a 500); it starts in seconds, so the
		// runs get a longer deadline.
		followUpsOnce: 2, followUpsAlways: 2, timeout: "2m",
		gemini: map[string]string{
			// It retries the follow-up after the API's error object alone.
			"gemini stream error on the follow-up": "pass exit=0 writes=1 mcp_calls=1 initial=1 follow_ups=2 paths=[" + geminiPath + "]",
			// A cut stream is not retried: it reports the socket error.
			"gemini follow-up stream cut": "pass exit=1 writes=1 mcp_calls=1 initial=1 follow_ups=1 paths=[" + geminiPath + "]",
		},
	},
	{
		file:  "google-genai.yaml",
		needs: googleGenAINeeds, node: true,
		offered: "commit_write", endpoint: geminiUnaryPath,
		// The SDK retries nothing unless httpOptions.retryOptions is set:
		// the 500 ends the run with the SDK's ApiError. The Gemini
		// scenarios' faults are on streams, which it does not call.
		followUpsOnce: 1, followUpsAlways: 1, exitOnce: 1,
		mcp: googleGenAIMCP(geminiUnaryPath),
	},
	{
		file:  "google-genai-stream.yaml",
		needs: googleGenAINeeds, node: true,
		offered: "commit_write", endpoint: geminiPath,
		followUpsOnce: 1, followUpsAlways: 1, exitOnce: 1,
		mcp: googleGenAIMCP(geminiPath),
		gemini: map[string]string{
			// It reports the API's error object (ApiError, status
			// UNAVAILABLE) and the cut (TypeError: terminated) and exits
			// 1; its automatic continuation re-opens a stream only from a
			// continuationToken, which the API did not send.
			"gemini stream error on the follow-up": "pass exit=1 writes=1 mcp_calls=1 initial=1 follow_ups=1 paths=[" + geminiPath + "]",
			"gemini follow-up stream cut":          "pass exit=1 writes=1 mcp_calls=1 initial=1 follow_ups=1 paths=[" + geminiPath + "]",
		},
	},
}

// stdioClients are the shipped targets of real clients that spawn the
// ledger as a stdio MCP server (the *-stdio.yaml files). Each run gets a
// 2-minute deadline: the hang scenario waits out a 5 s tool timeout, and
// with every real client of this package starting at once on a small
// machine a client can take 20 s to reach its tool call.
var stdioClients = []realClient{
	{
		file:  "claude-code-stdio.yaml",
		needs: []string{"clients/node_modules/.bin/claude"}, version: []string{"node_modules/.bin/claude", "--version"},
		offered: "mcp__ledger__commit_write", endpoint: "/v1/messages",
		followUpsOnce: 2, followUpsAlways: 3,
		stdio: true, spawns: 1, timeout: "2m",
		stdioFaults: map[string]string{
			// It retries a server that died at start once, then runs
			// without its tools.
			"client stdio server crash loop at start": "pass exit=0 writes=0 mcp_calls=0 initial=1 follow_ups=0 paths=[/v1/messages] spawns=2 unoffered",
			// It tells the model the call failed ("Connection closed",
			// is_error), the model asks again, and Claude Code spawns
			// the server again for the new call, which writes a second
			// time: the finding the scenario proves.
			askedAgain: "fail exit=0 writes=2 mcp_calls=2 initial=1 follow_ups=2 paths=[/v1/messages] spawns=2",
		},
		told: map[string]told{
			"client stdio server exits after executing": {Error: true, Text: "Connection closed"},
			askedAgain: {Error: true, Text: "Connection closed", Again: 1},
			"client stdio server exits before executing": {Error: true, Text: "Connection closed"},
			"client stdio server hangs after executing":  {Error: true, Text: `MCP server "ledger" tool "commit_write" timed out after 5s`},
		},
	},
	{
		file:  "codex-stdio.yaml",
		needs: []string{"clients/node_modules/.bin/codex"}, version: []string{"node_modules/.bin/codex", "--version"}, node: true,
		offered: "mcp__ledger.commit_write", endpoint: "/v1/responses",
		followUpsOnce: 2, followUpsAlways: 10,
		stdio: true, spawns: 1, timeout: "2m",
		// A function output has no error flag: the failure is in the
		// text. The model asks again; the server is not spawned again and
		// the new call fails at once ("Transport closed").
		told: map[string]told{
			"client stdio server exits after executing": {Text: "tool call failed for `ledger/commit_write` Caused by: Transport closed"},
			askedAgain: {Text: "tool call failed for `ledger/commit_write` Caused by: Transport closed", Again: 1},
			"client stdio server exits before executing": {Text: "tool call failed for `ledger/commit_write` Caused by: Transport closed"},
			"client stdio server hangs after executing":  {Text: "tool call failed for `ledger/commit_write` Caused by: timed out awaiting tools/call after 5s"},
		},
	},
	{
		file:  "gemini-cli-stdio.yaml",
		needs: []string{"clients/node_modules/.bin/gemini"}, version: []string{"node_modules/.bin/gemini", "--version"}, node: true,
		offered: "mcp_ledger_commit_write", endpoint: geminiPath,
		followUpsOnce: 2, followUpsAlways: 2, timeout: "2m",
		stdio: true, spawns: 1,
		// As over HTTP (gemini-cli.yaml).
		gemini: map[string]string{
			"gemini stream error on the follow-up": "pass exit=0 writes=1 mcp_calls=1 initial=1 follow_ups=2 paths=[" + geminiPath + "] spawns=1",
			"gemini follow-up stream cut":          "pass exit=1 writes=1 mcp_calls=1 initial=1 follow_ups=1 paths=[" + geminiPath + "] spawns=1",
		},
		// The result quotes the call and the MCP error ("MCP error
		// -32000: Connection closed", "MCP error -32001: Request timed
		// out") past the 200 characters the history keeps. The model asks
		// again; the server is not spawned again and the new call fails
		// at once.
		told: map[string]told{
			"client stdio server exits after executing": {Error: true, Text: "MCP tool 'commit_write' reported tool error for function call"},
			askedAgain: {Error: true, Text: "MCP tool 'commit_write' reported tool error for function call", Again: 1},
			"client stdio server exits before executing": {Error: true, Text: "MCP tool 'commit_write' reported tool error for function call"},
			"client stdio server hangs after executing":  {Error: true, Text: "MCP tool 'commit_write' reported tool error for function call"},
		},
	},
	{
		file:  "openai-agents-stdio.yaml",
		needs: []string{"clients/openai-agents-stdio.mjs", "clients/node_modules/@openai/agents/package.json"}, node: true,
		offered: "commit_write", endpoint: "/v1/responses",
		followUpsOnce: 2, followUpsAlways: 3,
		// The MCP client's version negotiation (mode auto) probes a first
		// process with server/discover, closes it and opens its session
		// on a second.
		stdio: true, spawns: 2, timeout: "2m",
		// Every process fault ends the run with the MCP client's error
		// (exit 1) before any follow-up: the agent lists the server's
		// tools again before the next model call, on a connection that
		// is gone ("Not connected", "Connection closed"), or the call's
		// timeout is thrown ("Request timed out"). After an answer it
		// had, the run fails too: the tool ran, the user is told it
		// failed (a finding: a user who retries writes again).
		stdioFaults: map[string]string{
			"client stdio server exits after executing": "pass exit=1 writes=1 mcp_calls=1 initial=1 follow_ups=0 paths=[/v1/responses] spawns=2",
			askedAgain: "pass exit=1 writes=1 mcp_calls=1 initial=1 follow_ups=0 paths=[/v1/responses] spawns=2",
			"client stdio server exits before executing": "pass exit=1 writes=0 mcp_calls=1 initial=1 follow_ups=0 paths=[/v1/responses] spawns=2",
			"client stdio server exits after answering":  "fail exit=1 writes=1 mcp_calls=1 initial=1 follow_ups=0 paths=[/v1/responses] spawns=2",
			"client stdio server hangs after executing":  "pass exit=1 writes=1 mcp_calls=1 initial=1 follow_ups=0 paths=[/v1/responses] spawns=2",
			// connect() fails: no model call at all.
			"client stdio server crash loop at start": "pass exit=1 writes=0 mcp_calls=0 initial=0 follow_ups=0 paths=[] spawns=2 unoffered",
		},
		// The model is told nothing: the run ends first.
		told: map[string]told{
			"client stdio server exits after executing": noFollowUp,
			askedAgain: noFollowUp,
			"client stdio server exits before executing": noFollowUp,
			"client stdio server exits after answering":  noFollowUp,
			"client stdio server hangs after executing":  noFollowUp,
		},
	},
}

// httpOnly are the client scenarios whose faults act on the Streamable
// HTTP exchange (session expiry, 401), which over stdio only the
// ledger-stdio process sees: the runner skips them on a target that speaks
// MCP over stdio only, and says so, naming them.
var httpOnly = []string{
	"client mcp session expired after the call ran",
	"client mcp tools/call refused 401",
}

// installed says why c cannot run here, or "" when it can.
func (c realClient) installed() string {
	if c.node {
		if _, err := exec.LookPath("node"); err != nil {
			return "node is not on PATH"
		}
	}
	for _, n := range c.needs {
		if _, err := os.Stat(n); err != nil {
			return fmt.Sprintf("%s is not installed (make clients, or npm ci --prefix targets/clients): %v", n, err)
		}
	}
	if len(c.version) > 0 {
		ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
		defer cancel()
		cmd := exec.CommandContext(ctx, c.version[0], c.version[1:]...)
		cmd.Dir = "clients"
		if out, err := cmd.CombinedOutput(); err != nil {
			return fmt.Sprintf("%s does not start (was its native optional dependency installed?): %v: %s", c.version[0], err, bytes.TrimSpace(out))
		}
	}
	return ""
}

// savedRun is the part of `replaycheck run --json` these tests read.
type savedRun struct {
	Results []savedResult
}

// savedResult is one scenario's result in a savedRun.
type savedResult struct {
	History struct {
		Scenario, Target string
		Requests         []struct {
			Client *struct {
				Exit   int
				Stdout string
				Stderr string
				RunDir string `json:"run_dir"`
			}
			Paths []string
		}
		Upstream []struct {
			At      string
			Kind    string
			Offered []string
			Calls   []struct {
				Tool     string
				AgainFor string `json:"again_for"`
			}
			Results []struct {
				Error bool
				Text  string
			}
		}
		MCP          []struct{ Kind string }
		TargetEvents []struct {
			Kind    string
			Life    int
			At      string
			Exit    *int
			Success bool
		} `json:"target_events"`
		Unattributed json.RawMessage
	}
	Verdict  string
	Verdicts []struct{ Check, Kind, Status, Message string }
	Counts   struct {
		Writes   int
		Initial  int
		FollowUp int `json:"follow_up"`
		MCPCalls int `json:"mcp_calls"`
	}
}

// TestRealClients runs the default suite (scenarios/clients and
// scenarios/gemini apply) on each shipped target of a real client (Claude
// Code, Codex CLI, an OpenAI Agents SDK agent, an AI SDK agent on Chat
// Completions and on Gemini, Gemini CLI, a @google/genai agent unstreamed
// and streamed), the Gemini scenarios skipped as not applicable on the
// clients that do not stream Gemini, each client unmodified and with its
// own prompt, inside a network namespace
// that has only loopback, so the fakes and the client talk over it and
// nothing can leave. Every run is attributed by the addresses it was given:
// one write per scenario (none when the ledger refused the call with 401),
// every rule passes, the error surfaces as the client's non-zero exit, no
// traffic is left unattributed, and the model calls show the client's own
// retry policy; the MCP fault scenarios show that no client sends a call
// again after its session was lost once the tool had run. A client that is not installed (make
// clients) or a machine without unprivileged user namespaces skips.
func TestRealClients(t *testing.T) {
	if testing.Short() {
		t.Skip("real clients take about 40 s; not in -short")
	}
	if err := targettest.LoopbackNamespace(); err != nil {
		t.Skipf("no loopback-only network namespace: %v", err)
	}
	for _, c := range realClients {
		t.Run(c.file, func(t *testing.T) {
			if why := c.installed(); why != "" {
				t.Skip(why)
			}
			t.Parallel()
			wantCode := 0
			for _, w := range c.gemini {
				if strings.HasPrefix(w, "fail ") {
					wantCode = 1 // a rule is broken
				}
			}
			// The default suite, as a user runs it first.
			saved, out := runInNamespace(t, c, nil, wantCode)
			want := map[string]string{
				"client no fault":             fmt.Sprintf("pass exit=0 writes=1 mcp_calls=1 initial=1 follow_ups=1 paths=[%s]", c.endpoint),
				"client follow-up 500 once":   fmt.Sprintf("pass exit=%d writes=1 mcp_calls=1 initial=1 follow_ups=%d paths=[%s]", c.exitOnce, c.followUpsOnce, c.endpoint),
				"client follow-up 500 always": fmt.Sprintf("pass exit=1 writes=1 mcp_calls=1 initial=1 follow_ups=%d paths=[%s]", c.followUpsAlways, c.endpoint),
				// The call is not sent again after the session was lost
				// once it had run, nor after a 401 it cannot answer.
				"client mcp session expired after the call ran": fmt.Sprintf("pass exit=0 writes=1 mcp_calls=1 initial=1 follow_ups=1 paths=[%s]", c.endpoint),
				"client mcp tools/call refused 401":             fmt.Sprintf("pass exit=0 writes=0 mcp_calls=1 initial=1 follow_ups=1 paths=[%s]", c.endpoint),
			}
			if c.gemini == nil {
				maps.Copy(want, notGemini(fmt.Sprintf("paths=[%s]", c.endpoint)))
			}
			maps.Copy(want, c.mcp)
			maps.Copy(want, c.gemini)
			got := summarize(t, c, saved, want)
			if diff := cmp.Diff(want, got); diff != "" {
				t.Errorf("results (-want +got):\n%s\n%s", diff, out)
			}
		})
	}
}

// TestRealClientsStdio runs the default suite (scenarios/clients,
// scenarios/stdio and scenarios/gemini apply) on each shipped target of a real client that spawns the ledger over stdio (Claude
// Code, Codex CLI, Gemini CLI, an OpenAI Agents SDK agent with
// MCPServerStdio), unmodified, inside a loopback-only network namespace.
// The runner skips the client scenarios whose faults act on the Streamable
// HTTP exchange, since the target speaks MCP over stdio only, and says so
// (httpOnly). On the others it holds what TestRealClients holds over HTTP
// (the same writes, exits and model calls) and the ledger-stdio processes
// each client starts (spawns). On the stdio process faults it holds what
// each client does today: by default it tells the model the call's
// transport error (or, after an answer or a malformed line, the answer) and
// exits 0, without sending the call again and without respawning the
// server; in a crash loop it runs without the ledger's tools; when the
// model asks again after the call was reported failed, the new call fails
// at once on the dead server. Exceptions are in stdioFaults. It also holds
// what the first follow-up told the model (told), read from the history.
func TestRealClientsStdio(t *testing.T) {
	if testing.Short() {
		t.Skip("real clients over stdio take about a minute; not in -short")
	}
	if err := targettest.LoopbackNamespace(); err != nil {
		t.Skipf("no loopback-only network namespace: %v", err)
	}
	for _, c := range stdioClients {
		t.Run(c.file, func(t *testing.T) {
			if why := c.installed(); why != "" {
				t.Skip(why)
			}
			t.Parallel()
			wantCode := 0
			for _, w := range c.stdioFaults {
				if strings.HasPrefix(w, "fail ") {
					wantCode = 1 // a rule is broken
				}
			}
			for _, w := range c.gemini {
				if strings.HasPrefix(w, "fail ") {
					wantCode = 1
				}
			}
			// The default suite, as a user runs it first.
			saved, out := runInNamespace(t, c, nil, wantCode)
			name := strings.TrimSuffix(c.file, filepath.Ext(c.file))
			skipped := fmt.Sprintf("%s does not speak MCP over http: %q, %q", name, httpOnly[0], httpOnly[1])
			if !strings.Contains(out, skipped) {
				t.Errorf("output does not say the HTTP-only client scenarios were skipped (%q):\n%s", skipped, out)
			}
			tail := fmt.Sprintf("paths=[%s] spawns=%d", c.endpoint, c.spawns)
			want := map[string]string{
				"client no fault":             "pass exit=0 writes=1 mcp_calls=1 initial=1 follow_ups=1 " + tail,
				"client follow-up 500 once":   fmt.Sprintf("pass exit=%d writes=1 mcp_calls=1 initial=1 follow_ups=%d %s", c.exitOnce, c.followUpsOnce, tail),
				"client follow-up 500 always": fmt.Sprintf("pass exit=1 writes=1 mcp_calls=1 initial=1 follow_ups=%d %s", c.followUpsAlways, tail),
				// The call is not sent again, on this server or a new one;
				// the model is told the transport error and the client
				// exits 0.
				"client stdio server exits after executing":  "pass exit=0 writes=1 mcp_calls=1 initial=1 follow_ups=1 " + tail,
				"client stdio server exits before executing": "pass exit=0 writes=0 mcp_calls=1 initial=1 follow_ups=1 " + tail,
				"client stdio server hangs after executing":  "pass exit=0 writes=1 mcp_calls=1 initial=1 follow_ups=1 " + tail,
				// The answer it has is used.
				"client stdio server exits after answering":   "pass exit=0 writes=1 mcp_calls=1 initial=1 follow_ups=1 " + tail,
				"client stdio server writes a malformed line": "pass exit=0 writes=1 mcp_calls=1 initial=1 follow_ups=1 " + tail,
				// It gives up on the server and runs without its tools
				// (the scripted model, offered none, answers done).
				"client stdio server crash loop at start": fmt.Sprintf("pass exit=0 writes=0 mcp_calls=0 initial=1 follow_ups=0 %s unoffered", tail),
				// Told the call failed, the model asks again; the client
				// does not spawn the server again for it, and the new
				// call fails at once.
				askedAgain: "pass exit=0 writes=1 mcp_calls=1 initial=1 follow_ups=2 " + tail,
			}
			if c.gemini == nil {
				maps.Copy(want, notGemini(tail))
			}
			maps.Copy(want, c.gemini)
			maps.Copy(want, c.stdioFaults)
			got := summarize(t, c, saved, want)
			if diff := cmp.Diff(want, got); diff != "" {
				t.Errorf("results (-want +got):\n%s\n%s", diff, out)
			}
			wantTold := map[string]told{
				"client no fault":                             answered,
				"client follow-up 500 once":                   answered,
				"client follow-up 500 always":                 answered,
				"client stdio server exits after answering":   answered,
				"client stdio server writes a malformed line": answered,
				"client stdio server crash loop at start":     noFollowUp,
				// Skipped or not, the tool's answer came back.
				geminiScenarios[0]: answered,
				geminiScenarios[1]: answered,
			}
			maps.Copy(wantTold, c.told)
			if diff := cmp.Diff(wantTold, toldModel(saved, wantTold)); diff != "" {
				t.Errorf("what the first follow-up told the model (-want +got):\n%s", diff)
			}
		})
	}
}

// toldModel returns, per scenario of saved, what its first follow-up told
// the model about the first call, with the re-asks of the run: the text
// cut to want's text for the scenario where it contains it, so a diff
// shows the whole text only where it does not.
func toldModel(saved savedRun, want map[string]told) map[string]told {
	got := map[string]told{}
	for _, r := range saved.Results {
		h := r.History
		g := noFollowUp
		for _, u := range h.Upstream {
			if u.Kind == "follow_up" && g == noFollowUp {
				g = told{Text: "(no result)"}
				if len(u.Results) > 0 {
					g = told{Error: u.Results[0].Error, Text: u.Results[0].Text}
				}
			}
		}
		for _, u := range h.Upstream {
			for _, c := range u.Calls {
				if c.AgainFor != "" {
					g.Again++
				}
			}
		}
		if w := want[h.Scenario].Text; w != "" && strings.Contains(g.Text, w) {
			g.Text = w
		}
		got[h.Scenario] = g
	}
	return got
}

// summarize returns each result of saved as a line keyed by its scenario:
// "VERDICT exit=N writes=N mcp_calls=N initial=N follow_ups=N paths=[…]",
// with " spawns=N" for a client with the ledger over stdio (c.stdio) and
// " unoffered" when no model request offered c.offered. It reports every
// check that did not pass in a scenario want does not expect to fail,
// unattributed traffic, a result on another target, and a no-fault run
// whose stdout lacks the model's answer.
func summarize(t *testing.T, c realClient, saved savedRun, want map[string]string) map[string]string {
	t.Helper()
	name := c.file[:len(c.file)-len(filepath.Ext(c.file))]
	got := map[string]string{}
	for _, r := range saved.Results {
		h := r.History
		if h.Target != name {
			t.Errorf("result on target %q, want %q", h.Target, name)
		}
		exit, paths := "none", []string(nil)
		if len(h.Requests) == 1 && h.Requests[0].Client != nil {
			exit, paths = fmt.Sprint(h.Requests[0].Client.Exit), h.Requests[0].Paths
		}
		line := fmt.Sprintf("%s exit=%s writes=%d mcp_calls=%d initial=%d follow_ups=%d paths=%v",
			r.Verdict, exit, r.Counts.Writes, r.Counts.MCPCalls, r.Counts.Initial, r.Counts.FollowUp, paths)
		if c.stdio {
			spawns := 0
			for _, e := range h.MCP {
				if e.Kind == "spawn" {
					spawns++
				}
			}
			line += fmt.Sprintf(" spawns=%d", spawns)
		}
		offered := false
		for _, u := range h.Upstream {
			offered = offered || slices.Contains(u.Offered, c.offered)
		}
		if !offered {
			line += " unoffered"
		}
		got[h.Scenario] = line
		for _, v := range r.Verdicts {
			switch {
			case v.Status == "skipped" && !strings.Contains(v.Message, "this scenario's faults act on Gemini generateContent, streamed"):
				t.Errorf("%s: skipped for another reason: %s", h.Scenario, v.Message)
			case v.Status != "pass" && v.Status != "skipped" && !strings.HasPrefix(want[h.Scenario], "fail "):
				t.Errorf("%s: %s %s is %s: %s", h.Scenario, v.Kind, v.Check, v.Status, v.Message)
			}
		}
		if len(h.Unattributed) > 0 && string(h.Unattributed) != "null" {
			t.Errorf("%s: unattributed traffic: %s", h.Scenario, h.Unattributed)
		}
		if h.Scenario == "client no fault" && len(h.Requests) == 1 && h.Requests[0].Client != nil {
			if s := h.Requests[0].Client.Stdout; !strings.Contains(s, "done") {
				t.Errorf("%s: stdout lacks the model's answer done: %q", h.Scenario, s)
			}
		}
	}
	return got
}

// runInNamespace runs `replaycheck run PATHS --target targets/FILE --json`
// inside `unshare -rn` (loopback only) from the repository root, checks its
// exit code is wantCode, and returns the JSON report and the output.
func runInNamespace(t *testing.T, c realClient, paths []string, wantCode int) (savedRun, string) {
	t.Helper()
	js := filepath.Join(t.TempDir(), "run.json")
	args := append([]string{"run"}, paths...)
	args = append(args, "--target", "targets/"+c.file, "--json", js, "--parallel", "3")
	if c.timeout != "" {
		args = append(args, "--timeout", c.timeout)
	}
	code, out := inNamespace(t, 4*time.Minute, args...)
	if code != wantCode {
		t.Errorf("exit %d, want %d (every scenario passes, but those expected to fail)\n%s", code, wantCode, out)
	}
	b, err := os.ReadFile(js)
	if err != nil {
		t.Fatalf("no JSON report: %v\n%s", err, out)
	}
	var saved savedRun
	if err := json.Unmarshal(b, &saved); err != nil {
		t.Fatal(err)
	}
	return saved, out
}
