package run

import (
	"fmt"
	"path/filepath"
	"testing"

	"github.com/replaycheck/replaycheck/internal/itemserver"
)

// TestForwardOwnCommandPerRun: a scenario's own mcp.command may use the
// environment's ${NAME} (expanded as it loads) and the run's {{token}} and
// {{entry}} (filled in per run, as a target file's), so that runs in
// parallel each spawn a server with a file of their own.
func TestForwardOwnCommandPerRun(t *testing.T) {
	dir := t.TempDir()
	t.Setenv("ITEMS_DIR", dir)
	hs := runSource(t, fmt.Sprintf(`
name: seed chat fault_on, the scenario's own server per run
repeat: 3
request: {endpoint: chat}
mcp:
  command: [%q, %s, "${ITEMS_DIR}/items-{{token}}-{{entry}}.log"]
model: [{call: create_item, arguments: {name: "{{entry}}"}}, {say: done}]
faults:
  upstream: [{on: follow_up, respond: {status: 500}, times: always}]
expect: {rules: [no-replay-after-dispatch]}
`, self(t), itemserver.Arg), "builtin:naive", 3)
	if len(hs) != 3 {
		t.Fatalf("%d histories, want 3", len(hs))
	}
	for _, h := range hs {
		items, _ := itemserver.Journal(t, filepath.Join(dir, "items-"+h.Token+"-"+h.Entry+".log"))
		got := fmt.Sprintf("writes=%d items=%d", len(h.Writes()), len(items))
		if want := "writes=3 items=3"; got != want {
			t.Errorf("run %s: %s, want %s", h.Token, got, want)
		}
		for _, it := range items {
			if it != h.Entry {
				t.Errorf("run %s: its server created %q, want only its entry %s", h.Token, it, h.Entry)
			}
		}
	}
}
