package main

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/replaycheck/replaycheck/fakes/control"
	"github.com/replaycheck/replaycheck/internal/wire"
)

// TestServeControlAPI arms a fault through serve's control API, and reads the
// same counts as JSON that the table shows.
func TestServeControlAPI(t *testing.T) {
	upURL, _, out, stop := startServe(t, &serveOptions{ControlKey: "k3y"})
	base := strings.TrimSuffix(upURL, "/v1") + control.Prefix
	call := func(method, path, body string) (int, []byte) {
		t.Helper()
		ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
		defer cancel()
		req, _ := http.NewRequestWithContext(ctx, method, base+path, strings.NewReader(body))
		req.Header.Set("Authorization", "Bearer k3y")
		req.Header.Set("Content-Type", "application/json")
		res, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		defer res.Body.Close()
		b, _ := io.ReadAll(res.Body)
		return res.StatusCode, b
	}
	if code, b := call("POST", "faults", `{"upstream": [{"on": "initial", "respond": {"status": 503}}]}`); code != 201 {
		t.Fatalf("arming: %d %s", code, b)
	}
	res, err := http.Post(upURL+"/chat/completions", "application/json", strings.NewReader(`{"model":"m","messages":[{"role":"user","content":"hi"}]}`))
	if err != nil {
		t.Fatal(err)
	}
	res.Body.Close()
	if res.StatusCode != 503 {
		t.Errorf("model call after arming a 503: %d", res.StatusCode)
	}
	code, b := call("GET", "counts", "")
	var c control.Counts
	if code != 200 || json.Unmarshal(b, &c) != nil || c.Total.Upstream.Outcomes[wire.CountKey{Kind: wire.KindInitial, Outcome: wire.Injected(503)}] != 1 {
		t.Errorf("counts: %d %s", code, b)
	}
	if err := stop(); err != nil {
		t.Fatal(err)
	}
	if s := out.String(); !strings.Contains(s, "control API:") || !strings.Contains(s, "bearer key required") || strings.Contains(s, "k3y") {
		t.Errorf("banner must name the control API and that a key is required, never the key:\n%s", s)
	}
	if s := out.String(); !strings.Contains(s, "1 initial injected_503") {
		t.Errorf("the table lacks what the JSON counts showed:\n%s", s)
	}
}

// TestServeListensBeyondLoopback: serve refuses to listen on a non-loopback
// address without a control key (exit 2, saying what to set); with one, a
// client on another address gets health without the key, 401 with
// WWW-Authenticate for anything else without it, and the API with it.
func TestServeListensBeyondLoopback(t *testing.T) {
	t.Setenv("REPLAYCHECK_CONTROL_KEY", "")
	const beyondKey = "k3y-beyond-loopback"
	for _, addr := range []string{"0.0.0.0:0", ":0"} {
		var errOut strings.Builder
		err := runServe(context.Background(), &serveOptions{UpstreamAddr: addr, MCPAddr: "127.0.0.1:0", ErrOut: &errOut})
		if exitCode(err) != 2 || err == nil || !strings.Contains(err.Error(), "--upstream-addr "+addr+" is not a loopback address") || !strings.Contains(err.Error(), "--control-key") {
			t.Errorf("serve on %s without a key: exit %d, %v; want exit 2 naming --control-key", addr, exitCode(err), err)
		}
	}
	err := runServe(context.Background(), &serveOptions{UpstreamAddr: "127.0.0.1:0", MCPAddr: "0.0.0.0:0"})
	if exitCode(err) != 2 || !strings.Contains(fmt.Sprint(err), "--mcp-addr 0.0.0.0:0") {
		t.Errorf("serve with the MCP server on 0.0.0.0 without a key: exit %d, %v; want 2", exitCode(err), err)
	}
	err = runServe(context.Background(), &serveOptions{UpstreamAddr: "0.0.0.0:0", MCPAddr: "127.0.0.1:0", ControlKey: "k"})
	if exitCode(err) != 2 || !strings.Contains(fmt.Sprint(err), "the control key has 1 characters") || strings.Contains(fmt.Sprint(err), "k3y") {
		t.Errorf("serve on 0.0.0.0 with a one-character key: exit %d, %v; want 2 asking for a longer one", exitCode(err), err)
	}

	// A client on another address: this machine's first non-loopback one.
	var ip net.IP
	addrs, _ := net.InterfaceAddrs()
	for _, a := range addrs {
		if n, ok := a.(*net.IPNet); ok && !n.IP.IsLoopback() && n.IP.To4() != nil {
			ip = n.IP
			break
		}
	}
	if ip == nil {
		t.Skip("no non-loopback IPv4 address here to reach serve from")
	}
	upURL, _, _, stop := startServe(t, &serveOptions{UpstreamAddr: "0.0.0.0:0", MCPAddr: "0.0.0.0:0", ControlKey: beyondKey})
	defer stop()
	u, err := url.Parse(upURL)
	if err != nil {
		t.Fatal(err)
	}
	base := "http://" + net.JoinHostPort(ip.String(), u.Port()) + control.Prefix
	call := func(method, path, key, body string) (*http.Response, string) {
		t.Helper()
		ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
		defer cancel()
		req, err := http.NewRequestWithContext(ctx, method, base+path, strings.NewReader(body))
		if err != nil {
			t.Fatal(err)
		}
		req.Header.Set("Content-Type", "application/json")
		if key != "" {
			req.Header.Set("Authorization", "Bearer "+key)
		}
		res, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		defer res.Body.Close()
		b, _ := io.ReadAll(res.Body)
		return res, string(b)
	}
	if res, b := call("GET", "health", "", ""); res.StatusCode != 200 {
		t.Errorf("health from %s without the key: %d %s", ip, res.StatusCode, b)
	}
	for _, key := range []string{"", "wrong"} {
		res, b := call("GET", "counts", key, "")
		if res.StatusCode != 401 || !strings.HasPrefix(res.Header.Get("WWW-Authenticate"), "Bearer") || !strings.Contains(b, "Authorization: Bearer") || strings.Contains(b, beyondKey) {
			t.Errorf("counts from %s with key %q: %d %q %s; want 401 with WWW-Authenticate, never the key", ip, key, res.StatusCode, res.Header.Get("WWW-Authenticate"), b)
		}
	}
	if res, b := call("POST", "faults", beyondKey, `{"upstream": [{"on": "initial", "respond": {"status": 429}}]}`); res.StatusCode != 201 || !strings.Contains(b, `"id": "upstream-`) {
		t.Errorf("adding a fault from %s with the key: %d %s", ip, res.StatusCode, b)
	}
	if res, b := call("GET", "faults", beyondKey, ""); res.StatusCode != 200 || !strings.Contains(b, `"status": 429`) {
		t.Errorf("listing faults from %s with the key: %d %s", ip, res.StatusCode, b)
	}
}

