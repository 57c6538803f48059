package main

import (
	"bytes"
	"context"
	"errors"
	"flag"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/replaycheck/replaycheck/fakes/ledger"
	"github.com/replaycheck/replaycheck/fakes/upstream"
	"github.com/replaycheck/replaycheck/internal/runtoken"
	"github.com/replaycheck/replaycheck/internal/wire"
)

// testTimeout bounds every run in a test.
const testTimeout = 30 * time.Second

// testKey is the dummy API key; no output may contain it.
const testKey = "sk-replaycheck-test-secret"

// rig is the two fakes behind one loopback HTTP server: the upstream fake at
// "/" and the ledger at "/mcp".
type rig struct {
	upstream *upstream.Server
	ledger   *ledger.Server
	url      string
}

func newRig(t *testing.T) *rig {
	t.Helper()
	up, err := upstream.New(upstream.Config{})
	if err != nil {
		t.Fatalf("upstream.New: %v", err)
	}
	led, err := ledger.New(ledger.Config{})
	if err != nil {
		t.Fatalf("ledger.New: %v", err)
	}
	mux := http.NewServeMux()
	mux.Handle("/", up)
	mux.Handle("/mcp", led)
	srv := httptest.NewServer(mux)
	t.Cleanup(srv.Close)
	t.Cleanup(func() {
		if err := led.Close(); err != nil {
			t.Errorf("ledger Close: %v", err)
		}
	})
	return &rig{upstream: up, ledger: led, url: srv.URL}
}

// config returns the agent configuration a client target would get for token.
func (r *rig) config(token string) config {
	return config{
		BaseURL:  r.url + "/v1",
		APIKey:   testKey,
		MCPURL:   r.url + "/mcp",
		Prompt:   "Call commit_write once with entry alpha-" + token + ", then reply done.",
		Token:    token,
		Model:    defaultModel,
		Timeout:  testTimeout,
		MaxTurns: defaultMaxTurns,
	}
}

func parseFaults(t *testing.T, specs ...string) []upstream.Fault {
	t.Helper()
	var faults []upstream.Fault
	for _, s := range specs {
		f, err := upstream.ParseFault(s)
		if err != nil {
			t.Fatalf("ParseFault(%s): %v", s, err)
		}
		faults = append(faults, f)
	}
	return faults
}

const (
	follow500Once   = `{on: follow_up, respond: {status: 500, headers: {retry-after-ms: "1"}}, times: once}`
	follow500Always = `{on: follow_up, respond: {status: 500, headers: {retry-after-ms: "1"}}, times: always}`
)

