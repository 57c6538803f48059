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
	// protocol is the MCP protocol version its tools/calls are served at
	// when the ledger serves both generations (the run's no-fault
	// scenario): the version it negotiates by default.
	protocol string
	// mcp2026 is what the MCP 2026-07-28 client scenarios
	// (scenarios/clients/mcp2026-*.yaml) show on a client that differs from
	// a correct client (correct2026): a "fail" is a finding the scenario
	// proves, an "unknown" a client that cannot reach a ledger serving
	// 2026-07-28 alone (initializeOnly).
	mcp2026 map[string]string
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
		broken2025:                                      "pass exit=1 writes=1 mcp_calls=1 initial=1 follow_ups=0 paths=[" + path + "]",
	}
}

// The MCP 2026-07-28 client scenarios (scenarios/clients/mcp2026-*.yaml).
const (
	broken2026   = "client mcp 2026-07-28 stream broken after execute"
	broken2025   = "client mcp 2025-11-25 stream broken after execute"
	refused2026  = "client mcp 2026-07-28 keyed call refused before execute"
	reset2026    = "client mcp 2026-07-28 keyed call reset before execute"
	cutHeaders26 = "client mcp 2026-07-28 response stream cut after its headers"
)

// correct2026 is what the MCP 2026-07-28 client scenarios show on a correct
// client calling path: a call without a key whose answer was lost is held
// and the model told (one write, exit 0), on both generations; a keyed call
// lost before it ran is re-issued with its key (two calls, one write).
func correct2026(path string) map[string]string {
	held := "pass exit=0 writes=1 mcp_calls=1 initial=1 follow_ups=1 paths=[" + path + "]"
	reissued := "pass exit=0 writes=1 mcp_calls=2 initial=1 follow_ups=1 paths=[" + path + "]"
	return map[string]string{broken2026: held, broken2025: held, cutHeaders26: held, refused2026: reissued, reset2026: reissued}
}

// lostAndHung is what the 2026-07-28 scenarios show on a client that speaks
// 2026-07-28 but does not re-issue a keyed call lost before it ran (the
// model is told the error: a lost call, 0 writes) and waits on a response
// stream cut after its headers until the run's deadline kills it.
func lostAndHung(path string) map[string]string {
	lost := "fail exit=0 writes=0 mcp_calls=1 initial=1 follow_ups=1 paths=[" + path + "]"
	return map[string]string{
		refused2026:  lost,
		reset2026:    lost,
		cutHeaders26: "fail exit=-1 writes=1 mcp_calls=1 initial=1 follow_ups=0 paths=[" + path + "]",
	}
}

// initializeOnly is what the 2026-07-28 scenarios show on a client that
// speaks only initialize-era MCP: the ledger pinned to 2026-07-28 does not
// serve it, so it never calls the tool and the rules cannot judge; tail is
// the rest of its line (exit code and model calls: some clients end the
// run, others run on without the ledger's tools).
func initializeOnly(tail string) map[string]string {
	out := map[string]string{}
	for _, s := range []string{broken2026, refused2026, reset2026, cutHeaders26} {
		out[s] = "unknown " + tail
	}
	return out
}