// TestControlExamples runs examples/control's Python and TypeScript programs
// against serve, when python3 and node (with make clients' TypeScript) are
// there, and checks what they print.
func TestControlExamples(t *testing.T) {
	const want = "follow-ups: 1 injected 500s: 1 writes: 0"
	tsc, _ := filepath.Abs("../../targets/clients/node_modules/typescript/bin/tsc")
	types, _ := filepath.Abs("../../targets/clients/node_modules/@types")
	tests := []struct {
		name string
		cmd  func(t *testing.T) *exec.Cmd
	}{
		{"python", func(t *testing.T) *exec.Cmd {
			if _, err := exec.LookPath("python3"); err != nil {
				t.Skip("python3 not installed")
			}
			return exec.Command("python3", "../../examples/control/control.py")
		}},
		{"typescript", func(t *testing.T) *exec.Cmd {
			if _, err := exec.LookPath("node"); err != nil {
				t.Skip("node not installed")
			}
			if _, err := os.Stat(tsc); err != nil {
				t.Skip("TypeScript not installed (make clients)")
			}
			dir := t.TempDir()
			build := exec.Command("node", tsc, "--strict", "--module", "nodenext", "--moduleResolution", "nodenext", "--target", "es2022",
				"--types", "node", "--typeRoots", types, "--outDir", dir, "../../examples/control/control.mts")
			if b, err := build.CombinedOutput(); err != nil {
				t.Fatalf("tsc: %v\n%s", err, b)
			}
			return exec.Command("node", filepath.Join(dir, "control.mjs"))
		}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			cmd := tt.cmd(t)
			upURL, _, _, stop := startServe(t, &serveOptions{})
			defer stop()
			ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
			defer cancel()
			cmd = exec.CommandContext(ctx, cmd.Args[0], cmd.Args[1:]...)
			cmd.Env = append(os.Environ(), "REPLAYCHECK_URL="+strings.TrimSuffix(upURL, "/v1"))
			b, err := cmd.CombinedOutput()
			if err != nil {
				t.Fatalf("%v\n%s", err, b)
			}
			if !strings.Contains(string(b), want) || !strings.Contains(string(b), "model call: 500") || !regexp.MustCompile(`fault upstream-\d+ matched: 1 fired: 1`).Match(b) {
				t.Errorf("output lacks %q, the 500 and the fault's counts:\n%s", want, b)
			}
		})
	}
}