// TestRun drives the agent against the real fakes and counts writes and model
// calls exactly. The SDK's default retries (2) repeat only the failed model
// call; the naive wrapper re-runs the tool with every attempt.
func TestRun(t *testing.T) {
	tests := []struct {
		name       string
		stream     bool
		naiveRetry int
		faults     []string // upstream faults
		mcpFaults  []string // ledger faults
		wantErr    string   // "" = success; else a substring of the error
		wantWrites int
		want       wire.UpstreamCounts
	}{
		{
			name:       "no fault",
			wantWrites: 1,
			want:       wire.UpstreamCounts{Initial: 1, FollowUp: 1, Outcomes: outcomeCounts(map[string]int{"initial forwarded": 1, "follow_up forwarded": 1})},
		},
		{
			name:       "no fault streamed",
			stream:     true,
			wantWrites: 1,
			want:       wire.UpstreamCounts{Initial: 1, FollowUp: 1, Outcomes: outcomeCounts(map[string]int{"initial forwarded": 1, "follow_up forwarded": 1})},
		},
		{
			name:       "follow-up 500 once: the SDK retries the follow-up alone",
			faults:     []string{follow500Once},
			wantWrites: 1,
			want:       wire.UpstreamCounts{Initial: 1, FollowUp: 2, Outcomes: outcomeCounts(map[string]int{"initial forwarded": 1, "follow_up injected_500": 1, "follow_up forwarded": 1})},
		},
		{
			name:       "follow-up 500 once streamed",
			stream:     true,
			faults:     []string{follow500Once},
			wantWrites: 1,
			want:       wire.UpstreamCounts{Initial: 1, FollowUp: 2, Outcomes: outcomeCounts(map[string]int{"initial forwarded": 1, "follow_up injected_500": 1, "follow_up forwarded": 1})},
		},
		{
			name:       "follow-up 500 always: the error surfaces after one write",
			faults:     []string{follow500Always},
			wantErr:    "model call 2 (follow-up)",
			wantWrites: 1,
			want:       wire.UpstreamCounts{Initial: 1, FollowUp: 3, Outcomes: outcomeCounts(map[string]int{"initial forwarded": 1, "follow_up injected_500": 3})},
		},
		{
			name:       "follow-up 500 always with naive retry 2: the tool runs three times",
			naiveRetry: 2,
			faults:     []string{follow500Always},
			wantErr:    "all 3 attempts failed",
			wantWrites: 3,
			want:       wire.UpstreamCounts{Initial: 3, FollowUp: 9, Outcomes: outcomeCounts(map[string]int{"initial forwarded": 3, "follow_up injected_500": 9})},
		},
		{
			name:       "follow-up 500 once with naive retry 2: the SDK's retry succeeds first",
			naiveRetry: 2,
			faults:     []string{follow500Once},
			wantWrites: 1,
			want:       wire.UpstreamCounts{Initial: 1, FollowUp: 2, Outcomes: outcomeCounts(map[string]int{"initial forwarded": 1, "follow_up injected_500": 1, "follow_up forwarded": 1})},
		},
		{
			name:       "streamed follow-up dropped with naive retry 1: the tool runs twice",
			stream:     true,
			naiveRetry: 1,
			faults:     []string{`{on: follow_up, drop: {after: headers}}`},
			wantErr:    "all 2 attempts failed",
			wantWrites: 2,
			want:       wire.UpstreamCounts{Initial: 2, FollowUp: 2, Outcomes: outcomeCounts(map[string]int{"initial forwarded": 2, "follow_up dropped_stream": 2})},
		},
		{
			name:       "MCP answer lost after the write: the MCP client does not re-send tools/call",
			mcpFaults:  []string{`{tool: commit_write, drop_after_execute: {}}`},
			wantErr:    `calling tool commit_write on MCP server`,
			wantWrites: 1,
			want:       wire.UpstreamCounts{Initial: 1, Outcomes: outcomeCounts(map[string]int{"initial forwarded": 1})},
		},
		{
			name:       "MCP answer lost after the write with naive retry 1: the tool runs twice",
			naiveRetry: 1,
			mcpFaults:  []string{`{tool: commit_write, drop_after_execute: {}}`},
			wantErr:    "all 2 attempts failed",
			wantWrites: 2,
			want:       wire.UpstreamCounts{Initial: 2, Outcomes: outcomeCounts(map[string]int{"initial forwarded": 2})},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			r := newRig(t)
			tok := runtoken.Derive("examples/agent", t.Name())
			if err := r.upstream.Arm(tok, nil, parseFaults(t, tt.faults...)); err != nil {
				t.Fatalf("Arm: %v", err)
			}
			var mcpFaults []ledger.Fault
			for _, spec := range tt.mcpFaults {
				f, err := ledger.ParseFault(spec)
				if err != nil {
					t.Fatalf("ledger.ParseFault(%s): %v", spec, err)
				}
				mcpFaults = append(mcpFaults, f)
			}
			if err := r.ledger.Arm(tok, mcpFaults); err != nil {
				t.Fatalf("ledger Arm: %v", err)
			}
			cfg := r.config(tok)
			cfg.Stream = tt.stream
			cfg.NaiveRetry = tt.naiveRetry
			var stdout, stderr bytes.Buffer

			err := run(context.Background(), cfg, &stdout, &stderr)

			if tt.wantErr == "" {
				if err != nil {
					t.Fatalf("run: %v\nstderr:\n%s", err, stderr.String())
				}
				if diff := cmp.Diff("done\n", stdout.String()); diff != "" {
					t.Errorf("stdout (-want +got):\n%s", diff)
				}
			} else {
				if err == nil {
					t.Fatalf("run succeeded, want an error containing %q; stdout %q", tt.wantErr, stdout.String())
				}
				if !strings.Contains(err.Error(), tt.wantErr) {
					t.Errorf("error %q does not contain %q", err, tt.wantErr)
				}
				if stdout.Len() != 0 {
					t.Errorf("stdout = %q on failure, want nothing", stdout.String())
				}
			}
			led := r.ledger.Counts(tok)
			if diff := cmp.Diff(tt.wantWrites, led.Writes); diff != "" {
				t.Errorf("ledger writes (-want +got):\n%s", diff)
			}
			if diff := cmp.Diff(tt.wantWrites, led.CallsTotal()); diff != "" {
				t.Errorf("ledger tools/call count (-want +got):\n%s", diff)
			}
			if diff := cmp.Diff(tt.want, r.upstream.Counts(tok)); diff != "" {
				t.Errorf("upstream counts (-want +got):\n%s", diff)
			}
			for _, req := range r.upstream.Requests(tok) {
				if req.Stream != tt.stream {
					t.Errorf("%s %s request stream = %v, want %v", req.Path, req.Kind, req.Stream, tt.stream)
				}
			}
			for _, out := range []string{stdout.String(), stderr.String(), errString(err)} {
				if strings.Contains(out, testKey) {
					t.Errorf("output contains the API key: %q", out)
				}
			}
		})
	}
}

