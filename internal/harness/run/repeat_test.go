package run

import (
	"fmt"
	"testing"

	"github.com/replaycheck/replaycheck/internal/harness/history"
	"github.com/replaycheck/replaycheck/internal/harness/rules"
	"github.com/replaycheck/replaycheck/internal/harness/scenario"
	"github.com/replaycheck/replaycheck/internal/harness/target"
)

// loadRepeated loads one scenario file of the suite and repeats it n times
// with allow failures allowed.
func loadRepeated(t *testing.T, file string, n, allow int) *scenario.Scenario {
	t.Helper()
	ss, err := scenario.Load(file)
	if err != nil || len(ss) != 1 {
		t.Fatalf("loading %s: %d scenarios, %v", file, len(ss), err)
	}
	ss[0].Repeat = &n
	ss[0].Expect.AllowFailures = allow
	return ss[0]
}

func parseTarget(t *testing.T, name string) target.Target {
	t.Helper()
	tg, err := target.ParseTarget(name)
	if err != nil {
		t.Fatal(err)
	}
	return tg
}

// TestRepeatOnGuarded runs a seed scenario 6 times on the guarded gateway,
// 3 at a time: 6 histories in run order, each with its place, a token of its
// own and one write, judged together as a pass.
func TestRepeatOnGuarded(t *testing.T) {
	s := loadRepeated(t, "../../../scenarios/seed/fault-on-chat.yaml", 6, 0)
	guarded := parseTarget(t, "builtin:guarded")
	hs, err := Run(ctxFor(t), []*scenario.Scenario{s}, Options{Targets: []target.Target{guarded}, Parallel: 3, Seed: "test"})
	if err != nil {
		t.Fatalf("Run: %v", err)
	}
	if len(hs) != 6 {
		t.Fatalf("%d histories, want 6", len(hs))
	}
	tokens := map[string]bool{}
	var results []rules.Result
	for i, h := range hs {
		if want := (history.Repetition{Index: i + 1, Of: 6}); h.Repetition == nil || *h.Repetition != want {
			t.Errorf("history %d: repetition %+v, want %+v", i, h.Repetition, want)
		}
		if tokens[h.Token] {
			t.Errorf("run %d reuses token %s", i+1, h.Token)
		}
		tokens[h.Token] = true
		if n := len(h.Writes()); n != 1 {
			t.Errorf("run %d: %d writes, want 1 (the runs' counts mixed?)", i+1, n)
		}
		results = append(results, rules.Evaluate(h))
	}
	got := rules.Combine(results)
	if len(got) != 1 || got[0].Verdict != rules.Pass || got[0].Repeat.Runs != 6 || got[0].Repeat.Passed != 6 {
		t.Fatalf("judged together: %d results, %s %+v", len(got), got[0].Verdict, got[0].Repeat)
	}
}

// TestRepeatMultiplier checks that Options.Repeat multiplies a scenario's
// runs and its allowed failures, and that without repeat a scenario runs
// once with the token it always had.
func TestRepeatMultiplier(t *testing.T) {
	guarded := parseTarget(t, "builtin:guarded")
	tests := []struct {
		name      string
		repeat    int // scenario's repeat; 0 for none
		allow     int
		mult      int
		wantRuns  int
		wantAllow int
	}{
		{name: "once", wantRuns: 1},
		{name: "once, multiplier 1", mult: 1, wantRuns: 1},
		{name: "multiplier alone", mult: 3, wantRuns: 3},
		{name: "repeat alone", repeat: 2, allow: 1, wantRuns: 2, wantAllow: 1},
		{name: "repeat times multiplier", repeat: 2, allow: 1, mult: 3, wantRuns: 6, wantAllow: 3},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			s := loadRepeated(t, "../../../scenarios/seed/no-fault-chat.yaml", tt.repeat, tt.allow)
			if tt.repeat == 0 {
				s.Repeat = nil
			}
			hs, err := Run(ctxFor(t), []*scenario.Scenario{s}, Options{Targets: []target.Target{guarded}, Repeat: tt.mult, Seed: "test"})
			if err != nil {
				t.Fatalf("Run: %v", err)
			}
			if len(hs) != tt.wantRuns {
				t.Fatalf("%d runs, want %d", len(hs), tt.wantRuns)
			}
			if tt.wantRuns == 1 {
				if hs[0].Repetition != nil || hs[0].Token != runToken("test", s, guarded, nil) {
					t.Errorf("a single run: repetition %+v, token %s", hs[0].Repetition, hs[0].Token)
				}
				return
			}
			for i, h := range hs {
				if want := (history.Repetition{Index: i + 1, Of: tt.wantRuns, AllowFailures: tt.wantAllow}); h.Repetition == nil || *h.Repetition != want {
					t.Errorf("run %d: repetition %+v, want %+v", i+1, h.Repetition, want)
				}
			}
		})
	}
}