// TestServeRefusesWebPages: serve's model API, MCP server and control API
// refuse a web page's request (a foreign Origin, or a foreign Host as after
// a DNS rebinding), and still answer a program's; the model API and MCP
// server refuse a body nested past nesting.Max with 400 at the place the
// limit was crossed, before decoding it.
func TestServeRefusesWebPages(t *testing.T) {
	upURL, mcpURL, _, stop := startServe(t, &serveOptions{})
	defer stop()
	chat := `{"model":"m","messages":[{"role":"user","content":"hi"}]}`
	initialize := `{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-06-18","capabilities":{},"clientInfo":{"name":"t","version":"1"}}}`
	deep := strings.Repeat("[", 1_000_000)
	tests := []struct {
		name, url, body, host, origin string
		want                          int
		wantBody                      string
	}{
		{name: "model API, a program", url: upURL + "/chat/completions", body: chat, want: 200},
		{name: "model API, a foreign Origin", url: upURL + "/chat/completions", body: chat, origin: "http://evil.example", want: 403},
		{name: "model API, a foreign Host", url: upURL + "/chat/completions", body: chat, host: "evil.example:8765", want: 403},
		{name: "MCP, a program", url: mcpURL, body: initialize, want: 200},
		{name: "MCP, a foreign Origin", url: mcpURL, body: initialize, origin: "http://evil.example", want: 403},
		{name: "MCP, a foreign Host", url: mcpURL, body: initialize, host: "evil.example:8766", want: 403},
		{name: "control API, the issue's request", url: strings.TrimSuffix(upURL, "/v1") + control.Prefix + "faults", body: `{"upstream": [{"respond": {"status": 500}}]}`, host: "evil.example:8765", origin: "http://evil.example", want: 403},
		{name: "model API, a deep body", url: upURL + "/chat/completions", body: `{"model":"m","messages":` + deep, want: 400, wantBody: "request body:1:124: nests deeper than 100 levels"},
		{name: "MCP, a deep body", url: mcpURL, body: `{"jsonrpc":"2.0","id":1,"method":"tools/call","params":` + deep, want: 400, wantBody: "body:1:155: nests deeper than 100 levels"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			req, err := http.NewRequest("POST", tt.url, strings.NewReader(tt.body))
			if err != nil {
				t.Fatal(err)
			}
			req.Header.Set("Content-Type", "application/json")
			req.Header.Set("Accept", "application/json, text/event-stream")
			if tt.host != "" {
				req.Host = tt.host
			}
			if tt.origin != "" {
				req.Header.Set("Origin", tt.origin)
			}
			res, err := http.DefaultClient.Do(req)
			if err != nil {
				t.Fatal(err)
			}
			b, _ := io.ReadAll(res.Body)
			res.Body.Close()
			if res.StatusCode != tt.want || !strings.Contains(string(b), tt.wantBody) {
				t.Errorf("got %d %.300s, want %d with %q", res.StatusCode, b, tt.want, tt.wantBody)
			}
		})
	}
}

// TestServeBannerSaysOpenFakes: with a control key, serve's banner says
// which fakes listen beyond loopback and that they take no key (only the
// control API does); on loopback it says nothing of the kind.
func TestServeBannerSaysOpenFakes(t *testing.T) {
	t.Setenv("REPLAYCHECK_CONTROL_KEY", "")
	const key = "k3y-beyond-loopback"
	tests := []struct {
		name          string
		upAddr, mAddr string
		want          string // the other hosts: line, PORT for a port; "" wants none
	}{
		{"both beyond loopback", "0.0.0.0:0", "0.0.0.0:0",
			"  other hosts:  the model API on 0.0.0.0:PORT and the MCP server on 0.0.0.0:PORT take no key: any host that reaches them can send model requests and call the MCP tools (writes included); the key guards only the control API\n"},
		{"MCP beyond loopback", "127.0.0.1:0", "0.0.0.0:0",
			"  other hosts:  the MCP server on 0.0.0.0:PORT takes no key: any host that reaches it can call the MCP tools (writes included); the key guards only the control API\n"},
		{"model API beyond loopback, all interfaces", ":0", "127.0.0.1:0",
			"  other hosts:  the model API on :PORT takes no key: any host that reaches it can send model requests; the key guards only the control API\n"},
		{"loopback", "127.0.0.1:0", "127.0.0.1:0", ""},
	}
	ports := regexp.MustCompile(`:[1-9][0-9]*`)
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, _, out, stop := startServe(t, &serveOptions{UpstreamAddr: tt.upAddr, MCPAddr: tt.mAddr, ControlKey: key})
			if err := stop(); err != nil {
				t.Fatal(err)
			}
			banner, _, _ := strings.Cut(out.String(), "┌")
			if got := ports.ReplaceAllString(banner, ":PORT"); tt.want == "" && strings.Contains(got, "other hosts:") || !strings.Contains(got, tt.want) {
				t.Errorf("banner:\n%s\nwant the line %q", banner, tt.want)
			}
			if strings.Contains(banner, key) {
				t.Errorf("the banner shows the control key:\n%s", banner)
			}
		})
	}
}