// An MCP isError result goes back to the model as the tool's answer; it is
// neither a failure nor a retry.
func TestRunToolIsError(t *testing.T) {
	r := newRig(t)
	tok := runtoken.Derive("examples/agent", t.Name())
	f, err := ledger.ParseFault(`{tool: commit_write, is_error: {message: "ledger is read-only"}}`)
	if err != nil {
		t.Fatal(err)
	}
	if err := r.ledger.Arm(tok, []ledger.Fault{f}); err != nil {
		t.Fatal(err)
	}
	cfg := r.config(tok)
	cfg.NaiveRetry = 2
	var stdout, stderr bytes.Buffer
	if err := run(context.Background(), cfg, &stdout, &stderr); err != nil {
		t.Fatalf("run: %v", err)
	}
	if diff := cmp.Diff("done\n", stdout.String()); diff != "" {
		t.Errorf("stdout (-want +got):\n%s", diff)
	}
	if !strings.Contains(stderr.String(), "error: ledger is read-only") {
		t.Errorf("stderr %q does not show the tool's error result", stderr.String())
	}
	got := r.ledger.Counts(tok)
	if diff := cmp.Diff(wire.MCPCounts{Calls: map[string]int{ledger.ToolCommitWrite: 1}, Protocols: []wire.MCPProtocol{wire.MCPProtocol20260728}}, got); diff != "" {
		t.Errorf("ledger counts (-want +got):\n%s", diff)
	}
}

// A model API that cannot be reached fails the run with a message naming the
// failed call, after the SDK's retries, without a write.
func TestRunUnreachableModel(t *testing.T) {
	r := newRig(t)
	// A server that closes every connection without answering, on a port no
	// one else can take while the test runs.
	dead := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
		conn, _, err := http.NewResponseController(w).Hijack()
		if err != nil {
			t.Errorf("hijack: %v", err)
			return
		}
		_ = conn.Close()
	}))
	t.Cleanup(dead.Close)
	deadURL := dead.URL
	tok := runtoken.Derive("examples/agent", t.Name())
	cfg := r.config(tok)
	cfg.BaseURL = deadURL + "/v1"
	var stdout, stderr bytes.Buffer
	err := run(context.Background(), cfg, &stdout, &stderr)
	if want := "model call 1 (initial) to " + cfg.BaseURL; err == nil || !strings.Contains(err.Error(), want) {
		t.Fatalf("run error = %v, want one containing %q", err, want)
	}
	if got := r.ledger.Counts(tok).Writes; got != 0 {
		t.Errorf("writes = %d, want 0", got)
	}
}

