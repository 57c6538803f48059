package run

import (
	"fmt"
	"path/filepath"
	"testing"

	"github.com/replaycheck/replaycheck/fakes/upstream"
	"github.com/replaycheck/replaycheck/internal/harness/rules"
	"github.com/replaycheck/replaycheck/internal/harness/scenario"
	"github.com/replaycheck/replaycheck/internal/harness/target"
	"github.com/replaycheck/replaycheck/internal/itemserver"
)

// forwardingTarget is a target whose runs forward to fwd, as a target file's
// mcp makes them (target.Traits.Forward).
type forwardingTarget struct {
	target.Target
	fwd *target.Forward
}

func (f forwardingTarget) Traits() target.Traits {
	tr := f.Target.Traits()
	tr.Forward = f.fwd
	return tr
}

// TestForwardFromTarget runs the seed's fault_on scenario as written for
// the ledger (the default script: commit_write with the entry) on targets
// that forward to a real MCP server spawned per run over stdio, whose
// journal path takes the run's token: mcp.calls turns commit_write into the
// server's create_item, every run is isolated and gets a server of its
// own, and at --parallel each run's writes are exactly its own server's
// items (naive: 3, the duplicate found from the forwarded executions;
// guarded: 1).
func TestForwardFromTarget(t *testing.T) {
	dir := t.TempDir()
	fwd := &target.Forward{
		Command: []string{self(t), itemserver.Arg, filepath.Join(dir, "items-{{token}}.log")},
		Calls:   map[string]upstream.Step{"commit_write": {Call: "create_item", Arguments: map[string]any{"name": "{{entry}}"}}},
	}
	ss, errs := scenario.Parse("scenario.yaml", []byte(`
name: seed chat fault_on
repeat: 4
request: {endpoint: chat}
faults:
  upstream: [{on: follow_up, respond: {status: 500}, times: always}]
expect: {rules: [no-replay-after-dispatch]}
`))
	if len(errs) > 0 {
		t.Fatal(errs)
	}
	for _, tt := range []struct {
		target string
		items  int
		want   rules.Status
	}{{"builtin:naive", 3, rules.Fail}, {"builtin:guarded", 1, rules.Pass}} {
		t.Run(tt.target, func(t *testing.T) {
			tg, err := target.ParseTarget(tt.target)
			if err != nil {
				t.Fatal(err)
			}
			hs, err := Run(ctxFor(t), ss, Options{Targets: []target.Target{forwardingTarget{tg, fwd}}, Parallel: 4})
			if err != nil {
				t.Fatal(err)
			}
			if len(hs) != 4 {
				t.Fatalf("%d histories, want 4", len(hs))
			}
			for _, h := range hs {
				if h.Error != "" {
					t.Fatalf("run error: %s", h.Error)
				}
				items, _ := itemserver.Journal(t, filepath.Join(dir, "items-"+h.Token+".log"))
				got := fmt.Sprintf("writes=%d items=%d", len(h.Writes()), len(items))
				if want := fmt.Sprintf("writes=%d items=%d", tt.items, tt.items); got != want {
					t.Errorf("run %s: %s, want %s", h.Token, got, want)
				}
				for _, it := range items {
					if it != h.Entry {
						t.Errorf("run %s: its server created %q, want its entry %s", h.Token, it, h.Entry)
					}
				}
				if vs := rules.Check(h); len(vs) != 1 || vs[0].Status != tt.want {
					t.Errorf("run %s: verdicts %+v, want no-replay-after-dispatch %s", h.Token, vs, tt.want)
				}
			}
		})
	}
}
