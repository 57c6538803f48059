package main

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/replaycheck/replaycheck/internal/fakepair"
	"github.com/replaycheck/replaycheck/internal/syncbuf"

	"github.com/replaycheck/replaycheck/fakes/gateway"
	"github.com/replaycheck/replaycheck/fakes/ledger"
)

// startFakes runs a ledger and an upstream fake on port-0 listeners.
func startFakes(t *testing.T) (upstreamURL, mcpURL string, l *ledger.Server) {
	t.Helper()
	p, err := fakepair.Start(fakepair.Config{})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { p.Close() })
	return p.UpstreamURL(), p.MCPURL(), p.Ledger()
}

// TestRunGatewayServesAndStops starts the command on port 0 against the
// fakes, sends the seed's chat request, and stops it by cancelling ctx.
func TestRunGatewayServesAndStops(t *testing.T) {
	upURL, mcpURL, l := startFakes(t)
	const key = "sk-secret-master-key"
	var out, errOut syncbuf.Buffer
	ready := make(chan string, 1)
	opts := &gatewayOptions{
		Addr: "127.0.0.1:0", Upstream: upURL, MCP: mcpURL, Mode: "naive", NumRetries: 2,
		Fallbacks: []string{"repro-model=backup-model"}, ToolTimeout: 5 * time.Second, StreamIdleTimeout: gateway.DefaultStreamIdleTimeout,
		Out: &out, ErrOut: &errOut, Verbose: true,
		Getenv: func(k string) string {
			if k == envMasterKey {
				return key
			}
			return ""
		},
		Ready: func(addr string) { ready <- addr },
	}
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	done := make(chan error, 1)
	go func() { done <- runGateway(ctx, opts) }()
	var addr string
	select {
	case addr = <-ready:
	case err := <-done:
		t.Fatalf("runGateway returned before ready: %v", err)
	case <-time.After(30 * time.Second):
		t.Fatal("gateway not ready")
	}

	body := `{"model":"repro-model","messages":[{"role":"user","content":"Call the commit_write tool exactly once with entry alpha, then reply done."}],"tools":[{"type":"mcp","server_label":"ledger","server_url":"litellm_proxy","require_approval":"never"}]}`
	post := func(auth string) (int, string) {
		req, _ := http.NewRequest(http.MethodPost, "http://"+addr+"/v1/chat/completions", strings.NewReader(body))
		if auth != "" {
			req.Header.Set("Authorization", "Bearer "+auth)
		}
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		b, _ := io.ReadAll(resp.Body)
		return resp.StatusCode, string(b)
	}
	if status, b := post(""); status != http.StatusUnauthorized {
		t.Errorf("without the key: status %d, want 401 (%s)", status, b)
	}
	status, b := post(key)
	if status != http.StatusOK {
		t.Fatalf("status %d, want 200: %s", status, b)
	}
	var cc struct {
		Choices []struct {
			Message struct{ Content string } `json:"message"`
		} `json:"choices"`
	}
	if err := json.Unmarshal([]byte(b), &cc); err != nil || len(cc.Choices) != 1 || cc.Choices[0].Message.Content != "done" {
		t.Errorf("answer %s (%v)", b, err)
	}
	if got := l.Total().Writes; got != 1 {
		t.Errorf("ledger writes = %d, want 1", got)
	}

	cancel()
	select {
	case err := <-done:
		if err != nil {
			t.Fatalf("runGateway: %v", err)
		}
	case <-time.After(30 * time.Second):
		t.Fatal("runGateway did not stop after ctx was cancelled")
	}
	banner := out.String()
	for _, want := range []string{
		"replaycheck gateway listening on http://" + addr,
		"switches:    replay-after-dispatch,stream-splice,mcp-resend-on-disconnect,breaker-counts-tool-errors,retry-everything,no-cancel-on-timeout,fresh-key-per-attempt,run-tools-from-cut-stream",
		"fallbacks:   repro-model -> backup-model",
		"num_retries: 2",
		"master key:  required (not shown)",
		"gateway stopped",
	} {
		if !strings.Contains(banner, want) {
			t.Errorf("output lacks %q:\n%s", want, banner)
		}
	}
	if strings.Contains(banner+errOut.String(), key) {
		t.Error("the master key was printed")
	}
}