// judgeRepeated runs s on tg and judges its runs together.
func judgeRepeated(t *testing.T, s *scenario.Scenario, tg target.Target) rules.Result {
	t.Helper()
	hs, err := Run(ctxFor(t), []*scenario.Scenario{s}, Options{Targets: []target.Target{tg}, Parallel: 4, Seed: "test"})
	if err != nil {
		t.Fatalf("Run: %v", err)
	}
	var results []rules.Result
	for _, h := range hs {
		results = append(results, rules.Evaluate(h))
	}
	got := rules.Combine(results)
	if len(got) != 1 || got[0].Repeat == nil {
		t.Fatalf("judged together: %d results", len(got))
	}
	return got[0]
}

// TestRepeatThresholdOnNaive runs the seed's fault_on case 4 times: every
// run writes 3 times on the naive gateway, so it fails with no failure
// allowed and with 3 of 4 allowed, and passes on the guarded gateway.
func TestRepeatThresholdOnNaive(t *testing.T) {
	tests := []struct {
		target string
		allow  int
		want   rules.Status
		failed int
	}{
		{"builtin:naive", 0, rules.Fail, 4},
		{"builtin:naive", 3, rules.Fail, 4},
		{"builtin:guarded", 0, rules.Pass, 0},
		{"builtin:guarded", 3, rules.Pass, 0},
	}
	for _, tt := range tests {
		t.Run(fmt.Sprintf("%s allows %d", tt.target, tt.allow), func(t *testing.T) {
			s := loadRepeated(t, "../../../scenarios/seed/fault-on-chat.yaml", 4, tt.allow)
			got := judgeRepeated(t, s, parseTarget(t, tt.target))
			if got.Verdict != tt.want || got.Repeat.Failed != tt.failed || got.Repeat.AllowFailures != tt.allow {
				t.Errorf("%s, %d of 4 failed (%d allowed); want %s, %d", got.Verdict, got.Repeat.Failed, got.Repeat.AllowFailures, tt.want, tt.failed)
			}
			if tt.failed > 0 && got.Counts.Writes != 3 {
				t.Errorf("the shown run has %d writes, want the failing run's 3", got.Counts.Writes)
			}
		})
	}
}

// flakyClient fails (exit 1) in the runs whose token ends in a digit: a
// client that fails in some runs only, and in the same runs every time,
// since tokens derive from the seed.
const flakyClient = `
kind: client
name: test:flaky
command: [sh, -c, 'case "$REPLAYCHECK_TOKEN" in *[0-9]) exit 1;; esac']
timeout: 5s
`

// TestRepeatThresholdFlakyClient checks the threshold on a target that
// fails some runs: with no failure allowed the scenario fails, with as many
// as failed it passes, with one fewer it fails.
func TestRepeatThresholdFlakyClient(t *testing.T) {
	flaky, _ := writeTarget(t, flakyClient, nil)
	ss, errs := scenario.Parse("flaky.yaml", []byte("name: flaky client\nrepeat: 12\nexpect: {client: {exit: 0}}\n"))
	if len(errs) > 0 {
		t.Fatal(errs)
	}
	s := ss[0]
	first := judgeRepeated(t, s, flaky)
	failed := first.Repeat.Failed
	if failed == 0 || failed == 12 {
		t.Fatalf("%d of 12 runs failed; the test needs a seed where some but not all do", failed)
	}
	for _, r := range first.Repeat.Results {
		last := r.History.Token[len(r.History.Token)-1]
		if wantFail := last >= '0' && last <= '9'; (r.Verdict == rules.Fail) != wantFail {
			t.Errorf("run %d (token %s): %s", r.History.Repetition.Index, r.History.Token, r.Verdict)
		}
	}
	tests := []struct {
		allow int
		want  rules.Status
	}{
		{0, rules.Fail},
		{failed - 1, rules.Fail},
		{failed, rules.Pass},
		{11, rules.Pass},
	}
	for _, tt := range tests {
		t.Run(fmt.Sprintf("allow %d of 12", tt.allow), func(t *testing.T) {
			s.Expect.AllowFailures = tt.allow
			got := judgeRepeated(t, s, flaky)
			if got.Verdict != tt.want || got.Repeat.Failed != failed {
				t.Errorf("%s with %d of 12 failed; want %s with %d", got.Verdict, got.Repeat.Failed, tt.want, failed)
			}
		})
	}
}
