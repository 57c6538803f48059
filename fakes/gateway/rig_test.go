package gateway

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/replaycheck/replaycheck/fakes/ledger"
	"github.com/replaycheck/replaycheck/fakes/upstream"
	"github.com/replaycheck/replaycheck/internal/wire"
)

// The seed's request bodies (seed 000, "Shared setup").
const (
	seedTools = `[{"type":"mcp","server_label":"ledger","server_url":"litellm_proxy","require_approval":"never"}]`
	seedAsk   = `Call the commit_write tool exactly once with entry alpha, then reply done.`
	seedKey   = "sk-replaycheck-test"

	pathChat      = "/v1/chat/completions"
	pathResponses = "/v1/responses"
	pathMessages  = "/v1/messages"
)

// seedBody returns the seed's body for path, with ask as the prompt; block
// adds the guardrail and stream the stream flag, as the seed's shell does.
func seedBody(path, ask string, block, stream bool) string {
	var body string
	switch path {
	case pathChat:
		body = `{"model":"repro-model","messages":[{"role":"user","content":` + jsonString(ask) + `}],"tools":` + seedTools + `}`
	case pathResponses:
		body = `{"model":"repro-model","input":` + jsonString(ask) + `,"tools":` + seedTools + `}`
	case pathMessages:
		body = `{"model":"repro-model","max_tokens":1024,"messages":[{"role":"user","content":` + jsonString(ask) + `}],"tools":` + seedTools + `}`
	}
	if block {
		body = `{"guardrails":["block-mcp"],` + body[1:]
	}
	if stream {
		body = `{"stream":true,` + body[1:]
	}
	return body
}

func jsonString(s string) string {
	b, _ := json.Marshal(s)
	return string(b)
}

// rig is the seed's setup with the real fakes on port-0 listeners: a ledger
// writing ledger.txt, an upstream fake logging to upstream.log and reading
// flag files from dir, and the gateway in front with a master key.
type rig struct {
	t          *testing.T
	dir        string
	ledgerPath string
	logPath    string
	ledger     *ledger.Server
	upstream   *upstream.Server
	gw         *Gateway
	url        string
	client     *http.Client
	mu         sync.Mutex
	// lastHeader is the header of the last answer post got; see header.
	lastHeader http.Header
}

// header returns the header of the last answer post got.
func (r *rig) header() http.Header {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.lastHeader
}

func newRig(t *testing.T, bugs Bugs, tweak func(*Config)) *rig {
	t.Helper()
	return newLedgerRig(t, sessionLedger, bugs, tweak)
}

// newLedgerRig is newRig with a ledger configured by lcfg (its Path is the
// rig's).
func newLedgerRig(t *testing.T, lcfg ledger.Config, bugs Bugs, tweak func(*Config)) *rig {
	t.Helper()
	dir := t.TempDir()
	r := &rig{t: t, dir: dir, ledgerPath: filepath.Join(dir, "ledger.txt"), logPath: filepath.Join(dir, "upstream.log")}
	var err error
	lcfg.Path = r.ledgerPath
	r.ledger, err = ledger.New(lcfg)
	if err != nil {
		t.Fatalf("ledger.New: %v", err)
	}
	mcpMux := http.NewServeMux()
	mcpMux.Handle("/mcp", r.ledger)
	ledgerSrv := httptest.NewServer(mcpMux)

	logFile, err := os.OpenFile(r.logPath, os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o644)
	if err != nil {
		t.Fatalf("opening upstream log: %v", err)
	}
	r.upstream, err = upstream.New(upstream.Config{Log: &lockedWriter{w: logFile}, FlagsDir: dir})
	if err != nil {
		t.Fatalf("upstream.New: %v", err)
	}
	upSrv := httptest.NewServer(r.upstream)

	cfg := Config{
		Upstream:  upSrv.URL + "/v1",
		MCP:       ledgerSrv.URL + "/mcp",
		Bugs:      bugs,
		MasterKey: seedKey,
		HTTPClient: &http.Client{Transport: &http.Transport{
			MaxIdleConnsPerHost: 64,
		}},
	}
	if tweak != nil {
		tweak(&cfg)
	}
	r.gw, err = New(cfg)
	if err != nil {
		t.Fatalf("New: %v", err)
	}
	gwSrv := httptest.NewServer(r.gw)
	r.url = gwSrv.URL
	r.client = &http.Client{Timeout: 60 * time.Second}
	t.Cleanup(func() {
		gwSrv.Close()
		if err := r.gw.Close(); err != nil {
			t.Errorf("gateway Close: %v", err)
		}
		upSrv.Close()
		ledgerSrv.Close()
		if err := r.ledger.Close(); err != nil {
			t.Errorf("ledger Close: %v", err)
		}
		logFile.Close()
	})
	return r
}