// An MCP server that cannot be reached fails the run naming its URL.
func TestRunUnreachableMCP(t *testing.T) {
	r := newRig(t)
	tok := runtoken.Derive("examples/agent", t.Name())
	cfg := r.config(tok)
	cfg.MCPURL = r.url + "/nope"
	var stdout, stderr bytes.Buffer
	err := run(context.Background(), cfg, &stdout, &stderr)
	if err == nil || !strings.Contains(err.Error(), "connecting to MCP server "+cfg.MCPURL) {
		t.Fatalf("run error = %v, want one naming the MCP URL", err)
	}
	if got := r.upstream.Counts(tok).Initial; got != 0 {
		t.Errorf("model calls = %d, want 0", got)
	}
}

// The overall deadline ends a run whose model never answers in time.
func TestRunTimeout(t *testing.T) {
	r := newRig(t)
	tok := runtoken.Derive("examples/agent", t.Name())
	if err := r.upstream.Arm(tok, nil, parseFaults(t, `{on: initial, delay: 5m}`)); err != nil {
		t.Fatal(err)
	}
	cfg := r.config(tok)
	cfg.Timeout = 200 * time.Millisecond
	var stdout, stderr bytes.Buffer
	err := run(context.Background(), cfg, &stdout, &stderr)
	if !errors.Is(err, context.DeadlineExceeded) {
		t.Fatalf("run error = %v, want context.DeadlineExceeded", err)
	}
}

func errString(err error) string {
	if err == nil {
		return ""
	}
	return err.Error()
}

func TestParseConfig(t *testing.T) {
	env := map[string]string{
		"OPENAI_BASE_URL":     "http://127.0.0.1:8765/v1",
		"OPENAI_API_KEY":      testKey,
		"REPLAYCHECK_MCP_URL": "http://127.0.0.1:8766/mcp",
		"REPLAYCHECK_PROMPT":  "Call commit_write once with entry alpha, then reply done.",
		"REPLAYCHECK_TOKEN":   "rc0123456789",
	}
	fromEnv := config{
		BaseURL:  "http://127.0.0.1:8765/v1",
		APIKey:   testKey,
		MCPURL:   "http://127.0.0.1:8766/mcp",
		Prompt:   "Call commit_write once with entry alpha, then reply done.",
		Token:    "rc0123456789",
		Model:    "repro-model",
		Timeout:  60 * time.Second,
		MaxTurns: 8,
	}
	tests := []struct {
		name    string
		args    []string
		unset   []string
		want    config
		wantErr string
	}{
		{name: "environment only", want: fromEnv},
		{
			name: "flags override",
			args: []string{"--model", "m2", "--prompt", "p2", "--mcp", "http://x/mcp", "--naive-retry", "2", "--timeout", "5s", "--stream", "--base-url", "http://y/v1", "--max-turns", "3"},
			want: config{BaseURL: "http://y/v1", APIKey: testKey, MCPURL: "http://x/mcp", Prompt: "p2", Token: "rc0123456789",
				Model: "m2", NaiveRetry: 2, Timeout: 5 * time.Second, Stream: true, MaxTurns: 3},
		},
		{name: "flag fills a missing variable", args: []string{"--prompt", "p"}, unset: []string{"REPLAYCHECK_PROMPT"},
			want: func() config { c := fromEnv; c.Prompt = "p"; return c }()},
		{name: "no prompt", unset: []string{"REPLAYCHECK_PROMPT"}, wantErr: "no prompt: set REPLAYCHECK_PROMPT or --prompt"},
		{name: "no mcp", unset: []string{"REPLAYCHECK_MCP_URL"}, wantErr: "no MCP server URL"},
		{name: "no base url", unset: []string{"OPENAI_BASE_URL"}, wantErr: "no model API base URL"},
		{name: "no key", unset: []string{"OPENAI_API_KEY"}, wantErr: "no API key"},
		{name: "negative naive retry", args: []string{"--naive-retry", "-1"}, wantErr: "--naive-retry -1"},
		{name: "stray argument", args: []string{"extra"}, wantErr: "unexpected arguments"},
		{name: "unknown flag", args: []string{"--bogus"}, wantErr: "flag provided but not defined"},
		{name: "help", args: []string{"-h"}, wantErr: flag.ErrHelp.Error()},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			getenv := func(k string) string {
				for _, u := range tt.unset {
					if u == k {
						return ""
					}
				}
				return env[k]
			}
			var usage bytes.Buffer
			got, err := parseConfig(tt.args, getenv, &usage)
			if tt.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), tt.wantErr) {
					t.Fatalf("err = %v, want one containing %q", err, tt.wantErr)
				}
				return
			}
			if err != nil {
				t.Fatalf("parseConfig: %v", err)
			}
			if diff := cmp.Diff(tt.want, got); diff != "" {
				t.Errorf("config (-want +got):\n%s", diff)
			}
		})
	}
}

