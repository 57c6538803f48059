package run

import (
	"fmt"
	"strings"
	"sync"
	"testing"

	"github.com/replaycheck/replaycheck/internal/harness/rules"
	"github.com/replaycheck/replaycheck/internal/harness/target"
)

// TestTargetStartFailure checks where a proxy that does not start ends: for
// an isolated scenario, in that scenario's failing result (the start error
// and the proxy's output), the run going on with the others; for scenarios
// that share it, in Run's error. Either way the start is reported as events.
func TestTargetStartFailure(t *testing.T) {
	guarded, err := target.ParseTarget("builtin:guarded")
	if err != nil {
		t.Fatal(err)
	}
	broken, _ := writeTarget(t, fmt.Sprintf("kind: proxy\nname: broken\nurl: http://127.0.0.1:{{port}}\nstart: {command: [%q], env: {%s: exit-early}}\n", self(t), helperEnv), nil)
	tests := []struct {
		name    string
		isolate bool
		// want maps "scenario on target" to its verdict; nil when Run fails.
		want    map[string]rules.Status
		wantErr string
	}{
		{
			name:    "isolated scenarios fail alone",
			isolate: true,
			want: map[string]rules.Status{
				"seed chat no fault on builtin:guarded": rules.Pass,
				"seed chat fault_on on builtin:guarded": rules.Pass,
				"seed chat no fault on broken":          rules.Fail,
				"seed chat fault_on on broken":          rules.Fail,
			},
		},
		{
			name:    "a shared proxy ends the run",
			wantErr: "starting target broken",
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var mu sync.Mutex
			kinds := map[EventKind]int{}
			hs, err := Run(ctxFor(t), loadSeed(t, "no-fault-chat", "fault-on-chat"), Options{
				Targets: []target.Target{guarded, broken}, Isolate: tt.isolate, Parallel: 2,
				OnEvent: func(e Event) {
					if e.Target == "broken" {
						mu.Lock()
						kinds[e.Kind]++
						mu.Unlock()
					}
				},
			})
			if kinds[EventTargetStarting] == 0 || kinds[EventTargetFailed] != kinds[EventTargetStarting] {
				t.Errorf("events of the broken target: %v; want each start reported failed", kinds)
			}
			if tt.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), tt.wantErr) {
					t.Fatalf("Run: error %v, want one containing %q", err, tt.wantErr)
				}
				return
			}
			if err != nil {
				t.Fatalf("Run: %v", err)
			}
			got := map[string]rules.Status{}
			for _, h := range hs {
				r := rules.Evaluate(h)
				got[h.Scenario+" on "+h.Target] = r.Verdict
				if h.Target != "broken" {
					continue
				}
				for _, w := range []string{"starting target broken", "the process exited during start", "fatal: cannot parse the config"} {
					if !strings.Contains(h.Error, w) {
						t.Errorf("%s: error lacks %q:\n%s", h.Scenario, w, h.Error)
					}
				}
			}
			if len(got) != len(tt.want) {
				t.Errorf("results %v, want %v", got, tt.want)
			}
			for k, v := range tt.want {
				if got[k] != v {
					t.Errorf("%s: %s, want %s", k, got[k], v)
				}
			}
		})
	}
}