type lockedWriter struct {
	mu sync.Mutex
	w  io.Writer
}

func (l *lockedWriter) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.w.Write(p)
}

// touch creates a flag file, as `touch fault_on` does.
func (r *rig) touch(name string) {
	r.t.Helper()
	if err := os.WriteFile(filepath.Join(r.dir, name), nil, 0o644); err != nil {
		r.t.Fatal(err)
	}
}

// post sends body to path with the master key and returns the status and body.
func (r *rig) post(path, body string) (int, []byte) {
	r.t.Helper()
	return r.postKey(path, body, seedKey)
}

func (r *rig) postKey(path, body, key string) (int, []byte) {
	r.t.Helper()
	req, err := http.NewRequest(http.MethodPost, r.url+path, strings.NewReader(body))
	if err != nil {
		r.t.Fatal(err)
	}
	req.Header.Set("Content-Type", "application/json")
	if key != "" {
		req.Header.Set("Authorization", "Bearer "+key)
	}
	resp, err := r.client.Do(req)
	if err != nil {
		r.t.Fatalf("POST %s: %v", path, err)
	}
	defer resp.Body.Close()
	r.mu.Lock()
	r.lastHeader = resp.Header
	r.mu.Unlock()
	out, err := io.ReadAll(resp.Body)
	if err != nil {
		r.t.Fatalf("reading the answer of POST %s: %v", path, err)
	}
	return resp.StatusCode, out
}

// ledgerLines is `wc -l < ledger.txt`.
func (r *rig) ledgerLines() int {
	r.t.Helper()
	b, err := os.ReadFile(r.ledgerPath)
	if err != nil {
		r.t.Fatal(err)
	}
	return bytes.Count(b, []byte("\n"))
}

// uniqC is `sort upstream.log | uniq -c` as a map from line to count.
func (r *rig) uniqC() map[string]int {
	r.t.Helper()
	f, err := os.Open(r.logPath)
	if err != nil {
		r.t.Fatal(err)
	}
	defer f.Close()
	out := map[string]int{}
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		if line := strings.TrimSpace(sc.Text()); line != "" {
			out[line]++
		}
	}
	return out
}

// wantLedgerLines fails the test unless ledger.txt has n lines.
func (r *rig) wantLedgerLines(n int) {
	r.t.Helper()
	if got := r.ledgerLines(); got != n {
		r.t.Errorf("wc -l ledger.txt = %d, want %d", got, n)
	}
}

// wantUniqC fails the test unless `sort upstream.log | uniq -c` is want.
func (r *rig) wantUniqC(want map[string]int) {
	r.t.Helper()
	if diff := cmp.Diff(want, r.uniqC()); diff != "" {
		r.t.Errorf("sort upstream.log | uniq -c (-want +got):\n%s", diff)
	}
}

// errorOf decodes an OpenAI error body's message and code.
func errorOf(t *testing.T, body []byte) (msg string, code any) {
	t.Helper()
	var e struct {
		Error struct {
			Message string `json:"message"`
			Code    any    `json:"code"`
		} `json:"error"`
	}
	if err := json.Unmarshal(body, &e); err != nil {
		t.Fatalf("error body %s: %v", body, err)
	}
	return e.Error.Message, e.Error.Code
}

// waitLedger waits for the ledger's total counts to satisfy cond.
func (r *rig) waitLedger(cond func(wire.MCPCounts) bool) wire.MCPCounts {
	r.t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	c, err := r.ledger.WaitFor(ctx, "", cond)
	if err != nil {
		r.t.Fatalf("waiting for the ledger: %v (counts %+v)", err, c)
	}
	return c
}

// sessionLedger is the ledger of the tests of the session generation
// (2025-11-25: sessions, initialize, expiry); the 2026-07-28 path has tests
// of its own (reissue_test.go and the stateless rows of switch_test.go).
var sessionLedger = ledger.Config{Protocol: wire.MCPProtocol20251125}
