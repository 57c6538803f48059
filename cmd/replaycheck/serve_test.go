package main

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/replaycheck/replaycheck/fakes/control"
	"github.com/replaycheck/replaycheck/fakes/control/controltest"
	"github.com/replaycheck/replaycheck/fakes/ledger"
	"github.com/replaycheck/replaycheck/internal/syncbuf"
)

// serveOut collects runServe's output and signals each count table.
type serveOut struct {
	mu     sync.Mutex
	b      bytes.Buffer
	tables chan struct{}
}

func (o *serveOut) Write(p []byte) (int, error) {
	o.mu.Lock()
	defer o.mu.Unlock()
	if bytes.Contains(p, []byte("TOTAL")) {
		select {
		case o.tables <- struct{}{}:
		default:
		}
	}
	return o.b.Write(p)
}

func (o *serveOut) String() string {
	o.mu.Lock()
	defer o.mu.Unlock()
	return o.b.String()
}

// startServe runs runServe in-process on port-0 addresses and returns the
// fakes' URLs, the output, and a stop function returning runServe's error.
func startServe(t *testing.T, opts *serveOptions) (upURL, mcpURL string, out *serveOut, stop func() error) {
	t.Helper()
	out = &serveOut{tables: make(chan struct{}, 16)}
	if opts.UpstreamAddr == "" {
		opts.UpstreamAddr, opts.MCPAddr = "127.0.0.1:0", "127.0.0.1:0"
	}
	// Every exchange with the control API is checked against its description.
	opts.wrapControl = func(h http.Handler) http.Handler { return controltest.Validate(t, control.Spec, h) }
	opts.Out = out
	if opts.ErrOut == nil {
		opts.ErrOut = io.Discard
	}
	ready := make(chan [2]string, 1)
	opts.Ready = func(u, m string) { ready <- [2]string{u, m} }
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- runServe(ctx, opts) }()
	select {
	case urls := <-ready:
		upURL, mcpURL = urls[0], urls[1]
	case err := <-done:
		cancel()
		t.Fatalf("runServe ended before it was ready: %v", err)
	case <-time.After(20 * time.Second):
		cancel()
		t.Fatal("runServe was not ready")
	}
	var once sync.Once
	var err error
	stop = func() error {
		once.Do(func() {
			cancel()
			select {
			case err = <-done:
			case <-time.After(20 * time.Second):
				err = fmt.Errorf("runServe did not stop")
			}
		})
		return err
	}
	t.Cleanup(func() { _ = stop() })
	return upURL, mcpURL, out, stop
}

