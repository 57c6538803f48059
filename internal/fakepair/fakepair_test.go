package fakepair

import (
	"context"
	"errors"
	"io"
	"net"
	"net/http"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/replaycheck/replaycheck/fakes/control"
	"github.com/replaycheck/replaycheck/fakes/ledger"
)

const token = "rc0123456789"

// start serves a pair configured by cfg for the test.
func start(t *testing.T, cfg Config) *Pair {
	t.Helper()
	p, err := Start(cfg)
	if err != nil {
		t.Fatalf("Start: %v", err)
	}
	t.Cleanup(func() { p.Close() })
	return p
}

// chat sends a chat request that carries no run token to the model API at
// base, with origin when set, and returns its status.
func chat(t *testing.T, base, origin string) int {
	t.Helper()
	req, err := http.NewRequest(http.MethodPost, base+"/chat/completions", strings.NewReader(`{"model":"m","messages":[{"role":"user","content":"hello"}]}`))
	if err != nil {
		t.Fatal(err)
	}
	req.Header.Set("Content-Type", "application/json")
	if origin != "" {
		req.Header.Set("Origin", origin)
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatalf("POST %s: %v", req.URL, err)
	}
	defer resp.Body.Close()
	_, _ = io.Copy(io.Discard, resp.Body)
	return resp.StatusCode
}

// readLedger calls read_ledger, which carries no run token, at the MCP
// endpoint url.
func readLedger(t *testing.T, url string) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	c := mcp.NewClient(&mcp.Implementation{Name: "t", Version: "1"}, nil)
	cs, err := c.Connect(ctx, &mcp.StreamableClientTransport{Endpoint: url}, nil)
	if err != nil {
		t.Fatalf("connecting to %s: %v", url, err)
	}
	defer cs.Close()
	if _, err := cs.CallTool(ctx, &mcp.CallToolParams{Name: "read_ledger"}); err != nil {
		t.Fatalf("read_ledger at %s: %v", url, err)
	}
}

// TestOwner: both URLs answer; what arrives at them belongs to the run
// whose token owns the address (Owner, OwnModel), else to no run.
func TestOwner(t *testing.T) {
	tests := []struct {
		name               string
		cfg                Config
		wantModel, wantMCP string // the run the request is counted for
	}{
		{name: "no owner", cfg: Config{}},
		{name: "owner of the MCP address", cfg: Config{Owner: token}, wantMCP: token},
		{name: "owner of both", cfg: Config{Owner: token, OwnModel: true}, wantModel: token, wantMCP: token},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			p := start(t, tt.cfg)
			if got := p.Owner(); got != tt.cfg.Owner {
				t.Errorf("Owner() = %q, want %q", got, tt.cfg.Owner)
			}
			if !strings.HasSuffix(p.UpstreamURL(), "/v1") || !strings.HasSuffix(p.MCPURL(), "/mcp") {
				t.Errorf("URLs %s, %s: want …/v1 and …/mcp", p.UpstreamURL(), p.MCPURL())
			}
			if status := chat(t, p.UpstreamURL(), ""); status != http.StatusOK {
				t.Errorf("chat: status %d, want 200", status)
			}
			readLedger(t, p.MCPURL())
			if got := len(p.Upstream().Requests(tt.wantModel)); got != 1 {
				t.Errorf("model requests of run %q: %d, want 1", tt.wantModel, got)
			}
			if got := p.Ledger().Counts(tt.wantMCP).Calls["read_ledger"]; got != 1 {
				t.Errorf("read_ledger calls of run %q: %d, want 1", tt.wantMCP, got)
			}
		})
	}
}

// TestOwn: a run's own addresses attribute everything to its token while
// the pair's stay unattributed; closing them leaves the pair serving.
func TestOwn(t *testing.T) {
	p := start(t, Config{})
	o, err := p.Own(token)
	if err != nil {
		t.Fatalf("Own: %v", err)
	}
	if o.UpstreamURL() == p.UpstreamURL() || o.MCPURL() == p.MCPURL() || o.MCPListener() == p.MCPListener() {
		t.Fatalf("Own serves at the pair's addresses: %s %s", o.UpstreamURL(), o.MCPURL())
	}
	chat(t, o.UpstreamURL(), "")
	readLedger(t, o.MCPURL())
	chat(t, p.UpstreamURL(), "")
	if got := len(p.Upstream().Requests(token)); got != 1 {
		t.Errorf("model requests of the run: %d, want 1", got)
	}
	if got := len(p.Upstream().Requests("")); got != 1 {
		t.Errorf("unattributed model requests: %d, want 1", got)
	}
	if got := p.Ledger().Counts(token).Calls["read_ledger"]; got != 1 {
		t.Errorf("read_ledger calls of the run: %d, want 1", got)
	}
	if err := o.Close(); err != nil {
		t.Fatalf("Owned.Close: %v", err)
	}
	if _, err := http.Post(o.UpstreamURL()+"/chat/completions", "application/json", strings.NewReader("{}")); err == nil {
		t.Error("the run's own model API still answers after Close")
	}
	if status := chat(t, p.UpstreamURL(), ""); status != http.StatusOK {
		t.Errorf("the pair after Owned.Close: status %d, want 200", status)
	}
}