func TestRunGatewayErrors(t *testing.T) {
	busy, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer busy.Close()
	tests := []struct {
		name     string
		args     []string
		wantCode int
		wantMsg  string
	}{
		{"bad mode", []string{"gateway", "--mode", "careless"}, exitBadUsage, `unknown gateway mode "careless": want naive or guarded`},
		{"bad bug", []string{"gateway", "--bug", "replay"}, exitBadUsage, "valid names are replay-after-dispatch, stream-splice"},
		{"bad fallback", []string{"gateway", "--fallback", "repro-model"}, exitBadUsage, "want GROUP=FALLBACK"},
		{"negative retries", []string{"gateway", "--num-retries", "-1"}, exitBadUsage, "want 0 or more"},
		{"bad upstream", []string{"gateway", "--upstream", "127.0.0.1:8765"}, exitBadUsage, "upstream URL"},
		{"addr without port", []string{"gateway", "--addr", "localhost"}, exitBadUsage, `--addr "localhost": want HOST:PORT`},
		{"addr port out of range", []string{"gateway", "--addr", "127.0.0.1:99999"}, exitBadUsage, `--addr "127.0.0.1:99999": port "99999": want a number from 0 to 65535`},
		{"zero stream idle timeout", []string{"gateway", "--stream-idle-timeout", "0s"}, exitBadUsage, "--stream-idle-timeout 0s: want a positive duration"},
		{"resume without a checkpoint", []string{"gateway", "--resume"}, exitBadUsage, "--resume needs --checkpoint"},
		{"stray argument", []string{"gateway", "now"}, exitBadUsage, "unknown command"},
		{"busy port", []string{"gateway", "--addr", busy.Addr().String()}, exitCannotRun, "address " + busy.Addr().String() + " is already in use"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var out, errOut bytes.Buffer
			root := newRootCmd(strings.NewReader(""), &out, &errOut)
			root.SetArgs(tt.args)
			ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
			defer cancel()
			err := root.ExecuteContext(ctx)
			if err == nil {
				t.Fatal("no error")
			}
			if got := exitCode(err); got != tt.wantCode {
				t.Errorf("exit code = %d, want %d (err %v)", got, tt.wantCode, err)
			}
			if !strings.Contains(err.Error(), tt.wantMsg) {
				t.Errorf("error %q does not contain %q", err, tt.wantMsg)
			}
		})
	}
}

// TestGatewayStreamIdleTimeout: --stream-idle-timeout reaches the gateway:
// a model stream that goes silent after its first event is given up after
// that long, and the error the app gets names it.
func TestGatewayStreamIdleTimeout(t *testing.T) {
	_, mcpURL, _ := startFakes(t)
	silent := make(chan struct{})
	up := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "text/event-stream")
		_, _ = io.WriteString(w, `data: {"id":"c1","object":"chat.completion.chunk","model":"repro-model","choices":[{"index":0,"delta":{"role":"assistant","content":"do"}}]}`+"\n\n")
		w.(http.Flusher).Flush()
		select {
		case <-r.Context().Done():
		case <-silent:
		case <-time.After(30 * time.Second):
		}
	}))
	defer up.Close()
	defer close(silent)

	// The banner, printed once the gateway listens, names its address.
	pr, pw := io.Pipe()
	var errOut syncbuf.Buffer
	root := newRootCmd(strings.NewReader(""), pw, &errOut)
	root.SetArgs([]string{"gateway", "--addr", "127.0.0.1:0", "--upstream", up.URL + "/v1", "--mcp", mcpURL, "--num-retries", "0", "--stream-idle-timeout", "150ms"})
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	done := make(chan error, 1)
	go func() {
		done <- root.ExecuteContext(ctx)
		pw.Close()
	}()
	listening := make(chan string, 1)
	go func() {
		sc := bufio.NewScanner(pr)
		for sc.Scan() {
			if addr, ok := strings.CutPrefix(sc.Text(), "replaycheck gateway listening on http://"); ok {
				listening <- addr
			}
		}
	}()
	var addr string
	select {
	case addr = <-listening:
	case err := <-done:
		t.Fatalf("the gateway returned before listening: %v\n%s", err, errOut.String())
	case <-time.After(30 * time.Second):
		t.Fatal("gateway not ready")
	}
	body := `{"model":"repro-model","stream":true,"messages":[{"role":"user","content":"Say done."}]}`
	reqCtx, reqCancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer reqCancel()
	req, _ := http.NewRequestWithContext(reqCtx, http.MethodPost, "http://"+addr+"/v1/chat/completions", strings.NewReader(body))
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	b, err := io.ReadAll(resp.Body)
	resp.Body.Close()
	if err != nil {
		t.Fatalf("reading the answer: %v (got %q)", err, b)
	}
	if want := "sent nothing for 150ms (stream idle timeout)"; !strings.Contains(string(b), want) {
		t.Errorf("answer %d %q does not say %q", resp.StatusCode, b, want)
	}
	cancel()
	select {
	case err := <-done:
		if err != nil {
			t.Fatalf("gateway: %v", err)
		}
	case <-time.After(30 * time.Second):
		t.Fatal("the gateway did not stop after ctx was cancelled")
	}
}

// TestGatewayBannerHidesPasswords: URLs with a password in them are shown
// without it.
func TestGatewayBannerHidesPasswords(t *testing.T) {
	var out bytes.Buffer
	cfg := gateway.Config{Upstream: "http://u:up-s3cret@127.0.0.1:8765/v1", MCP: "http://m:mcp-s3cret@127.0.0.1:8766/mcp", MasterKey: "sk-master"}
	if err := printGatewayBanner(&out, "127.0.0.1:4000", cfg); err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{"upstream:    http://u:xxxxx@127.0.0.1:8765/v1", "mcp:         http://m:xxxxx@127.0.0.1:8766/mcp"} {
		if !strings.Contains(out.String(), want) {
			t.Errorf("banner lacks %q:\n%s", want, out.String())
		}
	}
	for _, secret := range []string{"up-s3cret", "mcp-s3cret", "sk-master"} {
		if strings.Contains(out.String(), secret) {
			t.Errorf("banner shows %q:\n%s", secret, out.String())
		}
	}
}