// mainCode maps success to 0 and any failure to 1 with a message on stderr,
// and never prints the API key.
func TestMainCode(t *testing.T) {
	r := newRig(t)
	tok := runtoken.Derive("examples/agent", t.Name())
	env := map[string]string{
		"OPENAI_BASE_URL":     r.url + "/v1",
		"OPENAI_API_KEY":      testKey,
		"REPLAYCHECK_MCP_URL": r.url + "/mcp",
		"REPLAYCHECK_PROMPT":  "Call commit_write once with entry alpha-" + tok + ", then reply done.",
		"REPLAYCHECK_TOKEN":   tok,
	}
	tests := []struct {
		name       string
		args       []string
		env        map[string]string
		wantCode   int
		wantStdout string
		wantStderr string
	}{
		{name: "success", env: env, wantCode: 0, wantStdout: "done\n"},
		{name: "help", args: []string{"-h"}, env: env, wantCode: 0, wantStderr: "Usage: agent"},
		{name: "missing configuration", env: map[string]string{"OPENAI_API_KEY": testKey}, wantCode: 1, wantStderr: "agent: no model API base URL"},
		{name: "unreachable MCP server", args: []string{"--mcp", r.url + "/nope"}, env: env, wantCode: 1, wantStderr: "agent: connecting to MCP server " + r.url + "/nope"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var stdout, stderr bytes.Buffer
			code := mainCode(append([]string{"--timeout", testTimeout.String()}, tt.args...), func(k string) string { return tt.env[k] }, &stdout, &stderr)
			if code != tt.wantCode {
				t.Errorf("exit code = %d, want %d; stderr:\n%s", code, tt.wantCode, stderr.String())
			}
			if diff := cmp.Diff(tt.wantStdout, stdout.String()); diff != "" {
				t.Errorf("stdout (-want +got):\n%s", diff)
			}
			if !strings.Contains(stderr.String(), tt.wantStderr) {
				t.Errorf("stderr %q does not contain %q", stderr.String(), tt.wantStderr)
			}
			if strings.Contains(stdout.String()+stderr.String(), testKey) {
				t.Errorf("output contains the API key")
			}
		})
	}
}

// outcomeCounts returns outcome counts keyed by their text form
// ("follow_up injected_500").
func outcomeCounts(m map[string]int) map[wire.CountKey]int {
	out := make(map[wire.CountKey]int, len(m))
	for text, n := range m {
		var k wire.CountKey
		_ = k.UnmarshalText([]byte(text)) // never fails
		if err := k.Check(); err != nil {
			panic(err)
		}
		out[k] = n
	}
	return out
}
