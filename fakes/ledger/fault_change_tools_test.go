package ledger

import (
	"context"
	"log/slog"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/replaycheck/replaycheck/internal/wire"
)

// TestChangeToolsStateless: change_tools at 2026-07-28, where a client has
// no session: the go-sdk client subscribes to list_changed
// (subscriptions/listen), is sent notifications/tools/list_changed on that
// stream when the call renames commit_write, and lists the tools again
// before the call's answer comes; a call of the old name gets the MCP
// unknown-tool error and runs nothing.
func TestChangeToolsStateless(t *testing.T) {
	logs := &logWatch{ch: make(chan slog.Record, 256)}
	s, _ := newLedger(t, Config{Logger: slog.New(logs)})
	const tok = "rc00000000c6"
	url := ownAddress(t, s, tok)
	mustArm(t, s, tok, "{tool: commit_write, change_tools: {rename: commit_write, to: record_entry}, times: once}")
	relisted := make(chan []string, 4)
	c := mcp.NewClient(&mcp.Implementation{Name: "ledger-test", Version: "1"}, &mcp.ClientOptions{
		// Like the gateway, list the tools again on the notification.
		ToolListChangedHandler: func(_ context.Context, req *mcp.ToolListChangedRequest) {
			go func() {
				lctx, cancel := contextT()
				defer cancel()
				res, err := req.Session.ListTools(lctx, nil)
				var names []string
				if err == nil {
					for _, tool := range res.Tools {
						names = append(names, tool.Name)
					}
				}
				relisted <- names
			}()
		},
	})
	ctx, cancel := contextT()
	defer cancel()
	cs, err := c.Connect(ctx, &mcp.StreamableClientTransport{Endpoint: url}, nil)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = cs.Close() })
	if got := wire.MCPProtocol(cs.InitializeResult().ProtocolVersion); !got.Stateless() {
		t.Fatalf("negotiated %s, want 2026-07-28", got)
	}
	if _, err := callTool(t, cs, ToolCommitWrite, map[string]any{"entry": "one " + tok}); err != nil {
		t.Fatalf("the call that changes the list: %v", err)
	}
	// The answer waited for the run's tools/list after the notification.
	s.mu.Lock()
	sent, listed := s.runLocked(tok).listSent, s.runLocked(tok).listed
	s.mu.Unlock()
	if sent == 0 || listed == 0 {
		t.Errorf("the call was answered after %d list_changed notifications on the run's listen stream and %d tools/list; want it answered after the client listed the tools again on one", sent, listed)
	}
	if diff := cmp.Diff([]string{ToolCommitWriteKeyed, ToolReadLedger, "record_entry"}, receive(t, relisted, "the client's relist")); diff != "" {
		t.Errorf("tools the client listed on the notification (-want +got):\n%s", diff)
	}
	for len(logs.ch) > 0 {
		if r := <-logs.ch; strings.Contains(r.Message, "did not list the tools again") {
			t.Errorf("the answer waited out its bound for a relist that came: %s", r.Message)
		}
	}
	_, err = callTool(t, cs, ToolCommitWrite, map[string]any{"entry": "two " + tok})
	if err == nil || !strings.Contains(err.Error(), `unknown tool "commit_write"`) {
		t.Errorf("calling the old name: err = %v, want the unknown-tool error", err)
	}
	if got := s.Counts(tok); got.Writes != 1 {
		t.Errorf("writes = %d, want 1", got.Writes)
	}
}
