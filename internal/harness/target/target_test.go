package target

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/replaycheck/replaycheck/fakes/fault"
	"github.com/replaycheck/replaycheck/fakes/gateway"
	"github.com/replaycheck/replaycheck/internal/harness/scenario"
)

func TestParseTarget(t *testing.T) {
	tests := []struct {
		in      string
		want    string
		wantErr bool
	}{
		{"builtin:guarded", "builtin:guarded", false},
		{"builtin:", "builtin:guarded", false},
		{"builtin:naive", "builtin:naive", false},
		{"builtin:stream-splice,fresh-key-per-attempt", "builtin:stream-splice,fresh-key-per-attempt", false},
		{"builtin:no-such-bug", "", true},
		{"proxy:http://x", "", true},
	}
	for _, tt := range tests {
		t.Run(tt.in, func(t *testing.T) {
			got, err := ParseTarget(tt.in)
			if (err != nil) != tt.wantErr {
				t.Fatalf("err = %v, wantErr %v", err, tt.wantErr)
			}
			if err == nil && got.Name() != tt.want {
				t.Errorf("Name = %q, want %q", got.Name(), tt.want)
			}
		})
	}
}

// TestParseBuiltinUnknown: an unknown builtin name is named with the modes
// guarded and naive, the bugs, and the closest valid spelling of the
// target; a mode does not combine with bugs.
func TestParseBuiltinUnknown(t *testing.T) {
	tests := []struct {
		in   string
		want []string // parts of the error
	}{
		{"builtin:naieve", []string{`unknown builtin target name "naieve" (did you mean builtin:naive?)`, "want guarded (the default: the fixed gateway), naive (every bug switched on), or gateway bugs", "of replay-after-dispatch, stream-splice,"}},
		{"builtin:Guarded", []string{`"Guarded" (did you mean builtin:guarded?)`}},
		{"builtin:replay-after-dispatch,stream-splce", []string{`"stream-splce" (did you mean builtin:replay-after-dispatch,stream-splice?)`}},
		{"builtin:naiv,stream-splice", []string{`unknown builtin target name "naiv": want guarded`}},
		{"builtin:xyz", []string{`unknown builtin target name "xyz": want guarded`}},
		{"builtin:guarded,stream-splice", []string{"builtin target guarded stands alone: guarded and naive are modes, not bugs to switch on with others"}},
	}
	for _, tt := range tests {
		t.Run(tt.in, func(t *testing.T) {
			_, err := ParseTarget(tt.in)
			if err == nil {
				t.Fatal("no error")
			}
			for _, w := range tt.want {
				if !strings.Contains(err.Error(), w) {
					t.Errorf("error %q lacks %q", err, w)
				}
			}
		})
	}
}

// TestBuiltinLimitsHaveTheGatewayDefaults: the builtin's setup says the
// timeouts its gateway runs with, its defaults as well as a scenario's
// knobs, so the starvation check weighs the harness's lateness against the
// timeout that decided a run (a default 10s tool timeout that expired
// while the harness starved was taken for the run's deadline).
func TestBuiltinLimitsHaveTheGatewayDefaults(t *testing.T) {
	tg, err := ParseTarget("builtin:guarded")
	if err != nil {
		t.Fatal(err)
	}
	fakes := Fakes{Upstream: "http://127.0.0.1:1", MCP: "http://127.0.0.1:1/mcp"}
	for _, tt := range []struct {
		knobs            *scenario.Gateway
		tool, streamIdle time.Duration
	}{
		{nil, gateway.DefaultToolTimeout, gateway.DefaultStreamIdleTimeout},
		{&scenario.Gateway{}, gateway.DefaultToolTimeout, gateway.DefaultStreamIdleTimeout},
		{&scenario.Gateway{ToolTimeout: fault.Duration(200 * time.Millisecond)}, 200 * time.Millisecond, gateway.DefaultStreamIdleTimeout},
		{&scenario.Gateway{StreamIdleTimeout: fault.Duration(time.Second)}, gateway.DefaultToolTimeout, time.Second},
	} {
		inst, err := tg.Start(context.Background(), fakes, tt.knobs)
		if err != nil {
			t.Fatal(err)
		}
		got := inst.Limits()
		inst.Close()
		if got.ToolTimeout.D() != tt.tool || got.StreamIdleTimeout.D() != tt.streamIdle {
			t.Errorf("knobs %+v: tool timeout %s, stream idle timeout %s; want %s, %s", tt.knobs, got.ToolTimeout.D(), got.StreamIdleTimeout.D(), tt.tool, tt.streamIdle)
		}
	}
}
