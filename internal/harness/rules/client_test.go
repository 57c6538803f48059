package rules

import (
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/replaycheck/replaycheck/internal/harness/history"
)

// TestClientChecks checks expect.client against client runs, and that it
// (and status) cannot be judged on the wrong kind of target.
func TestClientChecks(t *testing.T) {
	clientRun := func(exit int, killed bool, stdout, stderr string) func(h *history.History) {
		return func(h *history.History) {
			h.Requests[0].Status = 0
			h.Requests[0].Client = &history.ClientRun{Exit: exit, Killed: killed, Stdout: stdout, Stderr: stderr}
		}
	}
	nonzero := &history.ExitCode{Nonzero: true}
	zero := &history.ExitCode{}
	three := &history.ExitCode{Code: 3}
	tests := []struct {
		name   string
		expect history.Expect
		mut    func(h *history.History)
		want   map[string]Status
	}{
		{"nonzero exit", history.Expect{Client: &history.ClientExpect{Exit: nonzero, StderrContains: "500"}}, clientRun(1, false, "", "agent: 500 Internal Server Error\n"),
			map[string]Status{"client.exit": Pass, "client.stderr": Pass}},
		{"zero expected, got 1", history.Expect{Client: &history.ClientExpect{Exit: zero, StdoutContains: "done"}}, clientRun(1, false, "", ""),
			map[string]Status{"client.exit": Fail, "client.stdout": Fail}},
		{"exact code", history.Expect{Client: &history.ClientExpect{Exit: three}}, clientRun(3, false, "", ""),
			map[string]Status{"client.exit": Pass}},
		{"killed is no exit code", history.Expect{Client: &history.ClientExpect{Exit: nonzero}}, clientRun(-1, true, "", ""),
			map[string]Status{"client.exit": Fail}},
		{"not a client", history.Expect{Client: &history.ClientExpect{Exit: zero}}, func(*history.History) {},
			map[string]Status{"client.exit": Unknown}},
		{"status on a client", history.Expect{Counts: history.Counts{Status: intp(500), DataChunks: history.Exactly(7)}}, clientRun(1, false, "", ""),
			map[string]Status{"status": Unknown, "data_chunks": Unknown}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			h := seedHistory(tt.mut)
			h.Expect = tt.expect
			got := map[string]Status{}
			for _, v := range Check(h) {
				got[v.Check] = v.Status
			}
			if diff := cmp.Diff(tt.want, got); diff != "" {
				t.Errorf("verdicts (-want +got):\n%s", diff)
			}
		})
	}
}

// TestErrorSurfacesClient judges a client's exit after a dispatched call's
// failed follow-up.
func TestErrorSurfacesClient(t *testing.T) {
	for _, tt := range []struct {
		name   string
		exit   int
		killed bool
		want   Status
	}{
		{"exit 1 is an explicit error", 1, false, Pass},
		{"exit 0 is an invented success", 0, false, Fail},
		{"killed is a hang", -1, true, Fail},
	} {
		t.Run(tt.name, func(t *testing.T) {
			h := seedHistory(func(h *history.History) {
				h.Requests[0].Client = &history.ClientRun{Exit: tt.exit, Killed: tt.killed}
				loop(h, 10, "injected_500", 500)
			})
			if v := errorSurfaces(h); v.Status != tt.want {
				t.Errorf("got %s (%s), want %s", v.Status, v.Observed, tt.want)
			}
		})
	}
}