func TestServe(t *testing.T) {
	dir := t.TempDir()
	opts := &serveOptions{
		LedgerFile:  filepath.Join(dir, "ledger.txt"),
		UpstreamLog: filepath.Join(dir, "upstream.log"),
		FlagsDir:    dir,
		MCPFaults:   []string{"{tool: read_ledger, is_error: {}}"},
		// Armed but not matched by this test's requests.
		UpstreamFaults: []string{"{on: initial, endpoint: messages, respond: {status: 429}}"},
	}
	upURL, mcpURL, out, stop := startServe(t, opts)
	const tok = "rc00000serve"

	// One model request: the scripted fake answers the seed prompt with a
	// commit_write tool call.
	body := `{"model":"repro-model","messages":[{"role":"user","content":"Call the commit_write tool exactly once with entry alpha-` + tok + `, then reply done."}],` +
		`"tools":[{"type":"function","function":{"name":"commit_write","parameters":{"type":"object","properties":{"entry":{"type":"string"}}}}}]}`
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	req, _ := http.NewRequestWithContext(ctx, http.MethodPost, upURL+"/chat/completions", strings.NewReader(body))
	req.Header.Set("Content-Type", "application/json")
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatalf("model request: %v", err)
	}
	answer, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	if resp.StatusCode != http.StatusOK || !strings.Contains(string(answer), "commit_write") {
		t.Fatalf("model answer %d %s, want 200 with a commit_write call", resp.StatusCode, answer)
	}

	// The seed's flag file: the next follow-up gets a 500, then it is removed.
	flag := filepath.Join(dir, "fault_once")
	if err := os.WriteFile(flag, nil, 0o644); err != nil {
		t.Fatal(err)
	}
	followUp := `{"model":"repro-model","messages":[{"role":"user","content":"Call the commit_write tool exactly once with entry alpha-` + tok + `, then reply done."},` +
		`{"role":"assistant","content":null,"tool_calls":[{"id":"call_1","type":"function","function":{"name":"commit_write","arguments":"{}"}}]},` +
		`{"role":"tool","tool_call_id":"call_1","content":"recorded"}]}`
	req, _ = http.NewRequestWithContext(ctx, http.MethodPost, upURL+"/chat/completions", strings.NewReader(followUp))
	req.Header.Set("Content-Type", "application/json")
	resp, err = http.DefaultClient.Do(req)
	if err != nil {
		t.Fatalf("follow-up request: %v", err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusInternalServerError {
		t.Errorf("follow-up with fault_once: status %d, want 500", resp.StatusCode)
	}
	if _, err := os.Stat(flag); !os.IsNotExist(err) {
		t.Errorf("fault_once still exists after firing (stat: %v)", err)
	}

	// One tool call on the ledger, with the SDK client.
	c := mcp.NewClient(&mcp.Implementation{Name: "serve-test", Version: "1"}, nil)
	cs, err := c.Connect(ctx, &mcp.StreamableClientTransport{Endpoint: mcpURL}, sessionProtocol) // counts session messages
	if err != nil {
		t.Fatalf("connecting to %s: %v", mcpURL, err)
	}
	res, err := cs.CallTool(ctx, &mcp.CallToolParams{Name: "commit_write", Arguments: map[string]any{"entry": "alpha-" + tok}})
	if err != nil || res.IsError {
		t.Fatalf("commit_write: %v, %+v", err, res)
	}
	// The --mcp-fault flag is armed: read_ledger answers isError.
	if res, err := cs.CallTool(ctx, &mcp.CallToolParams{Name: "read_ledger"}); err != nil || !res.IsError {
		t.Errorf("read_ledger with --mcp-fault is_error: %v, %+v", err, res)
	}
	cs.Close()

	if err := stop(); err != nil {
		t.Fatalf("runServe: %v", err)
	}
	got := out.String()
	// A row's second line carries the second upstream outcome.
	var row, row2, noTok, total, total2 string
	lines := strings.Split(got, "\n")
	for i, l := range lines[:len(lines)-1] {
		if strings.Contains(l, tok) {
			row, row2 = l, lines[i+1]
		}
		if strings.Contains(l, "(serve, no token)") {
			noTok = l
		}
		if strings.Contains(l, "TOTAL") {
			total, total2 = l, lines[i+1]
		}
	}
	if len(cells(noTok)) != 13 || len(cells(total)) != 13 {
		t.Fatalf("no (serve, no token) row or TOTAL row of 13 cells:\n%s", got)
	}
	// TOKEN, INITIAL, FOLLOW-UP, UPSTREAM OUTCOMES, MCP CALLS, WRITES, KEYS, CANCELLED, MCP MSGS, FAILED WRITES, SPAWNS, EXITS, MCP PROTOCOL
	// (session messages carry no token; their number depends on the SDK).
	tests := []struct {
		name      string
		row, want []string
	}{
		{"token row", cells(row)[:12], []string{tok, "1", "1", "1 follow_up injected_500", "1", "1", "0", "0", "0", "0", "0", "0"}},
		{"token row, line 2", cells(row2), []string{"", "", "", "1 initial forwarded", "", "", "", "", "", "", "", "", ""}},
		{"no-token row", cells(noTok)[:8], []string{"(serve, no token)", "0", "0", "-", "1", "0", "0", "0"}},
		{"total row", cells(total)[:8], []string{"TOTAL", "1", "1", "1 follow_up injected_500", "2", "1", "0", "0"}},
		{"total row, line 2", cells(total2), []string{"", "", "", "1 initial forwarded", "", "", "", "", "", "", "", "", ""}},
	}
	if n, _ := strconv.Atoi(cells(noTok)[8]); n < 3 {
		t.Errorf("no-token row counts %d MCP messages, want at least initialize, notifications/initialized and tools/list:\n%s", n, got)
	}
	for _, tt := range tests {
		if !equalCells(tt.row, tt.want) {
			t.Errorf("%s = %q, want %q\noutput:\n%s", tt.name, tt.row, tt.want, got)
		}
	}
	for _, want := range []string{"replaycheck serve", mcpURL, "mcp fault:      {tool: read_ledger, is_error: {}}", "serve stopped"} {
		if !strings.Contains(got, want) {
			t.Errorf("output lacks %q:\n%s", want, got)
		}
	}
	if b, _ := os.ReadFile(opts.LedgerFile); string(b) != "alpha-"+tok+"\n" {
		t.Errorf("ledger file = %q", b)
	}
	if b, _ := os.ReadFile(opts.UpstreamLog); string(b) != "/v1/chat/completions initial forwarded\n/v1/chat/completions follow_up injected_500\n" {
		t.Errorf("upstream log = %q", b)
	}
}

// TestServeVerbose checks that -v logs each ledger call and write, as its
// help says (they log at debug level).
func TestServeVerbose(t *testing.T) {
	errOut := &serveOut{tables: make(chan struct{}, 1)}
	_, mcpURL, _, stop := startServe(t, &serveOptions{Verbose: true, ErrOut: errOut})
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	c := mcp.NewClient(&mcp.Implementation{Name: "serve-test", Version: "1"}, nil)
	cs, err := c.Connect(ctx, &mcp.StreamableClientTransport{Endpoint: mcpURL}, nil)
	if err != nil {
		t.Fatalf("connecting to %s: %v", mcpURL, err)
	}
	if res, err := cs.CallTool(ctx, &mcp.CallToolParams{Name: "commit_write", Arguments: map[string]any{"entry": "alpha-rc00000verbo"}}); err != nil || res.IsError {
		t.Fatalf("commit_write: %v, %+v", err, res)
	}
	cs.Close()
	if err := stop(); err != nil {
		t.Fatalf("runServe: %v", err)
	}
	for _, want := range []string{`msg="ledger call" tool=commit_write token=rc00000verbo`, `msg="ledger write" tool=commit_write token=rc00000verbo line=1`} {
		if !strings.Contains(errOut.String(), want) {
			t.Errorf("-v output lacks %q:\n%s", want, errOut.String())
		}
	}
}

// TestServeEvery checks that the table is also printed every --every.
func TestServeEvery(t *testing.T) {
	_, _, out, stop := startServe(t, &serveOptions{Every: time.Millisecond})
	for range 2 {
		select {
		case <-out.tables:
		case <-time.After(20 * time.Second):
			t.Fatalf("no periodic table; output:\n%s", out.String())
		}
	}
	if err := stop(); err != nil {
		t.Fatalf("runServe: %v", err)
	}
}

func TestServeBusyPort(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	addr := ln.Addr().String()
	err = runServe(context.Background(), &serveOptions{UpstreamAddr: "127.0.0.1:0", MCPAddr: addr})
	if err == nil || !strings.Contains(err.Error(), addr) || !strings.Contains(err.Error(), "--mcp-addr") {
		t.Fatalf("runServe on a busy port: %v, want an error naming %s and --mcp-addr", err, addr)
	}
	if code := exitCode(err); code != exitCannotRun {
		t.Errorf("exit code %d, want %d", code, exitCannotRun)
	}
}

func TestServeBadFlags(t *testing.T) {
	dir := t.TempDir()
	badScript := filepath.Join(dir, "script.yaml")
	if err := os.WriteFile(badScript, []byte("- {call: commit_write, say: done}\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	emptyScript := filepath.Join(dir, "empty.yaml")
	if err := os.WriteFile(emptyScript, nil, 0o644); err != nil {
		t.Fatal(err)
	}
	tests := []struct {
		name    string
		args    []string
		wantErr string
	}{
		{"unknown mcp fault", []string{"--mcp-fault", "{tool: commit_write, explode: {}}"}, `unknown field "explode"`},
		{"bad mcp duration", []string{"--mcp-fault", "{delay: soon}"}, `duration "soon"`},
		{"bad upstream fault", []string{"--upstream-fault", "{on: sometimes, respond: {status: 500}}"}, "--upstream-fault"},
		{"negative every", []string{"--every", "-1s"}, "--every"},
		{"negative max runs", []string{"--max-runs", "-1"}, "--max-runs -1: want a positive number, or 0 for no cap"},
		{"bad every", []string{"--every", "often"}, "often"},
		{"missing script", []string{"--script", filepath.Join(dir, "nope.yaml")}, "--script"},
		{"bad script", []string{"--script", badScript}, badScript},
		{"flags dir not a dir", []string{"--flags-dir", badScript}, "--flags-dir"},
		{"ledger in a missing dir", []string{"--ledger", filepath.Join(dir, "no", "ledger.txt")}, "--ledger"},
		{"empty script", []string{"--script", emptyScript}, "no steps"},
		{"upstream port out of range", []string{"--upstream-addr", "127.0.0.1:99999"}, `--upstream-addr "127.0.0.1:99999": port "99999"`},
		{"mcp addr without port", []string{"--mcp-addr", "localhost"}, `--mcp-addr "localhost": want host:port`},
		{"one address for both fakes", []string{"--upstream-addr", "127.0.0.1:28765", "--mcp-addr", "127.0.0.1:28765"}, "both 127.0.0.1:28765"},
		{"unknown protocol", []string{"--mcp-protocol", "2025-01-01"}, `invalid argument "2025-01-01" for "--mcp-protocol" flag: want one of 2026-07-28, 2025-11-25, 2025-06-18, 2025-03-26, 2024-11-05`},
		{"unknown flag", []string{"--ledgr", "x"}, "unknown flag"},
		{"argument", []string{"extra"}, "unknown command"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var out, errOut bytes.Buffer
			root := newRootCmd(strings.NewReader(""), &out, &errOut)
			// Port 0 so a flag that is wrongly accepted does not hit a real port.
			root.SetArgs(append([]string{"serve", "--upstream-addr", "127.0.0.1:0", "--mcp-addr", "127.0.0.1:0"}, tt.args...))
			ctx, cancel := context.WithCancel(context.Background())
			cancel() // a wrongly accepted command stops at once
			err := root.ExecuteContext(ctx)
			if err == nil || !strings.Contains(err.Error(), tt.wantErr) {
				t.Fatalf("error = %v, want one containing %q", err, tt.wantErr)
			}
			if code := exitCode(err); code != exitBadUsage {
				t.Errorf("exit code %d, want %d (error %v)", code, exitBadUsage, err)
			}
		})
	}
}

// cells splits a table row into its trimmed cells.
func cells(row string) []string {
	var out []string
	for _, c := range strings.Split(strings.Trim(strings.TrimSpace(row), "│|"), "│") {
		out = append(out, strings.TrimSpace(c))
	}
	if len(out) == 1 {
		out = nil
		for _, c := range strings.Split(strings.Trim(strings.TrimSpace(row), "|"), "|") {
			out = append(out, strings.TrimSpace(c))
		}
	}
	return out
}

func equalCells(got, want []string) bool {
	if len(got) != len(want) {
		return false
	}
	for i := range got {
		if got[i] != want[i] {
			return false
		}
	}
	return true
}

// TestServeCountsFailedWrites: a write the ledger file cannot take (a full
// disk: /dev/full) is counted in the table's FAILED WRITES, not as a write,
// said on stderr at once, and makes serve exit 3.
func TestServeCountsFailedWrites(t *testing.T) {
	if _, err := os.Stat("/dev/full"); err != nil {
		t.Skip("no /dev/full here")
	}
	var errOut syncbuf.Buffer
	_, mcpURL, out, stop := startServe(t, &serveOptions{LedgerFile: "/dev/full", ErrOut: &errOut})
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	cs, err := mcp.NewClient(&mcp.Implementation{Name: "serve-test", Version: "1"}, nil).Connect(ctx, &mcp.StreamableClientTransport{Endpoint: mcpURL}, nil)
	if err != nil {
		t.Fatalf("connecting to %s: %v", mcpURL, err)
	}
	res, err := cs.CallTool(ctx, &mcp.CallToolParams{Name: "commit_write", Arguments: map[string]any{"entry": "lost"}})
	if err != nil || !res.IsError {
		t.Errorf("commit_write on a full disk: %v, %+v; want an isError result", err, res)
	}
	cs.Close()
	if err := stop(); exitCode(err) != exitCannotRun || !strings.Contains(fmt.Sprint(err), "ledger file /dev/full: 1 of 1 lines could not be written") {
		t.Errorf("runServe: %v (exit %d), want exit 3 naming the lost line", err, exitCode(err))
	}
	if !strings.Contains(errOut.String(), "ledger file /dev/full: a line could not be written") {
		t.Errorf("stderr lacks the notice:\n%s", errOut.String())
	}
	got := out.String()
	var total []string
	for _, l := range strings.Split(got, "\n") {
		if strings.Contains(l, "TOTAL") {
			total = cells(l)
		}
	}
	// TOKEN, INITIAL, FOLLOW-UP, UPSTREAM OUTCOMES, MCP CALLS, WRITES, KEYS, CANCELLED, MCP MSGS, FAILED WRITES, SPAWNS, EXITS, MCP PROTOCOL
	if len(total) != 13 || total[4] != "1" || total[5] != "0" || total[9] != "1" {
		t.Errorf("TOTAL row %q, want 1 call, 0 writes, 1 failed write:\n%s", total, got)
	}
}

// TestServeStopsWithOpenStream: a client holding a session's standalone SSE
// stream (a GET the ledger answers for as long as the session lasts) does
// not hold up the shutdown: runServe returns well before the 5 s its servers
// get to shut down, which is how long it would take if it waited for the
// stream (measured with the same by hand: 0.02 s with the stream open).
func TestServeStopsWithOpenStream(t *testing.T) {
	_, mcpURL, _, stop := startServe(t, &serveOptions{})
	ctx := context.Background()
	cs, err := mcp.NewClient(&mcp.Implementation{Name: "stream-holder", Version: "1"}, nil).Connect(ctx,
		&mcp.StreamableClientTransport{Endpoint: mcpURL, MaxRetries: -1, DisableStandaloneSSE: true}, sessionProtocol)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { cs.Close() })
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, mcpURL, nil)
	if err != nil {
		t.Fatal(err)
	}
	req.Header.Set("Accept", "text/event-stream")
	req.Header.Set("Mcp-Session-Id", cs.ID())
	req.Header.Set("Mcp-Protocol-Version", "2025-06-18")
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		t.Fatalf("GET stream: status %d", resp.StatusCode)
	}
	if err := stop(); err != nil {
		t.Fatal(err)
	}
	// Ended by serve (a complete answer), not cut when the shutdown gave up
	// waiting for it and closed the connection (an unexpected EOF).
	if _, err := io.ReadAll(resp.Body); err != nil {
		t.Errorf("the SSE stream was cut instead of ended by serve's shutdown: %v", err)
	}
}