// TestGuardAndControl: the model API and the MCP server refuse a web page's
// request; the control API is served beside the model API, outside its
// guard.
func TestGuardAndControl(t *testing.T) {
	p, err := New(Config{})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { p.Close() })
	p.HandleControl(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) { w.WriteHeader(http.StatusTeapot) }))
	if err := p.Serve(); err != nil {
		t.Fatal(err)
	}
	if status := chat(t, p.UpstreamURL(), "http://evil.example"); status != http.StatusForbidden {
		t.Errorf("model API from a web page: status %d, want 403", status)
	}
	req, _ := http.NewRequest(http.MethodPost, p.MCPURL(), strings.NewReader("{}"))
	req.Header.Set("Origin", "http://evil.example")
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusForbidden {
		t.Errorf("MCP server from a web page: status %d, want 403", resp.StatusCode)
	}
	resp, err = http.Get(strings.TrimSuffix(p.UpstreamURL(), "/v1") + control.Prefix + "health")
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusTeapot {
		t.Errorf("control API: status %d, want the handler's 418", resp.StatusCode)
	}
}

// TestStartError: an address in use, or a fake that does not start, is a
// *StartError naming the side.
func TestStartError(t *testing.T) {
	busy, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { busy.Close() })
	addr := busy.Addr().String()
	tests := []struct {
		name     string
		cfg      Config
		wantSide Side
		wantAddr string
		wantMsg  string
		inUse    bool
	}{
		{
			name: "model API address in use", cfg: Config{UpstreamAddr: addr},
			wantSide: UpstreamSide, wantAddr: addr, inUse: true,
			wantMsg: "starting the upstream fake: address " + addr + " is already in use",
		},
		{
			name: "MCP address in use", cfg: Config{MCPAddr: addr},
			wantSide: LedgerSide, wantAddr: addr, inUse: true,
			wantMsg: "starting the ledger: address " + addr + " is already in use",
		},
		{
			name: "ledger file in a missing directory", cfg: Config{Ledger: ledger.Config{Path: t.TempDir() + "/no/such/dir/ledger.txt"}},
			wantSide: LedgerSide, wantMsg: "starting the ledger: ",
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			p, err := Start(tt.cfg)
			if err == nil {
				p.Close()
				t.Fatal("Start: no error")
			}
			var se *StartError
			if !errors.As(err, &se) {
				t.Fatalf("Start: %v (%T), want a *StartError", err, err)
			}
			if se.Side != tt.wantSide || se.Addr != tt.wantAddr {
				t.Errorf("StartError side %q addr %q, want %q %q", se.Side, se.Addr, tt.wantSide, tt.wantAddr)
			}
			if !strings.HasPrefix(err.Error(), tt.wantMsg) {
				t.Errorf("error %q, want it to start with %q", err, tt.wantMsg)
			}
			if got := errors.Is(err, syscall.EADDRINUSE); got != tt.inUse {
				t.Errorf("errors.Is(err, EADDRINUSE) = %v, want %v", got, tt.inUse)
			}
		})
	}
}

// TestShutdown: Shutdown ends an open MCP session's stream and returns;
// with a request that never ends (headers sent halfway) it returns when
// ctx ends, saying so, and closes what was left. The fakes stay readable
// until Close.
func TestShutdown(t *testing.T) {
	t.Run("open stream", func(t *testing.T) {
		p := start(t, Config{})
		ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
		defer cancel()
		cs, err := mcp.NewClient(&mcp.Implementation{Name: "t", Version: "1"}, nil).Connect(ctx, &mcp.StreamableClientTransport{Endpoint: p.MCPURL()}, nil)
		if err != nil {
			t.Fatal(err)
		}
		defer cs.Close()
		if _, err := cs.CallTool(ctx, &mcp.CallToolParams{Name: "read_ledger"}); err != nil {
			t.Fatal(err)
		}
		if err := p.Shutdown(ctx); err != nil {
			t.Errorf("Shutdown: %v", err)
		}
		if got := p.Ledger().Counts("").Calls["read_ledger"]; got != 1 {
			t.Errorf("after Shutdown, read_ledger calls: %d, want 1", got)
		}
	})
	t.Run("request that never ends", func(t *testing.T) {
		p := start(t, Config{})
		conn, err := net.Dial("tcp", strings.TrimPrefix(strings.TrimSuffix(p.MCPURL(), "/mcp"), "http://"))
		if err != nil {
			t.Fatal(err)
		}
		defer conn.Close()
		if _, err := io.WriteString(conn, "POST /mcp HTTP/1.1\r\nHost: 127.0.0.1\r\n"); err != nil {
			t.Fatal(err)
		}
		// Once the listener holds nothing unread the server has accepted the
		// connection and read the half headers: the request is in flight.
		for {
			pending, err := p.MCPListener().Pending()
			if errors.Is(err, errors.ErrUnsupported) {
				t.Skip("this system cannot tell whether a listener holds input")
			}
			if err != nil {
				t.Fatal(err)
			}
			if !pending {
				break
			}
			time.Sleep(time.Millisecond)
		}
		ctx, cancel := context.WithTimeout(context.Background(), 200*time.Millisecond)
		defer cancel()
		err = p.Shutdown(ctx)
		if !errors.Is(err, context.DeadlineExceeded) {
			t.Errorf("Shutdown: %v, want it cut short by ctx", err)
		}
		_ = conn.SetReadDeadline(time.Now().Add(20 * time.Second))
		if _, err := conn.Read(make([]byte, 1)); err == nil {
			t.Error("the connection is still open after Shutdown")
		}
	})
}