var realClients = []realClient{
	{
		file:  "claude-code.yaml",
		needs: []string{"clients/node_modules/.bin/claude"}, version: []string{"node_modules/.bin/claude", "--version"},
		offered: "mcp__ledger__commit_write", endpoint: "/v1/messages",
		// CLAUDE_CODE_MAX_RETRIES=2 in the target file; Retry-After is not
		// honoured on a 500.
		followUpsOnce: 2, followUpsAlways: 3,
		// 2026-07-28 (server/discover). It holds a lost answer on both
		// generations (1 write), but tells the model a keyed call lost
		// before it ran failed instead of re-issuing it, and waits on a
		// stream cut after its headers until it is killed.
		protocol: "2026-07-28", mcp2026: lostAndHung("/v1/messages"),
	},
	{
		file:  "codex.yaml",
		needs: []string{"clients/node_modules/.bin/codex"}, version: []string{"node_modules/.bin/codex", "--version"}, node: true,
		offered: "mcp__ledger.commit_write", endpoint: "/v1/responses",
		// request_max_retries 4 inside stream_max_retries 1: 5 × 2 attempts.
		followUpsOnce: 2, followUpsAlways: 10,
		// It initializes with 2025-06-18; refused by a ledger serving
		// 2026-07-28 alone, it runs on without the ledger's tools.
		protocol: "2025-06-18", mcp2026: initializeOnly("exit=0 writes=0 mcp_calls=0 initial=1 follow_ups=0 paths=[/v1/responses] unoffered"),
	},
	{
		file:  "openai-agents.yaml",
		needs: []string{"clients/openai-agents.mjs", "clients/node_modules/@openai/agents/package.json"}, node: true,
		offered: "commit_write", endpoint: "/v1/responses",
		followUpsOnce: 2, followUpsAlways: 3,
		// 2026-07-28 (@modelcontextprotocol/client, version negotiation
		// auto); as Claude Code on the 2026-07-28 scenarios.
		protocol: "2026-07-28", mcp2026: lostAndHung("/v1/responses"),
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
		// @ai-sdk/mcp initializes with 2025-11-25; refused by a ledger
		// serving 2026-07-28 alone, createMCPClient throws (exit 1).
		protocol: "2025-11-25", mcp2026: initializeOnly("exit=1 writes=0 mcp_calls=0 initial=0 follow_ups=0 paths=[] unoffered"),
	},
	{
		file:  "ai-sdk-google.yaml",
		needs: []string{"clients/ai-sdk-google.mjs", "clients/node_modules/ai/package.json", "clients/node_modules/@ai-sdk/google/package.json"}, node: true,
		offered: "commit_write", endpoint: geminiPath,
		followUpsOnce: 2, followUpsAlways: 3,
		protocol: "2025-11-25", mcp2026: initializeOnly("exit=1 writes=0 mcp_calls=0 initial=0 follow_ups=0 paths=[] unoffered"),
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
		// As Codex: 2025-06-18, and without the ledger's tools where it
		// is served 2026-07-28 alone.
		protocol: "2025-06-18", mcp2026: initializeOnly("exit=0 writes=0 mcp_calls=0 initial=1 follow_ups=0 paths=[" + geminiPath + "] unoffered"),
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
		// @modelcontextprotocol/sdk initializes with 2025-11-25 and
		// throws where the ledger serves 2026-07-28 alone.
		protocol: "2025-11-25", mcp2026: initializeOnly("exit=1 writes=0 mcp_calls=0 initial=0 follow_ups=0 paths=[] unoffered"),
	},
	{
		file:  "google-genai-stream.yaml",
		needs: googleGenAINeeds, node: true,
		offered: "commit_write", endpoint: geminiPath,
		followUpsOnce: 1, followUpsAlways: 1, exitOnce: 1,
		mcp:      googleGenAIMCP(geminiPath),
		protocol: "2025-11-25", mcp2026: initializeOnly("exit=1 writes=0 mcp_calls=0 initial=0 follow_ups=0 paths=[] unoffered"),
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
		stdio: true, spawns: 1, timeout: "2m", protocol: "2026-07-28",
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
		stdio: true, spawns: 1, timeout: "2m", protocol: "2025-06-18",
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
		stdio: true, spawns: 1, protocol: "2025-06-18",
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
		stdio: true, spawns: 2, timeout: "2m", protocol: "2026-07-28",
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

// httpOnly are the first five client scenarios whose faults act on the
// Streamable HTTP exchange (session expiry, 401, a broken response
// stream), which over stdio only the ledger-stdio process sees: the runner
// skips them on a target that speaks MCP over stdio only, and says so,
// naming the first five in their files' order.
var httpOnly = []string{
	"client mcp session expired after the call ran",
	"client mcp tools/call refused 401",
	refused2026, reset2026, cutHeaders26,
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

// savedTargetEvent is a kill or a resume of the target in a savedResult.
type savedTargetEvent struct {
	Kind    string
	Life    int
	At      string
	Exit    *int
	Success bool
	// KilledAfterGrace: a SIGTERM kill ran out of its grace.
	KilledAfterGrace bool `json:"killed_after_grace"`
}

// savedResult is one scenario's result in a savedRun.
type savedResult struct {
	History struct {
		Scenario, Target, Token string
		Requests                []struct {
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
		MCP []struct {
			Kind     string
			Protocol string
		}
		TargetEvents []savedTargetEvent `json:"target_events"`
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
// again after its session was lost once the tool had run. It holds the MCP
// protocol each client's tools/calls are served at without a pin
// (protocol), and what the MCP 2026-07-28 client scenarios show: a correct
// client (correct2026) holds a call whose answer was lost and re-issues a
// keyed call lost before it ran; where a shipped client differs, the
// failure or unknown is the finding, pinned in mcp2026. A client that is
// not installed (make clients) or a machine without unprivileged user
// namespaces skips.
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
			for _, w := range slices.Concat(slices.Collect(maps.Values(c.gemini)), slices.Collect(maps.Values(c.mcp2026))) {
				if strings.HasPrefix(w, "fail ") || strings.HasPrefix(w, "unknown ") {
					wantCode = 1 // a rule is broken, or could not judge
				}
			}
			// The default suite, as a user runs it first.
			saved, out := runInNamespace(t, c, nil, wantCode)
			if got := callsAt(saved, "client no fault"); got != c.protocol {
				t.Errorf("tools/calls served at MCP %q without a pin, want %q", got, c.protocol)
			}
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
			maps.Copy(want, correct2026(c.endpoint))
			maps.Copy(want, c.mcp)
			maps.Copy(want, c.mcp2026)
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
			if got := callsAt(saved, "client no fault"); got != c.protocol {
				t.Errorf("tools/calls served at MCP %q without a pin, want %q", got, c.protocol)
			}
			name := strings.TrimSuffix(c.file, filepath.Ext(c.file))
			// The runner names the first five, then counts the rest.
			skipped := fmt.Sprintf("%s does not speak MCP over http: %q, %q, %q, %q, %q, … ", name,
				httpOnly[0], httpOnly[1], httpOnly[2], httpOnly[3], httpOnly[4])
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

// callsAt returns the MCP protocol versions the tools/calls of scenario in
// saved were served at, joined by ", " ("" when it made none).
func callsAt(saved savedRun, scenario string) string {
	var at []string
	for _, r := range saved.Results {
		if r.History.Scenario != scenario {
			continue
		}
		for _, e := range r.History.MCP {
			if e.Kind == "call" && !slices.Contains(at, e.Protocol) {
				at = append(at, e.Protocol)
			}
		}
	}
	return strings.Join(at, ", ")
}

// summarize returns each result of saved as a line keyed by its scenario:
// "VERDICT exit=N writes=N mcp_calls=N initial=N follow_ups=N paths=[…]",
// with " spawns=N" for a client with the ledger over stdio (c.stdio) and
// " unoffered" when no model request offered c.offered. It reports every
// check that did not pass in a scenario want does not expect to fail or
// not to judge,
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
			case v.Status != "pass" && v.Status != "skipped" && !strings.HasPrefix(want[h.Scenario], "fail ") && !strings.HasPrefix(want[h.Scenario], "unknown "):
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
	// The bound is for a hang, not a pace: every scenario has its own
	// deadline, and a suite of one client on a busy machine (four busy
	// loops beside make test) took over four minutes.
	code, out := inNamespace(t, 10*time.Minute, args...)
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

// TestRealClientsTable holds the real-clients table of
// docs/tutorials/your-agent.md to the MCP protocol TestRealClients pins for
// each client (realClient.protocol): the row linking a client's target file
// ends with that version in its MCP protocol column.
func TestRealClientsTable(t *testing.T) {
	src, err := os.ReadFile("../docs/tutorials/your-agent.md")
	if err != nil {
		t.Fatal(err)
	}
	got, want := map[string]string{}, map[string]string{}
	for _, c := range realClients {
		want[c.file] = c.protocol
		link := fmt.Sprintf("[%s](../../targets/%s)", c.file, c.file)
		for _, line := range strings.Split(string(src), "\n") {
			if !strings.HasPrefix(line, "| ") || !strings.Contains(line, link) {
				continue
			}
			cells := strings.Split(strings.Trim(line, "| "), " | ")
			got[c.file] = cells[len(cells)-1]
		}
	}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("MCP protocol column of the real-clients table in docs/tutorials/your-agent.md (-want +got):\n%s", diff)
	}
}
