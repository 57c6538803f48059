package control

import (
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"os"
	"strings"
	"testing"

	"github.com/replaycheck/replaycheck/fakes/control/controltest"
	"github.com/replaycheck/replaycheck/internal/linefile"
)

// TestCountsSayWhatWentUnseen: GET counts says which file lost lines and
// why, which armed faults never fired (a fault that fired is not listed),
// and the ledger's MCP sessions.
func TestCountsSayWhatWentUnseen(t *testing.T) {
	if _, err := os.Stat("/dev/full"); err != nil {
		t.Skip("no /dev/full here")
	}
	r := newRig(t, "")
	faults := "upstream: [{on: follow_up, respond: {status: 503}}, {on: initial, endpoint: messages, respond: {status: 429}}]\nmcp: [{tool: read_ledger, is_error: {}}]\n"
	if code := r.do(t, "POST", Prefix+"faults", faults, nil, nil); code != 201 {
		t.Fatalf("arming: %d", code)
	}
	if got := r.chat(t); got != 503 {
		t.Fatalf("follow-up: %d, want the 503 that fires", got)
	}
	full, err := linefile.Open("/dev/full", linefile.Options{})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { full.Close() })
	_ = full.Append([]byte("a line the disk has no room for\n"))

	rec := httptest.NewRecorder()
	req := httptest.NewRequest(http.MethodGet, Prefix+"counts", nil)
	req.RemoteAddr, req.Host = "127.0.0.1:1", "127.0.0.1:8765"
	controltest.Validate(t, Spec, (&API{Upstream: r.up, Ledger: r.led, Files: []*linefile.File{full}}).Handler()).ServeHTTP(rec, req)
	var c Counts
	if err := json.Unmarshal(rec.Body.Bytes(), &c); err != nil {
		t.Fatalf("counts %q: %v", rec.Body, err)
	}
	if len(c.WriteErrors) != 1 || c.WriteErrors[0].File != "/dev/full" || c.WriteErrors[0].Lost != 1 || !strings.Contains(c.WriteErrors[0].Error, "no space left on device") {
		t.Errorf("write_errors %+v, want /dev/full with 1 line lost and why", c.WriteErrors)
	}
	if len(c.UnfiredFaults) != 2 || c.UnfiredFaults[0].Upstream == nil || c.UnfiredFaults[0].Upstream.Endpoint != "messages" || c.UnfiredFaults[1].MCP == nil || c.UnfiredFaults[1].MCP.Tool != "read_ledger" {
		t.Errorf("unfired_faults %+v, want the 429 on messages and the is_error on read_ledger", c.UnfiredFaults)
	}
	for _, field := range []string{`"write_errors"`, `"unfired_faults"`, `"mcp_sessions"`, `"live": 0`} {
		if !strings.Contains(rec.Body.String(), field) {
			t.Errorf("counts lack %s:\n%s", field, rec.Body)
		}
	}
}