// spawnHeader sets ledger.StdioSpawnHeader on every request, as a
// ledger-stdio process does.
type spawnHeader struct{}

func (spawnHeader) RoundTrip(r *http.Request) (*http.Response, error) {
	r = r.Clone(r.Context())
	r.Header.Set(ledger.StdioSpawnHeader, "4711")
	return http.DefaultTransport.RoundTrip(r)
}

// TestServeTableCountsSpawnsAndExits: a ledger-stdio process's session
// (announced by its header) counts as a spawn in the table's SPAWNS, and
// its end (the session closed) in EXITS.
func TestServeTableCountsSpawnsAndExits(t *testing.T) {
	_, mcpURL, out, stop := startServe(t, &serveOptions{})
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	cs, err := mcp.NewClient(&mcp.Implementation{Name: "ledger-stdio", Version: "1"}, nil).Connect(ctx,
		&mcp.StreamableClientTransport{Endpoint: mcpURL, MaxRetries: -1, HTTPClient: &http.Client{Transport: spawnHeader{}}}, nil)
	if err != nil {
		t.Fatal(err)
	}
	if err := cs.Close(); err != nil {
		t.Fatal(err)
	}
	if err := stop(); err != nil {
		t.Fatal(err)
	}
	got := out.String()
	var total []string
	for _, l := range strings.Split(got, "\n") {
		if strings.Contains(l, "TOTAL") {
			total = cells(l)
		}
	}
	// TOKEN, INITIAL, FOLLOW-UP, UPSTREAM OUTCOMES, MCP CALLS, WRITES, KEYS, CANCELLED, MCP MSGS, FAILED WRITES, SPAWNS, EXITS, MCP PROTOCOL
	if len(total) != 13 || total[10] != "1" || total[11] != "1" {
		t.Errorf("TOTAL row %q, want 1 spawn, 1 exit:\n%s", total, got)
	}
}

