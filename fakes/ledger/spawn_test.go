package ledger

import (
	"context"
	"encoding/json"
	"net/http"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/replaycheck/replaycheck/internal/wire"
)

// headerTransport sets one header on every request, as ledger-stdio does.
type headerTransport struct{ name, value string }

func (h headerTransport) RoundTrip(r *http.Request) (*http.Response, error) {
	r = r.Clone(r.Context())
	r.Header.Set(h.name, h.value)
	return http.DefaultTransport.RoundTrip(r)
}

// TestSpawnIsRecordedOncePerSession: a session whose requests carry
// StdioSpawnHeader counts one spawn, with the pid as the event's PID, for
// the run at whose address it arrived (under "" elsewhere), however many
// calls it makes; one without the header counts none, and /counts' JSON
// has no spawns then.
func TestSpawnIsRecordedOncePerSession(t *testing.T) {
	const token = "rcspawn00001"
	tests := []struct {
		name      string
		own       bool // at the run's own address
		header    bool
		wantOwner int // spawns counted for token
		wantNone  int // spawns counted under ""
	}{
		{name: "own address, announced", own: true, header: true, wantOwner: 1},
		{name: "own address, not announced", own: true},
		{name: "shared address, announced", header: true, wantNone: 1},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			s, url := newLedger(t, Config{})
			if tt.own {
				url = ownAddress(t, s, token)
			}
			hc := http.DefaultClient
			if tt.header {
				hc = &http.Client{Transport: headerTransport{StdioSpawnHeader, "4711"}}
			}
			ctx, cancel := context.WithTimeout(context.Background(), testTimeout)
			defer cancel()
			c := mcp.NewClient(&mcp.Implementation{Name: "spawn-test", Version: "1"}, nil)
			cs, err := c.Connect(ctx, &mcp.StreamableClientTransport{Endpoint: url, HTTPClient: hc}, nil)
			if err != nil {
				t.Fatal(err)
			}
			for range 2 {
				if _, err := cs.CallTool(ctx, &mcp.CallToolParams{Name: ToolCommitWrite, Arguments: map[string]any{"entry": "e " + token}}); err != nil {
					t.Fatal(err)
				}
			}
			_ = cs.Close()
			if got := s.Counts(token).Spawns; got != tt.wantOwner {
				t.Errorf("spawns of the run = %d, want %d", got, tt.wantOwner)
			}
			if got := s.Counts("").Spawns; got != tt.wantNone {
				t.Errorf("spawns under \"\" = %d, want %d", got, tt.wantNone)
			}
			if got := s.Total().Spawns; got != tt.wantOwner+tt.wantNone {
				t.Errorf("spawns in total = %d, want %d", got, tt.wantOwner+tt.wantNone)
			}
			var pids []string
			for _, e := range append(s.Events(token), s.Events("")...) {
				if e.Kind == wire.MCPSpawn {
					pids = append(pids, e.PID)
				}
			}
			var want []string
			if tt.header {
				want = []string{"4711"}
			}
			if diff := cmp.Diff(want, pids); diff != "" {
				t.Errorf("spawn events' pids (-want +got):\n%s", diff)
			}
			b, err := json.Marshal(s.Total())
			if err != nil {
				t.Fatal(err)
			}
			if has := strings.Contains(string(b), `"spawns"`); has != tt.header {
				t.Errorf("counts JSON %s: has spawns %v, want %v", b, has, tt.header)
			}
		})
	}
}
