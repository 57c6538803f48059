package gateway

import (
	"context"
	"log/slog"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/replaycheck/replaycheck/fakes/ledger"
	"github.com/replaycheck/replaycheck/fakes/upstream"
	"github.com/replaycheck/replaycheck/internal/syncbuf"
	"github.com/replaycheck/replaycheck/internal/wire"
)

// TestSessionProtocol checks that the gateway's MCP client speaks
// 2026-07-28 to a server that offers it (server/discover) and falls back to
// initialize with 2025-11-25 to one that does not.
func TestSessionProtocol(t *testing.T) {
	tests := []struct {
		name   string
		ledger ledger.Config
		want   wire.MCPProtocol
	}{
		{name: "stateless ledger", ledger: ledger.Config{Stateless: true}, want: wire.MCPProtocol20260728},
		{name: "session ledger", ledger: ledger.Config{Protocol: wire.MCPProtocol20251125}, want: wire.MCPProtocol20251125},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			r := newLedgerRig(t, tt.ledger, nil, nil)
			ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
			defer cancel()
			s, err := r.gw.pool.session(ctx)
			if err != nil {
				t.Fatalf("session: %v", err)
			}
			if got := s.protocol(); got != tt.want {
				t.Errorf("protocol = %q, want %q", got, tt.want)
			}
		})
	}
}

// TestReissueLogged checks what guarded does, on 2026-07-28, with a
// tools/call whose response stream broke after the tool ran: a keyed write
// is re-issued with its key, a non-idempotent one is held.
func TestReissueLogged(t *testing.T) {
	tests := []struct {
		name   string
		tool   string
		logged string
	}{
		{name: "non-idempotent write held", tool: ledger.ToolCommitWrite, logged: "holding the non-idempotent call instead of re-issuing it"},
		{name: "keyed write re-issued", tool: ledger.ToolCommitWriteKeyed, logged: "re-issuing the keyed call with the same idempotency key"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			log := &syncbuf.Buffer{}
			r := newLedgerRig(t, ledger.Config{Stateless: true}, nil, func(c *Config) {
				c.Logger = slog.New(slog.NewTextHandler(log, nil))
			})
			script := upstream.Script{Steps: []upstream.Step{{Call: tt.tool, Arguments: map[string]any{"entry": "{{entry}}"}}, {Say: "done"}}}
			armUpstream(t, r, &script)
			dropOnceAfterExecute(tt.tool)(t, r)
			if status, _ := r.post(pathChat, seedBody(pathChat, seedAsk, false, false)); status != http.StatusOK {
				t.Fatalf("status = %d, want 200", status)
			}
			if !strings.Contains(log.String(), tt.logged) || !strings.Contains(log.String(), "protocol=2026-07-28") {
				t.Errorf("the gateway did not log %q on 2026-07-28:\n%s", tt.logged, log)
			}
		})
	}
}