// TestServeBannerNamesMCPSide: the banner's mcp line says what answers at
// the MCP URL: the ledger, or a forwarder in front of the user's server
// (a relay URL with its password hidden, a command over stdio, a cassette).
func TestServeBannerNamesMCPSide(t *testing.T) {
	const mcpURL = "http://127.0.0.1:8766/mcp"
	tests := []struct {
		name string
		opts serveOptions
		want string
	}{
		{"the ledger", serveOptions{}, "  mcp:          " + mcpURL + " (2026-07-28 and 2025 sessions): the ledger (commit_write, commit_write_keyed, read_ledger)\n"},
		{"stateless", serveOptions{Stateless: true}, "  mcp:          " + mcpURL + " (stateless): the ledger (commit_write, commit_write_keyed, read_ledger)\n"},
		{"pinned protocol", serveOptions{MCPProtocol: "2026-07-28", HonourCancellation: true},
			"  mcp:          " + mcpURL + " (MCP 2026-07-28 only, honours cancellation): the ledger (commit_write, commit_write_keyed, read_ledger)\n"},
		{"a relay", serveOptions{MCPRelay: "http://user:hunter2@127.0.0.1:3001/mcp"},
			"  mcp:          " + mcpURL + " (2026-07-28 and 2025 sessions): forwarded to http://user:xxxxx@127.0.0.1:3001/mcp over Streamable HTTP\n"},
		{"a command", serveOptions{MCPCommand: " python3  srv.py "}, "  mcp:          " + mcpURL + " (2026-07-28 and 2025 sessions): forwarded to command python3 srv.py over stdio\n"},
		{"a cassette", serveOptions{MCPCassette: "rec/mcp"}, "  mcp:          " + mcpURL + " (2026-07-28 and 2025 sessions): replaying the MCP cassette below\n"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var out bytes.Buffer
			tt.opts.Out = &out
			printServeBanner(&tt.opts, "http://127.0.0.1:8765/v1", mcpURL, "", &servedFakes{})
			if !strings.Contains(out.String(), tt.want) {
				t.Errorf("banner lacks %q:\n%s", tt.want, out.String())
			}
			if strings.Contains(out.String(), "hunter2") {
				t.Errorf("banner shows the relay's password:\n%s", out.String())
			}
		})
	}
}

// sessionProtocol makes a go-sdk client initialize a session (2025-11-25)
// where a test is about sessions; by default it speaks 2026-07-28, which has
// none.
var sessionProtocol = &mcp.ClientSessionOptions{ProtocolVersion: "2025-11-25"}
