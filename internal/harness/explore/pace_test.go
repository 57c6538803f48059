package explore

import (
	"context"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/replaycheck/replaycheck/fakes/fault"
	"github.com/replaycheck/replaycheck/internal/harness/history"
	"github.com/replaycheck/replaycheck/internal/harness/rules"
)

// TestPaced: a base's slow tool and linger are ten of its clean runs,
// rounded to the millisecond, between a tenth of the default and the
// default, the slow tool at least twice the base's tool timeout; the
// dribble a tenth of the linger; asked-for durations are kept.
func TestPaced(t *testing.T) {
	def := fault.DefaultSettings
	clean := func(d time.Duration) *rules.Result {
		return &rules.Result{History: &history.History{Duration: history.Duration(d)}}
	}
	for _, tt := range []struct {
		name        string
		set         fault.Settings
		clean       *rules.Result
		toolTimeout time.Duration
		want        fault.Settings
	}{
		{"microseconds: a tenth of the default", fault.Settings{Stall: time.Second}, clean(300 * time.Microsecond), 0,
			fault.Settings{Stall: time.Second, Slow: def.Slow / 10, Linger: def.Linger / 10, Dribble: def.Dribble / 10}},
		{"milliseconds: ten clean runs", fault.Settings{}, clean(12345678 * time.Nanosecond), 0,
			fault.Settings{Slow: 123 * time.Millisecond, Linger: 123 * time.Millisecond, Dribble: 12 * time.Millisecond}},
		{"seconds: the default", fault.Settings{}, clean(3 * time.Second), 0,
			fault.Settings{Slow: def.Slow, Linger: def.Linger, Dribble: def.Dribble}},
		{"no clean run: the default", fault.Settings{}, nil, 0,
			fault.Settings{Slow: def.Slow, Linger: def.Linger, Dribble: def.Dribble}},
		{"a tool timeout: twice it", fault.Settings{}, clean(time.Millisecond), 300 * time.Millisecond,
			fault.Settings{Slow: 600 * time.Millisecond, Linger: def.Linger / 10, Dribble: def.Dribble / 10}},
		{"a long tool timeout: the default", fault.Settings{}, clean(time.Millisecond), 3 * time.Second,
			fault.Settings{Slow: def.Slow, Linger: def.Linger / 10, Dribble: def.Dribble / 10}},
		{"asked for", fault.Settings{Slow: 5 * time.Second, Linger: 2 * time.Second, Dribble: time.Millisecond}, clean(time.Millisecond), 0,
			fault.Settings{Slow: 5 * time.Second, Linger: 2 * time.Second, Dribble: time.Millisecond}},
	} {
		t.Run(tt.name, func(t *testing.T) {
			if got := paced(tt.set, tt.clean, tt.toolTimeout); got != tt.want {
				t.Errorf("paced = %+v, want %+v", got, tt.want)
			}
		})
	}
}

// TestStdioBaseLeavesTheModelToHTTPBases: beside a base over HTTP, the stdio
// base sweeps its tool calls and its process, not its model requests (the
// HTTP base sweeps those of the same target), and says so; each base's
// settings are paced within their bounds. Alone, the stdio base sweeps its
// model requests too (TestFingerprintOverStdio).
func TestStdioBaseLeavesTheModelToHTTPBases(t *testing.T) {
	tg := parseTarget(t, "builtin:guarded")
	kinds, err := SelectKinds([]string{"500", "stdio-exit-after"})
	if err != nil {
		t.Fatal(err)
	}
	rep, err := Explore(context.Background(), bases(t, tg, "chat stream tool call", "chat tool call over stdio"), Options{Target: tg, Kinds: kinds})
	if err != nil {
		t.Fatal(err)
	}
	kindsOn := map[string][]string{}
	for _, c := range rep.Cells {
		kindsOn[c.Base] = append(kindsOn[c.Base], c.Schedule[0].Kind)
	}
	for base, want := range map[string]string{"chat stream tool call": "500", "chat tool call over stdio": "stdio-exit-after"} {
		if len(kindsOn[base]) == 0 {
			t.Errorf("%s: no cell", base)
		}
		for _, k := range kindsOn[base] {
			if k != want {
				t.Errorf("%s: a %s cell, want only %s", base, k, want)
			}
		}
	}
	for _, b := range rep.Bases {
		stdio := b.Name == "chat tool call over stdio"
		if got := strings.Contains(b.Note, "model requests on the bases over HTTP"); got != stdio {
			t.Errorf("%s: note %q", b.Name, b.Note)
		}
		if l := b.Settings.Linger; l < fault.DefaultSettings.Linger/10 || l > fault.DefaultSettings.Linger {
			t.Errorf("%s: linger %s, want it paced within a tenth of the default and the default", b.Name, l)
		}
		if l := b.Settings.Slow; l < fault.DefaultSettings.Slow/10 || l > fault.DefaultSettings.Slow {
			t.Errorf("%s: slow %s, want it paced within a tenth of the default and the default", b.Name, l)
		}
	}
}

// TestFindingUsesItsBaseSettings: a written reproduction arms its fault with
// the durations its own base's cells used, not another base's nor the
// report's as asked (zero: scaled per base).
func TestFindingUsesItsBaseSettings(t *testing.T) {
	tg := parseTarget(t, "builtin:guarded")
	bs := bases(t, tg, "chat stream tool call", "chat with a tool timeout")
	slow := map[string]time.Duration{bs[0].Name: 222 * time.Millisecond, bs[1].Name: 666 * time.Millisecond}
	rep := &Report{Target: tg.Name(), Seed: "s"}
	for _, b := range bs {
		rep.Bases = append(rep.Bases, Base{Name: b.Name, Settings: fault.Settings{Slow: slow[b.Name], Linger: time.Millisecond, Dribble: time.Millisecond}})
		rep.Findings = append(rep.Findings, Finding{
			Mechanism: Mechanism{Rule: "cancel-propagates", Family: "delay", Step: "tools/call"},
			Base:      b.Name,
			Schedule:  Schedule{{Point: Point{Side: SideMCP, Tool: "commit_write", Nth: 1}, Kind: "mcp-slow", Times: fault.Once}},
			Failed:    []string{"cancel-propagates"}, Reproduced: 3, Tries: 3,
			base: b,
		})
	}
	dir := t.TempDir()
	if err := WriteFindings(dir, rep); err != nil {
		t.Fatal(err)
	}
	for _, f := range rep.Findings {
		raw, err := os.ReadFile(f.File)
		if err != nil {
			t.Fatal(err)
		}
		want := "delay: " + slow[f.Base].String()
		if !strings.Contains(string(raw), want) {
			t.Errorf("%s: written file has no %q:\n%s", f.Base, want, raw)
		}
	}
}
