package ledger

import (
	"context"
	"encoding/json"
	"fmt"
	"github.com/replaycheck/replaycheck/internal/wire"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/replaycheck/replaycheck/fakes/gateway"
)

// offeredTools is a chat completions model stub that records the function
// names each request offers and answers with text, calling no tool.
type offeredTools struct {
	mu     sync.Mutex
	offers [][]string
}

func (m *offeredTools) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	var body struct {
		Tools []struct {
			Function struct {
				Name string `json:"name"`
			} `json:"function"`
		} `json:"tools"`
	}
	raw, err := io.ReadAll(io.LimitReader(r.Body, 1<<20))
	if err != nil || json.Unmarshal(raw, &body) != nil {
		http.Error(w, `{"error":{"message":"bad request"}}`, http.StatusBadRequest)
		return
	}
	names := []string{}
	for _, t := range body.Tools {
		names = append(names, t.Function.Name)
	}
	m.mu.Lock()
	m.offers = append(m.offers, names)
	m.mu.Unlock()
	w.Header().Set("Content-Type", "application/json")
	fmt.Fprint(w, `{"id":"c1","object":"chat.completion","choices":[{"index":0,"message":{"role":"assistant","content":"done"},"finish_reason":"stop"}]}`)
}

// listChangedLog is a slog.Handler that signals each record whose message
// starts with "mcp tool list changed".
type listChangedLog struct{ changed chan struct{} }

func (h listChangedLog) Enabled(context.Context, slog.Level) bool { return true }
func (h listChangedLog) WithAttrs([]slog.Attr) slog.Handler       { return h }
func (h listChangedLog) WithGroup(string) slog.Handler            { return h }

func (h listChangedLog) Handle(_ context.Context, r slog.Record) error {
	if strings.HasPrefix(r.Message, "mcp tool list changed") {
		h.changed <- struct{}{}
	}
	return nil
}

// TestGatewayOffersTheChangedToolList: the gateway caches the ledger's tool
// list per MCP session. When the ledger's tools change mid-session, the SDK
// server sends notifications/tools/list_changed on the session's standalone
// SSE stream, and the gateway's next request offers the model the new list,
// listed anew on the same session.
func TestGatewayOffersTheChangedToolList(t *testing.T) {
	s, url := newLedger(t, Config{Protocol: wire.MCPProtocol20251125}) // list_changed on a session's stream
	model := &offeredTools{}
	us := httptest.NewServer(model)
	t.Cleanup(us.Close)
	changed := make(chan struct{}, 8)
	g, err := gateway.New(gateway.Config{Upstream: us.URL + "/v1", MCP: url, Logger: slog.New(listChangedLog{changed})})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { g.Close() }) // before the ledger: it holds the stream
	chat := func() []string {
		t.Helper()
		body := `{"model":"repro-model","messages":[{"role":"user","content":"say done"}],"tools":[{"type":"mcp","server_label":"ledger","server_url":"litellm_proxy","require_approval":"never"}]}`
		w := httptest.NewRecorder()
		g.ServeHTTP(w, httptest.NewRequest("POST", "/v1/chat/completions", strings.NewReader(body)))
		if w.Code != http.StatusOK {
			t.Fatalf("status %d: %s", w.Code, w.Body)
		}
		model.mu.Lock()
		defer model.mu.Unlock()
		return model.offers[len(model.offers)-1]
	}
	waitChanged := func() {
		t.Helper()
		select {
		case <-changed:
		case <-time.After(testTimeout):
			t.Fatalf("the gateway was not told within %s that the ledger's tool list changed", testTimeout)
		}
	}
	all := []string{"ledger-commit_write", "ledger-commit_write_keyed", "ledger-read_ledger"}

	if diff := cmp.Diff(all, chat()); diff != "" {
		t.Fatalf("first request: offered tools (-want +got):\n%s", diff)
	}
	s.mcp.RemoveTools(ToolReadLedger)
	waitChanged()
	if diff := cmp.Diff(all[:2], chat()); diff != "" {
		t.Errorf("after read_ledger was removed: offered tools (-want +got):\n%s", diff)
	}
	s.addTool(ToolReadLedger, ToolReadLedger, Annotations{})
	waitChanged()
	if diff := cmp.Diff(all, chat()); diff != "" {
		t.Errorf("after read_ledger was added back: offered tools (-want +got):\n%s", diff)
	}
	sessions := 0
	for range s.mcp.Sessions() {
		sessions++
	}
	if sessions != 1 {
		t.Errorf("the ledger holds %d sessions, want the gateway's one", sessions)
	}
}
